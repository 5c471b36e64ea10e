//! The facts of one probe observation that the judge needs, independent of how the probe
//! records them.

use serde::{Deserialize, Serialize};

use crate::types::Fingerprint;

/// How a handshake attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeClass {
    Certificate,
    Alert,
    Reset,
    Closed,
    Timeout,
    Refused,
}

impl OutcomeClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Certificate => "certificate",
            Self::Alert => "alert",
            Self::Reset => "reset",
            Self::Closed => "closed",
            Self::Timeout => "timeout",
            Self::Refused => "refused",
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
