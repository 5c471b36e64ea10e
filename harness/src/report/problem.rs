//! What can be wrong with the input of a report. Every problem names the file (or the case and
//! column) it is about; none is merged away.

use std::fmt;

use serde::Serialize;

/// One thing the report could not take at face value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Problem {
    /// An argument that is not a folder (or does not exist).
    NotAFolder { path: String, error: String },
    /// A folder that holds neither `evidence.json` nor run folders with one.
    NoEvidence { path: String },
    /// A run folder (it has other run files, or sits among run folders) without `evidence.json`.
    MissingEvidence { path: String },
    /// A hidden temporary folder left by an evidence write that never finished.
    UnfinishedWrite { path: String },
    /// `evidence.json` could not be read from disk.
    Unreadable { path: String, error: String },
    /// `evidence.json` ends before the document does (an interrupted write or upload).
    Truncated { path: String, line: usize, column: usize },
    /// `evidence.json` is JSON of the wrong shape, or not JSON.
    Invalid { path: String, field: String, message: String },
    /// `schema_version` is not one this build reads.
    UnknownSchema { path: String, found: Option<u64>, supported: u32 },
    /// Two runs of the same case on the same lane and version that do not agree.
    Disagreement { case: String, column: String, runs: Vec<String>, differences: Vec<String> },
    /// The run did not reach its lane (or not every selected case): no result for those cases.
    NotRun { path: String, run_id: String, reason: String, cases: Vec<String>, nothing_ran: bool },
    /// `evidence.json` carries no digest of its own content.
    NoDigest { path: String },
    /// `evidence.json` changed after it was written: its content no longer has its digest.
    DigestMismatch { path: String, recorded: String, computed: String },
    /// What the file claims does not follow from its own observations and expectations; the
    /// report shows the re-judged verdicts instead.
    Rejudged { path: String, case: Option<String>, differences: Vec<String> },
    /// One run id in several folders whose contents differ: none of them is shown.
    DuplicateRun { run_id: String, paths: Vec<String> },
    /// A case file differs from the one the run judged (with `--cases`).
    CaseChanged { path: String, case: String, differences: Vec<String> },
    /// The file contradicts itself or its lane (a relabelled, edited or pruned run): what it
    /// says cannot all be true, so none of the run is in the report.
    Inconsistent { path: String, case: Option<String>, differences: Vec<String> },
    /// With `--cases`: the case files are the ones the run judged, yet the expectations the
    /// run stored are not what they give at its version (edited to match the observation).
    ExpectationsDiffer { path: String, case: String, version: String, differences: Vec<String> },
    /// `kind-config/versions.yaml` could not be read, so no run's version could be checked.
    NoPins { error: String },
    /// A `check --live` reading (`live.json`, `lane: live`): a platform's own cluster, not run
    /// evidence; said with what it holds and left out, never merged as any lane's result.
    LiveReading { path: String, what: String },
}

impl Problem {
    /// The file, folder or (case, column) the problem is about, for the first column of a table.
    pub fn place(&self) -> String {
        match self {
            Problem::NotAFolder { path, .. }
            | Problem::NoEvidence { path }
            | Problem::MissingEvidence { path }
            | Problem::UnfinishedWrite { path }
            | Problem::Unreadable { path, .. }
            | Problem::Truncated { path, .. }
            | Problem::Invalid { path, .. }
            | Problem::UnknownSchema { path, .. }
            | Problem::NotRun { path, .. }
            | Problem::NoDigest { path }
            | Problem::DigestMismatch { path, .. }
            | Problem::LiveReading { path, .. }
            | Problem::Rejudged { path, case: None, .. }
            | Problem::Inconsistent { path, case: None, .. } => path.clone(),
            Problem::Rejudged { path, case: Some(c), .. }
            | Problem::Inconsistent { path, case: Some(c), .. }
            | Problem::CaseChanged { path, case: c, .. }
            | Problem::ExpectationsDiffer { path, case: c, .. } => format!("{path} ({c})"),
            Problem::NoPins { .. } => "kind-config/versions.yaml".into(),
            Problem::Disagreement { case, column, .. } => format!("{case} on {column}"),
            Problem::DuplicateRun { run_id, .. } => format!("run {run_id}"),
        }
    }

