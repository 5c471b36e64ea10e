//! Writing the report's files (`report.md`, `report.json`, `report.html`, `report.svg`) into
//! the output folder. All are rendered before the disk is touched; each is written to a
//! temporary file beside its destination, and only when every one is complete on disk are they
//! renamed into place, so a reader never sees a half-written report.

use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("report: {action} {path}: {source}")]
    Io { action: &'static str, path: PathBuf, source: std::io::Error },
}

/// The report's files, rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub markdown: String,
    pub json: String,
    pub html: String,
    pub svg: String,
}

impl Rendered {
    /// (file name, contents), in the order they are listed.
    pub fn files(&self) -> [(&'static str, &str); 4] {
        [("report.md", &self.markdown), ("report.json", &self.json), ("report.html", &self.html), ("report.svg", &self.svg)]
    }
}

/// Writes every file into `out` (created if needed) and returns their paths.
pub fn write_report(out: &Path, rendered: &Rendered) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(out).map_err(io("creating", out))?;
    let files: Vec<(String, &str)> = rendered.files().iter().map(|(n, b)| (n.to_string(), *b)).collect();
    write_files(out, &files)
}

/// Writes one file atomically (a temporary file beside it, renamed into place).
pub fn write_file(dest: &Path, body: &str) -> Result<PathBuf, ReportError> {
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(io("creating", &dir))?;
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "report".into());
    let written = write_files(&dir, &[(name, body)])?;
    Ok(written.into_iter().next().unwrap_or_else(|| dest.to_path_buf()))
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + use<> {
    let path = path.to_path_buf();
    move |source| ReportError::Io { action, path, source }
}

fn write_files(out: &Path, files: &[(String, &str)]) -> Result<Vec<PathBuf>, ReportError> {
    let mut staged = Vec::new();
    for (name, body) in files {
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
    // Every file is complete on disk before any replaces an older report.
    let mut written = Vec::new();
    for (tmp, dest) in staged {
        // A tempfile is 0600; a report is meant to be read and uploaded.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
                .map_err(io("setting permissions on", tmp.path()))?;
        }
        tmp.persist(&dest).map_err(|e| ReportError::Io { action: "renaming into place", path: dest.clone(), source: e.error })?;
        written.push(dest);
    }
    Ok(written)
}
