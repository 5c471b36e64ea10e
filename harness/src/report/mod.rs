//! `layout-gate report`: many runs (versions, lanes, shards) merged into one Markdown document
//! for release notes, one HTML page and one SVG picture for people, and one JSON document for
//! machines.
//!
//! ```text
//! run folders -> load (I/O) -> merge (matrix + disagreements) -> diff, confirm
//!             -> glance (one status per cell) -> markdown, html, svg, json -> write (I/O)
//! ```
//!
//! Everything between load and write is a pure function of the evidence, so the report is
//! tested on evidence files alone, with golden outputs.

pub mod column;
pub mod confirm;
pub mod diff;
pub mod facts;
pub mod glance;
pub mod html;
pub mod json;
pub mod load;
pub mod markdown;
pub mod merge;
pub mod pins;
pub mod problem;
pub mod svg;
pub mod write;

#[cfg(test)]
pub(crate) mod tests;

pub use column::Column;
pub use load::{Loaded, LoadedRun, load_all};
pub use problem::Problem;
pub use write::{Rendered, ReportError, write_report};

use crate::evidence::Lane;
use confirm::{NewFact, ToConfirm};
use diff::{Change, Divergence};
use merge::Matrix;

/// Bumped whenever a reader of an older report.json would misread a newer one.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// Everything the report says, before it is rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub matrix: Matrix,
    pub changes: Vec<Change>,
    pub divergences: Vec<Divergence>,
    pub to_confirm: Vec<ToConfirm>,
    pub new_facts: Vec<NewFact>,
    /// Facts both the model and a kind run have, where kind observed something.
    pub compared_facts: usize,
    /// Where the model and Cilium's own operator (the operator lane) differ, and how many facts
    /// they both have.
    pub operator_divergences: Vec<Divergence>,
    pub operator_compared_facts: usize,
    /// Inferred expectations a kind run observed.
    pub confirmed: usize,
    /// Load problems first (in argument order), then disagreements (by case and column).
    pub problems: Vec<Problem>,
}

impl Report {
    /// Builds the report from what was loaded: a pure function.
    pub fn build(loaded: Loaded) -> Report {
        let (mut matrix, disagreements) = merge::merge(&loaded.runs);
        matrix.left_out = loaded.left_out;
        let mut problems = loaded.problems;
        problems.extend(disagreements);
        Report {
            changes: diff::changes(&matrix),
            divergences: diff::model_against_observation(&matrix),
            to_confirm: confirm::to_confirm(&matrix),
            new_facts: confirm::new_facts(&matrix),
            compared_facts: diff::compared_facts(&matrix),
            operator_divergences: diff::model_against(&matrix, Lane::Operator),
            operator_compared_facts: diff::compared_facts_with(&matrix, Lane::Operator),
            confirmed: confirm::confirmed(&matrix),
            matrix,
            problems,
        }
    }

    pub fn markdown(&self) -> String {
        markdown::render(self)
    }

    pub fn json(&self) -> String {
        json::render(self)
    }

    pub fn html(&self) -> String {
        html::render(self)
    }

    pub fn svg(&self) -> String {
        svg::render(self)
    }

    /// Every file of the report, rendered.
    pub fn rendered(&self) -> Rendered {
        Rendered { markdown: self.markdown(), json: self.json(), html: self.html(), svg: self.svg() }
    }
}
