//! How a warm plane's holder proves it is the one that wrote its state file, and how it is
//! signalled without ever signalling another process.
//!
//! A pid, a start time and a command line say nothing about who a process is: any program can
//! be started as `layout-gate operator hold` (`exec -a`), and a state file can be edited. So the
//! holder draws a random [`Token`] when it starts, writes it into the state file (0600, in a
//! folder of this user's), and answers on a Unix socket beside it (`holder.sock`): a reader
//! sends a fresh nonce, and the holder answers with the SHA-256 of the state file exactly as it
//! wrote it and an HMAC-SHA256, keyed by the token, of the nonce and that digest. Only a
//! process that knows the token and wrote that very text answers right; the socket's peer
//! credentials (`SO_PEERCRED`) give the pid of the process answering, which must be the one the
//! state names. An edited state (another version, another pid) no longer matches the digest
//! its holder answers with; a foreign process answers nothing.
//!
//! `down` signals a holder through a pidfd (`pidfd_open`) opened *before* the proof is asked:
//! the process that answered was alive after the pidfd was opened, so the pidfd is that
//! process, and a pid recycled meanwhile is never signalled.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ring::hmac;
use serde::{Deserialize, Serialize};

/// The holder's socket, in its version's folder.
pub const SOCKET: &str = "holder.sock";

/// How long either side waits for the other on the socket: the holder answers at once.
const WAIT: Duration = Duration::from_secs(3);

/// The most bytes a question or an answer holds (a nonce, or a digest and a proof, in hex).
const MAX_LINE: u64 = 256;

/// The holder's secret (32 random bytes, hex). Never printed: `Debug` hides it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(hidden)")
    }
}

/// 32 bytes from the system's random source, hex.
fn random_hex() -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut b).map_err(|_| "the system random source failed".to_string())?;
    Ok(crate::types::hex(&b))
}

impl Token {
    pub fn new() -> Result<Token, String> {
        random_hex().map(Token)
    }

    fn key(&self) -> hmac::Key {
        hmac::Key::new(hmac::HMAC_SHA256, self.0.as_bytes())
    }
}

/// The SHA-256 of a state file's text, hex.
pub fn digest(text: &str) -> String {
    crate::types::sha256_hex(text.as_bytes())
}

fn message(nonce: &str, digest: &str) -> Vec<u8> {
    format!("layout-gate warm holder\n{nonce}\n{digest}\n").into_bytes()
}

/// Answers every question on `listener` for the state whose text has `digest`, on a thread of
/// its own, for the rest of the process's life. One question at a time, each bounded in size
/// and time, so a client that stalls delays the next by [`WAIT`] at most.
pub fn serve(listener: UnixListener, token: Token, digest: String) -> Result<(), String> {
    let key = token.key();
    std::thread::Builder::new()
        .name("warm-holder-proof".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = answer(stream, &key, &digest);
            }
        })
        .map(|_| ())
        .map_err(|e| format!("starting the holder's proof thread: {e}"))
}

fn answer(stream: UnixStream, key: &hmac::Key, digest: &str) -> std::io::Result<()> {
    stream.set_read_timeout(Some(WAIT))?;
    stream.set_write_timeout(Some(WAIT))?;
    let mut nonce = String::new();
    BufReader::new((&stream).take(MAX_LINE)).read_line(&mut nonce)?;
    let nonce = nonce.trim();
    if nonce.len() != 64 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    let proof = hmac::sign(key, &message(nonce, digest));
    let proof = proof.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>();
    (&stream).write_all(format!("{digest} {proof}\n").as_bytes())
}

/// Binds the holder's socket in `dir` (0600), replacing one a holder before left: the caller
/// holds the version's lock ([`super::lock`]), so no live holder answers on it.
pub fn bind(dir: &Path) -> Result<UnixListener, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(SOCKET);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    let listener = UnixListener::bind(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(listener)
}

/// Why a process did not prove it is a state's holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoProof(pub String);

