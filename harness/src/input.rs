//! The one way layout-gate reads a file it was handed (case files, manifests, config dumps):
//! regular files only, never blocking, never more than a stated limit, and, for files a case
//! names, never outside the case folder once symlinks are resolved.
//!
//! Why each rule: a manifest that is a symlink to `/dev/zero` would otherwise be read until the
//! machine runs out of memory; a FIFO would block `open` forever waiting for a writer; a symlink
//! can leave the case folder even when the name itself holds no `..`.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A size limit, with the name of the setting that changes it (if any) for the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    /// How a user raises it, e.g. `LAYOUT_GATE_MAX_DUMP_BYTES`; `None` when it is fixed.
    pub knob: Option<&'static str>,
}

/// `case.yaml`: hand-written, a few KiB in practice.
pub const CASE_FILE: Limit = Limit { bytes: 1 << 20, knob: None };
/// One manifest file: hand-written Kubernetes objects.
pub const MANIFEST: Limit = Limit { bytes: 8 << 20, knob: None };
/// A Markdown document of the repository a case cites (`docs/...`): read for its headings.
pub const DOCUMENT: Limit = Limit { bytes: 4 << 20, knob: None };
/// One `evidence.json`: a kind run keeps every watched object version and both Envoy views, so
/// it can be large, but never endless.
pub const EVIDENCE: Limit = Limit { bytes: 1 << 30, knob: None };
/// The environment variable that overrides [`dump_limit`].
pub const DUMP_LIMIT_ENV: &str = "LAYOUT_GATE_MAX_DUMP_BYTES";
/// A config dump: Envoy's `/config_dump` of a large Cilium node runs to tens of MiB; 2 GiB
/// leaves room for any real one while still refusing an endless stream.
pub const DUMP_DEFAULT_BYTES: u64 = 2 << 30;

/// A kubeconfig (`check --live`'s, a cluster lane's): a real one is a few KiB.
pub const KUBECONFIG: Limit = Limit { bytes: 4 << 20, knob: None };

/// The dump limit: `LAYOUT_GATE_MAX_DUMP_BYTES` if set to a number of bytes, else 2 GiB.
pub fn dump_limit() -> Result<Limit, String> {
    limit_from_env(DUMP_LIMIT_ENV, DUMP_DEFAULT_BYTES)
}

/// A limit a user can raise: the environment variable `knob` if set (a positive number of
/// bytes), else `default`; a value that is not one is an error naming the variable.
pub fn limit_from_env(knob: &'static str, default: u64) -> Result<Limit, String> {
    limit_from(knob, std::env::var(knob).ok().as_deref(), default)
}

fn limit_from(knob: &'static str, value: Option<&str>, default: u64) -> Result<Limit, String> {
    let bytes = match value {
        None => default,
        Some(v) => {
            v.trim().parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| format!("{knob}={v:?} is not a positive number of bytes"))?
        }
    };
    Ok(Limit { bytes, knob: Some(knob) })
}

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    /// Not a regular file (a FIFO, a device, a socket, a directory).
    NotRegular {
        path: PathBuf,
        kind: &'static str,
    },
    /// Larger than the limit.
    TooLarge {
        path: PathBuf,
        limit: Limit,
    },
    /// Resolves (after symlinks) to a place outside the folder it must stay in.
    Outside {
        path: PathBuf,
        resolved: PathBuf,
        root: PathBuf,
        /// What `root` is to the reader: "the case folder", "the repository".
        place: &'static str,
    },
    /// Not UTF-8 text where text is required.
    NotText {
        path: PathBuf,
    },
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ReadError {
    pub fn path(&self) -> &Path {
        match self {
            ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Outside { path, .. }
            | ReadError::NotText { path }
            | ReadError::Io { path, .. } => path,
        }
    }

    /// The reason without the path (for callers that print the path themselves).
    pub fn reason(&self) -> String {
        match self {
            ReadError::NotRegular { kind, .. } => format!("a {kind}, not a regular file"),
            ReadError::TooLarge { limit, .. } => {
                let knob = limit.knob.map(|k| format!("; set {k} to raise it")).unwrap_or_default();
                format!("larger than the limit of {} bytes ({}){knob}", limit.bytes, human(limit.bytes))
            }
            ReadError::Outside { resolved, root, place, .. } => {
                format!("resolves to {}, outside {place} {}", resolved.display(), root.display())
            }
            ReadError::NotText { .. } => "not UTF-8 text".into(),
            ReadError::Io { source, .. } => source.to_string(),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path().display(), self.reason())
    }
}

impl std::error::Error for ReadError {}

