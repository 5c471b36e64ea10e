//! Where the tool writes files and folders (`report --out` and `--junit`, `run --evidence-dir`,
//! `case new`): only over nothing, or over a regular file of the user running it, and only
//! by renaming a complete file into place.
//!
//! `rename(2)` replaces whatever name it lands on: a symbolic link (not its target), a FIFO, a
//! device node (run as root, `report --junit /dev/full` once replaced the real `/dev/full`
//! with a regular file). So before anything is written the destination is looked at without
//! following links ([`check_file`], [`check_dir`]), and the final rename ([`place_file`],
//! [`place_new_dir`]) is atomic about it: onto nothing with `RENAME_NOREPLACE`, over a regular
//! file with `RENAME_EXCHANGE`, after which the file that came out is checked and, if something
//! else was swapped in meanwhile, swapped back. Nothing that is not ours is ever removed.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What is at a path (a symbolic link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Nothing,
    /// A regular file; `ours` when the user running layout-gate owns it.
    File {
        ours: bool,
    },
    Directory,
    Symlink,
    Fifo,
    CharDevice,
    BlockDevice,
    Socket,
}

impl Found {
    pub fn at(path: &Path) -> io::Result<Found> {
        let m = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
            Err(e) => return Err(e),
        };
        let t = m.file_type();
        Ok(if t.is_symlink() {
            Found::Symlink
        } else if t.is_file() {
            Found::File { ours: m.uid() == euid() }
        } else if t.is_dir() {
            Found::Directory
        } else if t.is_fifo() {
            Found::Fifo
        } else if t.is_char_device() {
            Found::CharDevice
        } else if t.is_block_device() {
            Found::BlockDevice
        } else {
            Found::Socket
        })
    }

    fn describe(self) -> &'static str {
        match self {
            Found::Nothing => "nothing",
            Found::File { ours: true } => "a regular file",
            Found::File { ours: false } => "a regular file of another user",
            Found::Directory => "a folder",
            Found::Symlink => "a symbolic link",
            Found::Fifo => "a FIFO",
            Found::CharDevice => "a character device",
            Found::BlockDevice => "a block device",
            Found::Socket => "a socket",
        }
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

