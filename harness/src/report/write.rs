//! Writing the report's files (`report.md`, `report.json`, `report.html`, `report.svg`) into
//! the output folder. All are rendered before the disk is touched; each is written to a
//! temporary file beside its destination, and only when every one is complete on disk are they
//! renamed into place, so a reader never sees a half-written report. Nothing is written over a
//! symbolic link, a FIFO, a device or another user's file, nor through a linked `--out` folder
//! (see [`crate::output::dest`]): each destination is looked at before anything is written.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::output::dest::{self, DestError};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("report: {action} {path}: {source}")]
    Io { action: &'static str, path: PathBuf, source: std::io::Error },
    #[error("report: {0}")]
    Dest(#[from] DestError),
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
    dest::ensure_dir(out)?;
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
    // Every destination is looked at before anything is written: a refusal leaves no file.
    for (name, _) in files {
        dest::check_file(&out.join(name))?;
    }
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
        // Dropping the path removes the staged file unless it was placed.
        let staged = tmp.into_temp_path();
        dest::place_file(&staged, &dest)?;
        let _ = staged.keep();
        written.push(dest);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::dest::testing;
    use std::os::unix::fs::FileTypeExt;

    fn rendered() -> Rendered {
        Rendered { markdown: "# r".into(), json: "{}".into(), html: "<p>".into(), svg: "<svg/>".into() }
    }

    /// `--junit PATH` over a symbolic link, a FIFO, a device node or another user's file is
    /// refused, and each is left as it was (rename(2) replaced every one of them before).
    #[test]
    fn junit_never_replaces_what_is_not_a_file_of_ours() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target.txt");
        std::fs::write(&target, "keep").unwrap();
        let link = tmp.path().join("link.xml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let fifo = tmp.path().join("fifo.xml");
        testing::fifo(&fifo);
        let device = testing::char_device(&tmp.path().join("device.xml"));
        let foreign = testing::foreign_file(&tmp.path().join("foreign.xml"));
        let mut cases = vec![(link.clone(), "a symbolic link"), (fifo.clone(), "a FIFO"), (device.clone(), "a character device")];
        cases.extend(foreign.clone().map(|f| (f, "a regular file of another user")));
        for (path, what) in &cases {
            let e = write_file(path, "<testsuites/>").expect_err("refused").to_string();
            assert!(e.contains(&format!("is {what}")), "{}: {e}", path.display());
        }
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(std::fs::symlink_metadata(&device).unwrap().file_type().is_char_device());
        if let Some(f) = foreign {
            assert_eq!(std::fs::read_to_string(f).unwrap(), "someone else's");
        }
        // No staged file is left beside them.
        let names: Vec<String> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
        // Nothing there, or a file of ours: written.
        let fresh = tmp.path().join("new.xml");
        write_file(&fresh, "one").unwrap();
        write_file(&fresh, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "two\n");
    }

    /// `--out DIR`: a symbolic link as DIR is refused, and so is a report file that is not a
    /// regular file; then nothing of the report is written.
    #[test]
    fn out_refuses_a_link_and_writes_nothing_beside_a_fifo() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("out");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = write_report(&link, &rendered()).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
        testing::fifo(&real.join("report.html"));
        let e = write_report(&real, &rendered()).unwrap_err().to_string();
        assert!(e.contains("report.html is a FIFO"), "{e}");
        let left: Vec<String> = std::fs::read_dir(&real).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        assert_eq!(left, ["report.html"], "all or nothing");
    }
}