/// `256 MiB`, `4 KiB`, `17 B`: a limit as a person reads it.
pub fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn kind_name(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// Opens `path` for reading without blocking (a FIFO opens at once instead of waiting for a
/// writer) and refuses anything but a regular file, checked on the open file itself so a swap
/// between a check and the open cannot slip past.
fn open_regular(path: &Path) -> Result<File, ReadError> {
    let io = |source| ReadError::Io { path: path.to_path_buf(), source };
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular { path: path.to_path_buf(), kind: kind_name(meta.file_type()) });
    }
    Ok(file)
}

/// Which file a read was of (device and inode of the opened file): two names for one file
/// (a symlink, a path given twice) have the same id, so a caller can read each file once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

/// Reads all of `path`, a regular file of at most `limit` bytes.
pub fn read_bytes(path: &Path, limit: Limit) -> Result<Vec<u8>, ReadError> {
    read_open(open_regular(path)?, path, limit)
}

/// [`read_bytes`], with the identity of the file that was read (taken from the open file, so
/// it is the file whose bytes these are).
pub fn read_bytes_identified(path: &Path, limit: Limit) -> Result<(Vec<u8>, FileId), ReadError> {
    use std::os::unix::fs::MetadataExt;
    let file = open_regular(path)?;
    let id = file
        .metadata()
        .map(|m| FileId { dev: m.dev(), ino: m.ino() })
        .map_err(|source| ReadError::Io { path: path.to_path_buf(), source })?;
    Ok((read_open(file, path, limit)?, id))
}

/// Reads an opened regular file, at most `limit` bytes.
fn read_open(file: File, path: &Path, limit: Limit) -> Result<Vec<u8>, ReadError> {
    let too_large = || ReadError::TooLarge { path: path.to_path_buf(), limit };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > limit.bytes {
        return Err(too_large());
    }
    // The size can change under us (a file still being written): read one byte past the limit
    // to tell "exactly at the limit" from "more".
    let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.bytes.saturating_add(1)).read_to_end(&mut out).map_err(|source| ReadError::Io { path: path.to_path_buf(), source })?;
    if out.len() as u64 > limit.bytes {
        return Err(too_large());
    }
    Ok(out)
}

/// [`read_bytes`], as UTF-8 text.
pub fn read_text(path: &Path, limit: Limit) -> Result<String, ReadError> {
    text(read_bytes(path, limit)?, path)
}

fn text(bytes: Vec<u8>, path: &Path) -> Result<String, ReadError> {
    String::from_utf8(bytes).map_err(|_| ReadError::NotText { path: path.to_path_buf() })
}

/// `root/relative`, opened, refused if the file opened lies outside `root` once symlinks are
/// resolved. The decisive check is made on the open file itself (`/proc/self/fd`): a symlink
/// swapped between a check of the path and the open cannot slip past, as it could when the
/// path was resolved first and opened after. A first look at the path still refuses a link
/// that plainly leaves the folder before anything is opened (opening a device can act).
fn open_inside(root: &Path, relative: &str, place: &'static str) -> Result<(PathBuf, File), ReadError> {
    let path = root.join(relative);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| ReadError::Io { path: p, source }
    };
    let real_root = root.canonicalize().map_err(io(root))?;
    let outside = |path: PathBuf, resolved: PathBuf| ReadError::Outside { path, resolved, root: real_root.clone(), place };
    if let Ok(resolved) = path.canonicalize()
        && !resolved.starts_with(&real_root)
    {
        return Err(outside(path, resolved));
    }
    let file = open_regular(&path)?;
    let resolved = opened_path(&file).map_err(io(&path))?;
    if !resolved.starts_with(&real_root) {
        return Err(outside(path, resolved));
    }
    Ok((path, file))
}

/// Where an open file really is: the kernel's name for the descriptor.
fn opened_path(file: &File) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// A file a case names: inside `root` after symlinks, regular, at most `limit` bytes, UTF-8.
/// Opened once; every check is made on the opened file.
pub fn read_text_inside(root: &Path, relative: &str, limit: Limit) -> Result<String, ReadError> {
    let (path, file) = open_inside(root, relative, "the case folder")?;
    text(read_open(file, &path, limit)?, &path)
}

/// [`read_text_inside`], as bytes (a file compared by digest).
pub fn read_bytes_inside(root: &Path, relative: &str, limit: Limit) -> Result<Vec<u8>, ReadError> {
    let (path, file) = open_inside(root, relative, "the case folder")?;
    read_open(file, &path, limit)
}

