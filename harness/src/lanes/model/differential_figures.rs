//! How many generated layouts the model and Cilium's own operator agreed on, per version: the
//! figures `layout-gate differential --record-figures` writes into `differential_figures.json`
//! beside this file (committed, compiled in), so `check` can say them without running anything.
//! Nothing here is computed: a version without a recorded run says so.

use serde::{Deserialize, Serialize};

use crate::case::CiliumVersion;

/// The committed file, as compiled in.
pub const TEXT: &str = include_str!("differential_figures.json");

/// The file's path in the repository (for the command that rewrites it).
pub const PATH: &str = "harness/src/lanes/model/differential_figures.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    pub schema: String,
    pub note: String,
    pub versions: Vec<VersionFigure>,
}

/// One version's last run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionFigure {
    pub version: String,
    pub seed: u64,
    /// Layouts generated.
    pub count: usize,
    /// Layouts on which the two agreed in every field class.
    pub agreed: usize,
    /// The operator module the run used (`github.com/cilium/cilium vX h1:...`).
    pub operator: String,
    /// The date of the run (UTC, YYYY-MM-DD).
    pub date: String,
}

/// The compiled-in figures (none if the file does not read: a build-time fact, tested).
pub fn figures() -> Figures {
    parse(TEXT).unwrap_or_else(|_| Figures { schema: String::new(), note: String::new(), versions: Vec::new() })
}

pub fn parse(text: &str) -> Result<Figures, String> {
    serde_json::from_str(text).map_err(|e| format!("{PATH}: line {}: {e}", e.line()))
}

/// `N of M generated layouts agreed (differential --seed S, DATE)`, or that none was recorded.
pub fn line(v: &CiliumVersion) -> String {
    match figures().versions.iter().find(|f| f.version == v.to_string()) {
        Some(f) => format!(
            "{} of {} generated layouts agreed with the operator (layout-gate differential --seed {} --count {}, {})",
            f.agreed, f.count, f.seed, f.count, f.date
        ),
        None => "no generated layouts recorded against the operator at this version (layout-gate differential)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_figures_read() {
        let f = parse(TEXT).unwrap();
        assert_eq!(f.schema, "layout-gate-differential-figures");
        for v in &f.versions {
            CiliumVersion::parse(&v.version).unwrap();
            assert!(v.agreed <= v.count, "{v:?}");
        }
    }

    #[test]
    fn a_recorded_version_is_said_with_its_figure_and_another_is_not() {
        let f = parse(
            r#"{"schema":"layout-gate-differential-figures","note":"","versions":[{"version":"1.19.6","seed":1,"count":200,"agreed":198,"operator":"m","date":"2026-12-02"}]}"#,
        )
        .unwrap();
        assert_eq!(f.versions[0].agreed, 198);
        assert!(line(&CiliumVersion::parse("9.9.9").unwrap()).contains("no generated layouts recorded"));
    }
}
