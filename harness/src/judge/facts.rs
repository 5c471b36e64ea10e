//! The facts of one probe observation that the judge needs, independent of how the probe
//! records them.

use serde::{Deserialize, Serialize};

use crate::types::Fingerprint;

/// How a handshake attempt (or a plain HTTP request) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeClass {
    Certificate,
    /// A plain HTTP request got an answer (no TLS involved).
    Answered,
    Alert,
    Reset,
    Closed,
    Timeout,
    Refused,
    /// The probing machine failed (out of file descriptors or memory): no answer of the
    /// server's, so it meets no expectation, not even "nothing answers".
    LocalError,
}

impl OutcomeClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Certificate => "certificate",
            Self::Answered => "answered",
            Self::Alert => "alert",
            Self::Reset => "reset",
            Self::Closed => "closed",
            Self::Timeout => "timeout",
            Self::Refused => "refused",
            Self::LocalError => "local_error",
        }
    }
}

/// One observation, reduced to what expectations can speak of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeFact {
    pub outcome: OutcomeClass,
    /// The presented leaf's fingerprint, when a certificate was presented.
    pub leaf: Option<Fingerprint>,
    pub alert: Option<String>,
    /// The backend that named itself in the HTTP answer after the handshake, if any.
    pub served_by: Option<String>,
    /// HTTP status of that answer, if a request was sent and answered.
    pub http_status: Option<u16>,
}

impl ProbeFact {
    /// Reduces a probe observation. A failure without a class of its own is read as the CLI
    /// contract reads it: before a connection existed it is `refused`, after it `closed`.
    pub fn from_observation(o: &crate::observe::probe::Observation) -> ProbeFact {
        use crate::observe::probe::{Outcome, Stage};
        let (outcome, alert) = match &o.outcome {
            Outcome::Certificate(_) => (OutcomeClass::Certificate, None),
            Outcome::Alert { alert } => (OutcomeClass::Alert, Some(alert.clone())),
            Outcome::Reset => (OutcomeClass::Reset, None),
            Outcome::Closed => (OutcomeClass::Closed, None),
            Outcome::Timeout => (OutcomeClass::Timeout, None),
            Outcome::Refused => (OutcomeClass::Refused, None),
            Outcome::Failed { stage: Stage::Local, .. } => (OutcomeClass::LocalError, None),
            Outcome::Failed { stage: Stage::Setup | Stage::Connect, .. } => (OutcomeClass::Refused, None),
            Outcome::Failed { .. } => (OutcomeClass::Closed, None),
        };
        let answer = o.http_answer();
        ProbeFact {
            outcome,
            leaf: o.handshake().map(|h| h.leaf.sha256),
            alert,
            served_by: answer.and_then(|a| a.served_by.clone()),
            http_status: answer.map(|a| a.status),
        }
    }
}

impl ProbeFact {
    /// Reduces a plain HTTP observation, read the same way.
    pub fn from_plain(o: &crate::observe::probe::PlainObservation) -> ProbeFact {
        use crate::observe::probe::{PlainOutcome, Stage};
        let ended = |outcome| ProbeFact { outcome, leaf: None, alert: None, served_by: None, http_status: None };
        match &o.outcome {
            PlainOutcome::Answered(a) => ProbeFact {
                outcome: OutcomeClass::Answered,
                leaf: None,
                alert: None,
                served_by: a.served_by.clone(),
                http_status: Some(a.status),
            },
            PlainOutcome::Reset => ended(OutcomeClass::Reset),
            PlainOutcome::Closed => ended(OutcomeClass::Closed),
            PlainOutcome::Timeout => ended(OutcomeClass::Timeout),
            PlainOutcome::Refused => ended(OutcomeClass::Refused),
            PlainOutcome::Failed { stage: Stage::Local, .. } => ended(OutcomeClass::LocalError),
            PlainOutcome::Failed { stage: Stage::Setup | Stage::Connect, .. } => ended(OutcomeClass::Refused),
            PlainOutcome::Failed { .. } => ended(OutcomeClass::Closed),
        }
    }
}
