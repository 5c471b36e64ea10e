//! layout-gate: an end-to-end conformance harness for Gateway API listener layouts on Cilium.
//!
//! The pipeline runs one way, and each stage is a module:
//!
//! ```text
//! case -> render -> deploy (a lane) -> observe -> judge -> evidence
//! ```
//!
//! * [`input`]: the one bounded, non-blocking reader of files handed to layout-gate.
//! * [`case`]: reads and checks `cases/<name>/case.yaml` and its manifests.
//! * [`render`]: makes the run's certificates and fills in templates.
//! * [`backends`]: in-process TLS and plain HTTP servers that name themselves.
//! * [`envoy`]: a real local Envoy process (binary discovery, start, admin, LDS pushes).
//! * [`observe`]: the probe (real TLS handshakes), config-dump summaries, convergence.
//! * [`judge`]: pure functions from expectations and observations to verdicts.
//! * [`run`]: the lane-independent half of running a case (probe, judge, assemble).
//! * [`evidence`]: `evidence.json`, `summary.md`, `junit.xml`, written atomically.
//! * [`check`]: rendered manifests in, the model's prediction per version out (no case needed).
//! * [`live`]: `check --live`: a user's cluster read (read-only) as `check`'s input.
//! * [`report`]: many runs merged into one release-note report (Markdown and JSON).
//! * [`words`]: the words `check` and `report` both print for the same facts.
//! * [`scratch`]: the temporary folders the tool makes, removed on exit or by the next run.

pub mod backends;
#[cfg(test)]
mod build_watch;
pub mod case;
pub mod check;
pub mod child;
pub mod cli;
pub mod conformance;
pub mod differential;
pub mod envoy;
pub mod evidence;
#[cfg(test)]
pub(crate) mod golden;
pub mod input;
pub mod judge;
pub mod lanes;
pub mod live;
pub mod markdown;
pub mod netns;
pub mod observe;
pub mod output;
pub mod progress;
pub mod render;
pub mod report;
pub mod run;
pub mod scratch;
pub mod status_writer;
pub mod table;
pub mod term;
#[cfg(test)]
mod tests;
pub mod types;
pub mod versions;
pub mod words;
