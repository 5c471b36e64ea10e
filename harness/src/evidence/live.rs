//! `check --live --evidence-dir DIR`: one reading of a platform's own cluster kept as
//! `DIR/<run id>/live.json`, `lane: live`, with the cluster's context, name and API server
//! digest, what was read, where the cluster and the prediction disagree, and `check`'s own JSON.
//!
//! It is not run evidence (`evidence.json`): it holds no case, no expectation and no verdict a
//! reader can re-judge from raw observations, and what answered is a cluster nobody here
//! controls. So `report` never merges it into a matrix, least of all as the kind lane's gate
//! evidence: it names such a folder, says what it holds ([`describe`]) and leaves it out.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::EvidenceError;

/// The file a live reading is kept in.
pub const FILE: &str = "live.json";
/// The lane a live reading names.
pub const LANE: &str = "live";
/// Bumped whenever a reader of an older `live.json` would misread a newer one.
pub const SCHEMA_VERSION: u32 = 1;

/// Writes `doc`, sealed with the digest of its content (see [`super::digest`]), as
/// `root/<run_id>/live.json`; the run folder appears whole or not at all (staged in a hidden
/// folder beside it and renamed into place where nothing is, as [`super::write_run`] does).
pub fn write(root: &Path, run_id: &str, doc: &Value) -> Result<PathBuf, EvidenceError> {
    let mut doc = doc.clone();
    super::digest::seal(&mut doc);
    let mut text = serde_json::to_string_pretty(&doc)?;
    text.push('\n');
    super::write::write_folder(root, run_id, &[(FILE, &text)])
}

/// One line saying what a `live.json` holds, for `report`: the cluster, the running version,
/// how many disagreements, and whether its seal holds. `None` when it is not a live reading.
pub fn describe(text: &str) -> Option<String> {
    let doc: Value = serde_json::from_str(text).ok()?;
    if doc.get("lane").and_then(Value::as_str) != Some(LANE) {
        return None;
    }
    let s = |p: &str| doc.pointer(p).and_then(Value::as_str).unwrap_or("?").to_string();
    let disagreements = doc.get("disagreements").and_then(Value::as_array).map_or(0, Vec::len);
    let seal = match super::check_digest(&doc) {
        super::DigestCheck::Matches => "its digest holds",
        super::DigestCheck::Missing => "it carries no digest",
        super::DigestCheck::Differs { .. } => "it was changed after it was written (its digest does not hold)",
    };
    Some(format!(
        "context {} (cluster {}, API server {}) running Cilium {}, read at {}: {disagreements} disagreement(s) with the prediction; {seal}",
        s("/context"),
        s("/cluster"),
        s("/server_digest"),
        s("/running/version"),
        s("/finished_at"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn doc() -> Value {
        serde_json::json!({"schema_version": SCHEMA_VERSION, "lane": LANE, "context": "prod", "cluster": "c",
            "server_digest": "sha256:ab", "running": {"version": "1.19.6"}, "finished_at": "t",
            "disagreements": [{"field": "status.conditions[Accepted]"}]})
    }

    #[test]
    fn a_reading_is_written_whole_sealed_and_never_over_another() {
        let root = tempfile::tempdir().unwrap();
        let at = write(root.path(), "20261204T000000.000Z-live-1.19.6-abcdef", &doc()).unwrap();
        let text = fs::read_to_string(at.join(FILE)).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(super::super::check_digest(&back), super::super::DigestCheck::Matches);
        // Nothing staged is left beside it.
        let names: Vec<String> = fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        assert_eq!(names, ["20261204T000000.000Z-live-1.19.6-abcdef"]);
        let again = write(root.path(), "20261204T000000.000Z-live-1.19.6-abcdef", &doc()).unwrap_err();
        assert!(matches!(again, EvidenceError::Exists(_)), "{again}");
        let d = describe(&text).unwrap();
        assert!(d.contains("context prod (cluster c, API server sha256:ab) running Cilium 1.19.6"), "{d}");
        assert!(d.contains("1 disagreement(s)") && d.ends_with("its digest holds"), "{d}");
    }

    #[test]
    fn an_edited_reading_is_said_and_run_evidence_is_not_a_reading() {
        let mut d = doc();
        super::super::digest::seal(&mut d);
        d["running"]["version"] = "1.19.5".into();
        assert!(describe(&d.to_string()).unwrap().contains("changed after it was written"));
        assert_eq!(describe(r#"{"lane":"kind"}"#), None);
        assert_eq!(describe("not json"), None);
    }
}