impl std::fmt::Display for NoProof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Asks the holder in `dir` to prove it wrote `text` (a state file as read) with `token` (the
/// token that text holds): the pid of the process that proved it.
pub fn ask(dir: &Path, token: &Token, text: &str) -> Result<u32, NoProof> {
    let path: PathBuf = dir.join(SOCKET);
    let no = |why: String| NoProof(format!("{}: {why}", path.display()));
    let stream = UnixStream::connect(&path).map_err(|e| no(format!("nothing answers ({e})")))?;
    stream.set_read_timeout(Some(WAIT)).map_err(|e| no(e.to_string()))?;
    stream.set_write_timeout(Some(WAIT)).map_err(|e| no(e.to_string()))?;
    let pid = peer_pid(&stream).map_err(|e| no(format!("its peer is unknown ({e})")))?;
    let nonce = random_hex().map_err(no)?;
    (&stream).write_all(format!("{nonce}\n").as_bytes()).map_err(|e| no(format!("asking: {e}")))?;
    let mut line = String::new();
    BufReader::new((&stream).take(MAX_LINE)).read_line(&mut line).map_err(|e| no(format!("no answer ({e})")))?;
    let (said, proof) = line.trim().split_once(' ').ok_or_else(|| no("no proof in its answer".into()))?;
    let want = digest(text);
    let proof = (0..proof.len())
        .step_by(2)
        .map(|i| proof.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| no("its proof is not hex".into()))?;
    hmac::verify(&token.key(), &message(&nonce, said), &proof)
        .map_err(|_| no(format!("pid {pid} answers, but without the state's token: not its holder")))?;
    if said != want {
        return Err(no(format!(
            "its holder (pid {pid}) wrote another state (sha256 {said}) than the one there now (sha256 {want}): edited"
        )));
    }
    Ok(pid)
}

/// The pid of the process at the other end of `stream`.
fn peer_pid(stream: &UnixStream) -> std::io::Result<u32> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the size passed; the fd is the stream's.
    let rc = unsafe { libc::getsockopt(stream.as_raw_fd(), libc::SOL_SOCKET, libc::SO_PEERCRED, (&raw mut cred).cast(), &raw mut len) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    u32::try_from(cred.pid).map_err(|_| std::io::Error::other("no peer pid"))
}

/// A process, held by a pidfd: signals go to it and never to a process that took its pid later.
pub struct Pidfd(OwnedFd);

impl Pidfd {
    pub fn open(pid: u32) -> std::io::Result<Pidfd> {
        let pid = libc::pid_t::try_from(pid).map_err(|_| std::io::Error::other("no such pid"))?;
        // SAFETY: pidfd_open takes a pid and flags, returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the fd was just returned to us and is owned by nothing else.
        Ok(Pidfd(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
    }

    pub fn terminate(&self) -> std::io::Result<()> {
        // SAFETY: a valid pidfd, a signal number, no siginfo, no flags.
        let rc = unsafe {
            libc::syscall(libc::SYS_pidfd_send_signal, self.0.as_raw_fd(), libc::SIGTERM, std::ptr::null::<libc::siginfo_t>(), 0)
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_process_with_the_token_and_the_text_it_wrote_proves_it() {
        let tmp = tempfile::tempdir().unwrap();
        let token = Token::new().unwrap();
        let text = "{\"version\": \"1.19.6\"}\n";
        serve(bind(tmp.path()).unwrap(), token.clone(), digest(text)).unwrap();
        assert_eq!(ask(tmp.path(), &token, text), Ok(std::process::id()));
        // The text edited (another version): its holder wrote another.
        let e = ask(tmp.path(), &token, &text.replace("1.19.6", "1.19.5")).unwrap_err();
        assert!(e.0.contains("wrote another state") && e.0.contains("edited"), "{e}");
        // Another token (a state file written by someone else, naming this process).
        let e = ask(tmp.path(), &Token::new().unwrap(), text).unwrap_err();
        assert!(e.0.contains("without the state's token"), "{e}");
        // Nothing listening.
        let other = tempfile::tempdir().unwrap();
        assert!(ask(other.path(), &token, text).unwrap_err().0.contains("nothing answers"));
        assert_eq!(format!("{token:?}"), "Token(hidden)");
    }

    /// A pidfd is the process it was opened on: a signal through it reaches that process.
    #[test]
    fn a_pidfd_signals_the_process_it_was_opened_on() {
        let mut child = std::process::Command::new("sleep").arg("600").spawn().unwrap();
        let fd = Pidfd::open(child.id()).unwrap();
        fd.terminate().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGTERM));
        // Gone (reaped): the pidfd signals nothing else, whoever has the pid now.
        assert_eq!(fd.terminate().unwrap_err().raw_os_error(), Some(libc::ESRCH));
    }
}