/// A document of the repository at `root` a case cites (`docs/x.md`): inside the repository
/// after symlinks, regular, at most [`DOCUMENT`] bytes, UTF-8; opened once, like a manifest.
pub fn read_document(root: &Path, relative: &str) -> Result<String, ReadError> {
    let (path, file) = open_inside(root, relative, "the repository")?;
    text(read_open(file, &path, DOCUMENT)?, &path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const SMALL: Limit = Limit { bytes: 16, knob: Some("SMALL_KNOB") };

    #[test]
    fn reads_a_regular_file_at_the_limit_and_refuses_one_byte_more() {
        let d = tempfile::tempdir().unwrap();
        let at = d.path().join("at");
        std::fs::write(&at, [b'x'; 16]).unwrap();
        assert_eq!(read_bytes(&at, SMALL).unwrap().len(), 16);
        let over = d.path().join("over");
        std::fs::write(&over, [b'x'; 17]).unwrap();
        let e = read_bytes(&over, SMALL).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("over") && msg.contains("16 bytes") && msg.contains("SMALL_KNOB"), "{msg}");
    }

    #[test]
    fn a_device_is_refused_without_reading_it() {
        // /dev/zero never ends: reading it would grow until memory runs out.
        let d = tempfile::tempdir().unwrap();
        let link = d.path().join("gateway.yaml");
        symlink("/dev/zero", &link).unwrap();
        let e = read_text(&link, MANIFEST).unwrap_err();
        assert!(matches!(e, ReadError::NotRegular { kind: "character device", .. }), "{e}");
        assert!(e.to_string().contains("gateway.yaml: a character device, not a regular file"), "{e}");
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        // Without O_NONBLOCK, opening a FIFO without a writer blocks forever; this test would hang.
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("dump.json");
        crate::output::dest::testing::fifo(&fifo);
        let e = read_bytes(&fifo, SMALL).unwrap_err();
        assert!(matches!(e, ReadError::NotRegular { kind: "FIFO", .. }), "{e}");
    }

    #[test]
    fn a_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let e = read_bytes(d.path(), SMALL).unwrap_err();
        assert!(matches!(e, ReadError::NotRegular { kind: "directory", .. }), "{e}");
    }

    #[test]
    fn a_symlink_leaving_the_folder_is_refused_and_one_inside_is_followed() {
        let outer = tempfile::tempdir().unwrap();
        let case = outer.path().join("case");
        std::fs::create_dir(&case).unwrap();
        std::fs::write(outer.path().join("secret.yaml"), "kind: Secret\n").unwrap();
        std::fs::write(case.join("real.yaml"), "kind: Gateway\n").unwrap();
        symlink("../secret.yaml", case.join("out.yaml")).unwrap();
        symlink("real.yaml", case.join("in.yaml")).unwrap();
        let e = read_text_inside(&case, "out.yaml", MANIFEST).unwrap_err();
        assert!(matches!(e, ReadError::Outside { .. }), "{e}");
        assert!(e.to_string().contains("outside the case folder"), "{e}");
        assert_eq!(read_text_inside(&case, "in.yaml", MANIFEST).unwrap(), "kind: Gateway\n");
    }

    /// A symlink flipped between a file inside the folder and one outside while it is read:
    /// every read gives the inside file or refuses, never the outside one. Checking the path
    /// and then opening it let the outside file through whenever the flip fell in between.
    #[test]
    fn a_symlink_swapped_during_the_read_never_yields_the_outside_file() {
        let outer = tempfile::tempdir().unwrap();
        let case = outer.path().join("case");
        std::fs::create_dir(&case).unwrap();
        std::fs::write(outer.path().join("secret.yaml"), "outside\n").unwrap();
        std::fs::write(case.join("real.yaml"), "inside\n").unwrap();
        symlink("real.yaml", case.join("m.yaml")).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flipper = {
            let (case, stop) = (case.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut out = false;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    out = !out;
                    let tmp = case.join("m.yaml.next");
                    let _ = std::fs::remove_file(&tmp);
                    symlink(if out { "../secret.yaml" } else { "real.yaml" }, &tmp).unwrap();
                    std::fs::rename(&tmp, case.join("m.yaml")).unwrap();
                }
            })
        };
        let (mut inside, mut refused) = (0, 0);
        for _ in 0..20_000 {
            match read_text_inside(&case, "m.yaml", MANIFEST) {
                Ok(t) => {
                    assert_eq!(t, "inside\n", "the file outside the folder was read");
                    inside += 1;
                }
                Err(_) => refused += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        flipper.join().unwrap();
        assert!(inside > 0 && refused > 0, "the link did flip during the reads ({inside} read, {refused} refused)");
    }

    #[test]
    fn the_dump_limit_is_two_gib_unless_overridden() {
        let from = |v| limit_from(DUMP_LIMIT_ENV, v, DUMP_DEFAULT_BYTES);
        assert_eq!(from(None).unwrap().bytes, 2 * 1024 * 1024 * 1024);
        assert_eq!(from(Some("1000")).unwrap().bytes, 1000);
        assert!(from(Some("lots")).unwrap_err().contains(DUMP_LIMIT_ENV));
        assert!(from(Some("0")).is_err());
    }
}
