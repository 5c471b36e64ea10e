//! Atomic writing of a run's evidence folder.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Evidence, render_junit, render_summary};

#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error("evidence: {action} {path}: {source}")]
    Io { action: &'static str, path: PathBuf, source: std::io::Error },
    #[error("evidence: serializing evidence.json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("evidence: {0} already exists; refusing to overwrite a recorded run")]
    Exists(PathBuf),
    #[error("evidence: {0}")]
    Dest(#[from] crate::output::dest::DestError),
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> EvidenceError + use<> {
    let path = path.to_path_buf();
    move |source| EvidenceError::Io { action, path, source }
}

/// Writes `evidence.json`, `summary.md` and `junit.xml` for a run into `root/<run_id>/`,
/// returning that folder. Nothing appears at the destination unless all three were written;
/// `root` is a folder, not a symbolic link to one, and the run folder lands only where
/// nothing is (see [`crate::output::dest`]).
pub fn write_run(root: &Path, evidence: &Evidence) -> Result<PathBuf, EvidenceError> {
    let dest = root.join(&evidence.run_id);
    // Render everything before touching the disk: a serialization failure leaves nothing.
    // Sealed with the digest of its own content, so a later edit shows (see `digest`).
    let mut doc = serde_json::to_value(evidence)?;
    super::digest::seal(&mut doc);
    let json = serde_json::to_string_pretty(&doc)?;
    let summary = render_summary(evidence);
    let junit = render_junit(evidence, &dest);
    write_folder(root, &evidence.run_id, &[("evidence.json", &json), ("summary.md", &summary), ("junit.xml", &junit)])
}

/// Writes `files` (name, text; each ending in a newline) into `root/<run_id>/`, returning that
/// folder: all of them or nothing, only where nothing is. The one way evidence of any kind
/// (a run's, a live reading's) reaches the disk.
pub(super) fn write_folder(root: &Path, run_id: &str, files: &[(&str, &str)]) -> Result<PathBuf, EvidenceError> {
    use crate::output::dest::{self, Found};
    dest::ensure_dir(root)?;
    let dest = root.join(run_id);
    if Found::at(&dest).map_err(io("looking at", &dest))? != Found::Nothing {
        return Err(EvidenceError::Exists(dest));
    }
    // Hidden, so a reader never takes it for a run; swept by a later write here if this
    // process is killed before it is renamed into place.
    let tmp =
        crate::scratch::Scratch::new_in(root, crate::scratch::EVIDENCE, run_id).map_err(io("creating a temporary folder in", root))?;
    for (name, body) in files {
        let path = tmp.path().join(name);
        let mut f = fs::File::create(&path).map_err(io("creating", &path))?;
        f.write_all(body.as_bytes()).map_err(io("writing", &path))?;
        if !body.ends_with('\n') {
            f.write_all(b"\n").map_err(io("writing", &path))?;
        }
        f.sync_all().map_err(io("syncing", &path))?;
    }
    // tempdir is 0700; evidence holds no secrets (never a key) and is meant to be read and
    // uploaded.
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).map_err(io("setting permissions on", tmp.path()))?;
    }
    let tmp_path = tmp.keep();
    if let Err(e) = dest::place_new_dir(&tmp_path, &dest) {
        let _ = fs::remove_dir_all(&tmp_path);
        return Err(match e {
            dest::DestError::Refused { found: Found::Directory, .. } => EvidenceError::Exists(dest),
            e => e.into(),
        });
    }
    Ok(dest)
}
