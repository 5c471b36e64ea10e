//! One holder per version at a time: an exclusive `flock` on `<version folder>/holder.lock`,
//! taken by `operator up` before it starts a holder, handed to the holder (an inherited fd),
//! and held by the holder for its whole life. A second `operator up` finds it taken and waits
//! for the first one's plane instead of starting another; the holder's log is written only
//! by the one that took it. The kernel lets go when the holder ends, however it ends, so a
//! lock that can be taken means no holder lives: a state file there is stale.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The lock file, in a version's folder.
pub const FILE: &str = "holder.lock";

/// The lock, held while this value lives (in `up` until the holder has it, in the holder for
/// its life).
#[derive(Debug)]
pub struct HolderLock {
    file: File,
    path: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> String + use<> {
    let shown = path.display().to_string();
    move |e| format!("{shown}: {e}")
}

impl HolderLock {
    /// Takes the lock of the version folder `dir`; `Ok(None)` when another process holds it.
    pub fn try_take(dir: &Path) -> Result<Option<HolderLock>, String> {
        let path = dir.join(FILE);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(io(&path))?;
        // SAFETY: flock on an fd this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EWOULDBLOCK) { Ok(None) } else { Err(io(&path)(e)) };
        }
        Ok(Some(HolderLock { file, path }))
    }

    /// The fd to hand to the holder (made inheritable in the child only, by the caller's
    /// `pre_exec`).
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock `up` handed to this holder as `fd`: checked to be `dir`'s lock file, made
    /// close-on-exec (the plane's processes must not keep it after the holder), and held.
    ///
    /// # Safety
    ///
    /// `fd` must be an fd this process inherited and nothing else in it owns.
    pub unsafe fn adopt(fd: RawFd, dir: &Path) -> Result<HolderLock, String> {
        let path = dir.join(FILE);
        // SAFETY: F_GETFD only reads the fd's flags; it fails on an fd that is not open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(format!("--lock-fd {fd}: not an open file"));
        }
        // SAFETY: the caller hands over an inherited fd nothing else owns.
        let file = unsafe { File::from_raw_fd(fd) };
        let (held, there) = (file.metadata().map_err(io(&path))?, std::fs::symlink_metadata(&path).map_err(io(&path))?);
        if (held.dev(), held.ino()) != (there.dev(), there.ino()) {
            return Err(format!("--lock-fd {fd}: not {}", path.display()));
        }
        // SAFETY: fcntl and flock on the fd `file` now owns.
        unsafe {
            if libc::fcntl(file.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
                return Err(io(&path)(std::io::Error::last_os_error()));
            }
            // Already ours (the same open file `up` locked): this only confirms it.
            if libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) != 0 {
                return Err(format!("{}: not held: {}", path.display(), std::io::Error::last_os_error()));
            }
        }
        Ok(HolderLock { file, path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36: two `operator up` at once both started a holder. The lock is taken once; the
    /// second finds it taken until the first lets go.
    #[test]
    fn the_lock_is_taken_once_until_its_holder_lets_go() {
        let tmp = tempfile::tempdir().unwrap();
        let first = HolderLock::try_take(tmp.path()).unwrap().expect("free");
        assert!(HolderLock::try_take(tmp.path()).unwrap().is_none(), "taken twice");
        drop(first);
        assert!(HolderLock::try_take(tmp.path()).unwrap().is_some(), "free again");
        // A link where the lock file goes is refused, never followed.
        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(tmp.path().join(FILE), other.path().join(FILE)).unwrap();
        assert!(HolderLock::try_take(other.path()).is_err());
    }
}
