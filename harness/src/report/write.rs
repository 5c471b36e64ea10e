//! Writing `report.md` and `report.json` into the output folder. Both are rendered before the
//! disk is touched, each is written to a temporary file beside its destination and renamed into
//! place, so a reader never sees a half-written report.

use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("report: {action} {path}: {source}")]
    Io { action: &'static str, path: PathBuf, source: std::io::Error },
}

/// Writes both files into `out` (created if needed) and returns their paths.
pub fn write_report(out: &Path, markdown: &str, json: &str) -> Result<[PathBuf; 2], ReportError> {
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io { action, path, source }
    };
    std::fs::create_dir_all(out).map_err(io("creating", out))?;
    let mut staged = Vec::new();
    for (name, body) in [("report.md", markdown), ("report.json", json)] {
        let dest = out.join(name);
        let mut tmp =
            tempfile::Builder::new().prefix(&format!(".{name}.")).tempfile_in(out).map_err(io("creating a temporary file in", out))?;
        tmp.write_all(body.as_bytes()).map_err(io("writing", tmp.path()))?;
        if !body.ends_with('\n') {
            tmp.write_all(b"\n").map_err(io("writing", tmp.path()))?;
        }
        tmp.as_file().sync_all().map_err(io("syncing", tmp.path()))?;
        staged.push((tmp, dest));
    }
    // Both are complete on disk before either replaces an older report.
    for (tmp, dest) in staged {
        // A tempfile is 0600; a report is meant to be read and uploaded.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
                .map_err(io("setting permissions on", tmp.path()))?;
        }
        tmp.persist(&dest).map_err(|e| ReportError::Io { action: "renaming into place", path: dest, source: e.error })?;
    }
    Ok([out.join("report.md"), out.join("report.json")])
}