    /// What is wrong, in one sentence (plus the differences of a disagreement).
    pub fn message(&self) -> String {
        match self {
            Problem::NotAFolder { error, .. } => format!("not a readable folder: {error}"),
            Problem::NoEvidence { .. } => "no evidence here: neither an evidence.json nor run folders holding one".into(),
            Problem::MissingEvidence { .. } => {
                "run folder without evidence.json (missing or never written); its results are not in this report".into()
            }
            Problem::UnfinishedWrite { .. } => {
                "an evidence write that never finished (hidden temporary folder); the run is not in this report".into()
            }
            Problem::Unreadable { error, .. } => format!("evidence.json cannot be read: {error}"),
            Problem::Truncated { line, column, .. } => {
                format!(
                    "evidence.json is truncated: the JSON ends at line {line}, column {column} before the document does; the run is not in this report"
                )
            }
            Problem::Invalid { field, message, .. } => format!("evidence.json is not valid evidence: {field}: {message}"),
            Problem::UnknownSchema { found: Some(v), supported, .. } => {
                format!(
                    "evidence.json has schema_version {v}; this layout-gate reads schema_version {supported} only, so the run is not in this report"
                )
            }
            Problem::UnknownSchema { found: None, supported, .. } => {
                format!(
                    "evidence.json has no numeric schema_version; this layout-gate reads schema_version {supported} only, so the run is not in this report"
                )
            }
            Problem::NotRun { run_id, reason, cases, nothing_ran: true, .. } => {
                let which = if cases.is_empty() { String::new() } else { format!(" (cases: {})", cases.join(", ")) };
                format!("run {run_id} did not run: {reason}; it has no result{which}")
            }
            Problem::NotRun { run_id, reason, cases, .. } => {
                format!("run {run_id}: {} case(s) not run ({}): {reason}; they have no result", cases.len(), cases.join(", "))
            }
            Problem::NoDigest { .. } => "evidence.json has no digest of its content, so changes to it cannot be told".into(),
            Problem::DigestMismatch { recorded, computed, .. } => {
                format!("evidence.json was changed after it was written: it records digest {recorded}, its content has {computed}")
            }
            Problem::Rejudged { differences, .. } => format!(
                "the file's claims do not follow from its own observations; the report shows the re-judged verdicts: {}",
                differences.join("; ")
            ),
            Problem::DuplicateRun { paths, .. } => format!(
                "the same run id in {} folders with different contents ({}); none of them is in this report",
                paths.len(),
                paths.join(", ")
            ),
            Problem::CaseChanged { differences, .. } => {
                format!("the case files differ from the ones this run judged: {}", differences.join("; "))
            }
            Problem::Inconsistent { differences, .. } => format!(
                "the file contradicts itself, as a relabelled, edited or pruned run would; none of the run is in this report: {}",
                differences.join("; ")
            ),
            Problem::ExpectationsDiffer { version, differences, .. } => format!(
                "the case files are the ones this run judged, but the expectations the run stored are not what they give at Cilium {version}: they were edited after the run ({}); none of the run is in this report",
                differences.join("; ")
            ),
            Problem::LiveReading { what, .. } => format!(
                "a check --live reading of a cluster (lane: live), not run evidence: {what}; it has no case or verdict to re-judge and is never gate evidence, so it is not in this report (its `check` block is `check --format json`'s)"
            ),
            Problem::NoPins { error } => {
                format!("the pinned versions cannot be read ({error}), so no run's Cilium version could be checked against them")
            }
            Problem::Disagreement { runs, differences, .. } => format!(
                "{} runs disagree, so neither is shown in the matrix (runs: {}): {}",
                runs.len(),
                runs.join(", "),
                differences.join("; ")
            ),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place(), self.message())
    }
}