#[derive(Debug, thiserror::Error)]
pub enum DestError {
    /// Something is there that layout-gate will not write over.
    #[error("{} is {}: layout-gate writes only {wanted} (remove it, or choose another path)", shown(.path), .found.describe())]
    Refused { path: PathBuf, found: Found, wanted: &'static str },
    #[error("{action} {}: {source}", shown(.path))]
    Io { action: &'static str, path: PathBuf, source: io::Error },
}

/// A path as given, with control characters escaped (it was an argument).
fn shown(path: &Path) -> String {
    crate::term::line(&path.display().to_string()).into_owned()
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> DestError + use<> {
    let path = path.to_path_buf();
    move |source| DestError::Io { action, path, source }
}

const FILE_WANTED: &str = "new files or regular files of its own";
const DIR_WANTED: &str = "into folders (not through a symbolic link)";

/// `Ok` when a file may be written at `path`: nothing is there, or a regular file of this user.
pub fn check_file(path: &Path) -> Result<(), DestError> {
    match Found::at(path).map_err(io_err("looking at", path))? {
        Found::Nothing | Found::File { ours: true } => Ok(()),
        found => Err(DestError::Refused { path: path.to_path_buf(), found, wanted: FILE_WANTED }),
    }
}

/// `Ok` when files may be written into `path`: nothing is there yet, or a folder (not a
/// symbolic link to one).
pub fn check_dir(path: &Path) -> Result<(), DestError> {
    match Found::at(path).map_err(io_err("looking at", path))? {
        Found::Nothing | Found::Directory => Ok(()),
        found => Err(DestError::Refused { path: path.to_path_buf(), found, wanted: DIR_WANTED }),
    }
}

/// [`check_dir`], then creates the folder (and its parents) if it is not there.
pub fn ensure_dir(path: &Path) -> Result<(), DestError> {
    check_dir(path)?;
    fs::create_dir_all(path).map_err(io_err("creating", path))?;
    // Created meanwhile as something else: looked at again.
    check_dir(path)
}

/// Moves the complete file `staged` (in the same folder as `dest`) to `dest`: created if
/// nothing is there, replacing a regular file of this user, refused over anything else (see
/// the module docs). On `Err`, `staged` is still there for the caller to remove.
pub fn place_file(staged: &Path, dest: &Path) -> Result<(), DestError> {
    // Something may appear or vanish between a look and the rename: look again, a few times.
    for _ in 0..4 {
        match Found::at(dest).map_err(io_err("looking at", dest))? {
            Found::Nothing => match rename(staged, dest, Mode::NoReplace) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(DestError::Io { action: "renaming into place", path: dest.to_path_buf(), source: e }),
            },
            Found::File { ours: true } => match rename(staged, dest, Mode::Exchange) {
                // No exchange here (see `rename`): the file was replaced, not kept.
                Ok(false) => return Ok(()),
                Ok(true) => {
                    // `staged` now names what was at `dest`.
                    match Found::at(staged) {
                        Ok(Found::File { ours: true }) => {
                            let _ = fs::remove_file(staged);
                            return Ok(());
                        }
                        other => {
                            // Swapped in after the look: put it back where it was.
                            let back = rename(staged, dest, Mode::Exchange);
                            let found = other.unwrap_or(Found::Nothing);
                            return match back {
                                Ok(_) => Err(DestError::Refused { path: dest.to_path_buf(), found, wanted: FILE_WANTED }),
                                Err(e) => Err(DestError::Io { action: "putting back what was at", path: dest.to_path_buf(), source: e }),
                            };
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(DestError::Io { action: "renaming into place", path: dest.to_path_buf(), source: e }),
            },
            found => return Err(DestError::Refused { path: dest.to_path_buf(), found, wanted: FILE_WANTED }),
        }
    }
    Err(DestError::Io {
        action: "writing",
        path: dest.to_path_buf(),
        source: io::Error::other("it kept changing while layout-gate wrote it"),
    })
}

/// Moves the complete folder `staged` to `dest`, where nothing may be (a folder is never
/// replaced). `Found` says what was there when it is refused. On `Err`, `staged` is still
/// there for the caller to remove.
pub fn place_new_dir(staged: &Path, dest: &Path) -> Result<(), DestError> {
    match rename(staged, dest, Mode::NoReplace) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let found = Found::at(dest).unwrap_or(Found::Directory);
            Err(DestError::Refused { path: dest.to_path_buf(), found, wanted: "a new folder where nothing is" })
        }
        Err(e) => Err(DestError::Io { action: "renaming into place", path: dest.to_path_buf(), source: e }),
    }
}

#[derive(Clone, Copy)]
enum Mode {
    /// Fails with `AlreadyExists` when something is at the destination.
    NoReplace,
    /// Swaps the two names; fails with `NotFound` when the destination is gone.
    Exchange,
}

/// `renameat2(2)` with `mode`; whether the names were exchanged (what was at `to` is now at
/// `from`). Where the filesystem or the kernel has no `renameat2`, the same checks are made
/// just before a plain `rename`, which replaces (a narrower guarantee, only there).
fn rename(from: &Path, to: &Path, mode: Mode) -> io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
        let (f, t) = (c(from)?, c(to)?);
        let flags = match mode {
            Mode::NoReplace => libc::RENAME_NOREPLACE,
            Mode::Exchange => libc::RENAME_EXCHANGE,
        };
        // SAFETY: two NUL-terminated paths that live across the call; AT_FDCWD resolves them
        // as `rename` would.
        let r = unsafe { libc::renameat2(libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), flags) };
        if r == 0 {
            return Ok(matches!(mode, Mode::Exchange));
        }
        let e = io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)) {
            return Err(e);
        }
    }
    match (mode, Found::at(to)?) {
        (Mode::NoReplace, Found::Nothing) | (Mode::Exchange, Found::File { ours: true }) => fs::rename(from, to).map(|()| false),
        (Mode::NoReplace, _) => Err(io::Error::from(io::ErrorKind::AlreadyExists)),
        (Mode::Exchange, _) => Err(io::Error::from(io::ErrorKind::NotFound)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_goes_where_nothing_or_its_own_file_is() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("out.txt");
        let staged = tmp.path().join(".out.1");
        fs::write(&staged, "one").unwrap();
        place_file(&staged, &dest).unwrap();
        fs::write(&staged, "two").unwrap();
        place_file(&staged, &dest).unwrap();
        assert_eq!(fs::read_to_string(&dest).unwrap(), "two");
        assert!(!staged.exists(), "the replaced file is removed");
    }

    #[test]
    fn a_folder_goes_only_where_nothing_is() {
        let tmp = tempfile::tempdir().unwrap();
        let (staged, dest) = (tmp.path().join(".new"), tmp.path().join("run"));
        fs::create_dir(&staged).unwrap();
        fs::create_dir(&dest).unwrap();
        // An empty folder is a folder: plain rename(2) would have replaced it.
        let e = place_new_dir(&staged, &dest).unwrap_err();
        assert!(matches!(e, DestError::Refused { found: Found::Directory, .. }), "{e}");
        fs::remove_dir(&dest).unwrap();
        std::os::unix::fs::symlink("/nonexistent", &dest).unwrap();
        assert!(matches!(place_new_dir(&staged, &dest).unwrap_err(), DestError::Refused { found: Found::Symlink, .. }));
        fs::remove_file(&dest).unwrap();
        place_new_dir(&staged, &dest).unwrap();
        assert!(dest.is_dir() && !staged.exists());
    }
}

/// What the tests of the writers put at a destination.
#[cfg(test)]
pub(crate) mod testing {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    pub fn fifo(at: &Path) {
        let p = CString::new(at.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(p.as_ptr(), 0o600) }, 0, "mkfifo {}", at.display());
    }

    /// A character device at `at` (the null device's numbers), made with mknod when running as
    /// root, in the test's own folder: never a real one under /dev. Without root no device can
    /// be made, and `/dev/null` itself is returned: no rename can replace it then either, so a
    /// writer that tried would fail with another message than the refusal the tests expect.
    pub fn char_device(at: &Path) -> PathBuf {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return PathBuf::from("/dev/null");
        }
        let p = CString::new(at.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; makedev only computes a number.
        let r = unsafe { libc::mknod(p.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 3)) };
        assert_eq!(r, 0, "mknod {}: {}", at.display(), std::io::Error::last_os_error());
        at.to_path_buf()
    }

    /// A regular file of another user (root only: `None` otherwise).
    pub fn foreign_file(at: &Path) -> Option<PathBuf> {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        std::fs::write(at, "someone else's").unwrap();
        std::os::unix::fs::chown(at, Some(65534), Some(65534)).unwrap();
        Some(at.to_path_buf())
    }
}
