//! Nothing the trials send leaves the machine.
//!
//! The runner sets `LAYOUT_GATE_LOCAL_ONLY` (`layout_gate::observe::probe::reach`) to a file of
//! its own before any trial starts, so every probe of this process and of every `layout-gate`
//! it starts goes only to loopback or a network namespace the run holds: a probe to any other
//! address is not sent and is written to that file. The last trial of the run
//! (`local_only::no_probe_left_the_machine`) fails when the file is not empty, naming each
//! refused address and the command that tried; `local_only::an_address_off_the_machine_is_refused`
//! shows the whole path works: the binary refuses, says so and records it.

use std::io::Read;
use std::path::PathBuf;
use std::process::Command;

use layout_gate::observe::probe::reach::LOCAL_ONLY_ENV;

/// The refusals file of this run: under Cargo's temporary folder for this target, one per
/// runner process.
fn refusals() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("local-only-refusals-{}.log", std::process::id()))
}

/// Confines this process and its children. Called first in `main`, before any thread starts (the
/// environment is process-wide and not synchronised).
pub fn confine() {
    let path = refusals();
    // A file of ours left from a process with the same id would be read as this run's refusals.
    let _ = std::fs::remove_file(&path);
    // SAFETY: called at the start of `main`, before the runner or any trial starts a thread.
    unsafe { std::env::set_var(LOCAL_ONLY_ENV, &path) };
}

/// What the refusals file holds, at most 64 KiB of it.
fn read_refusals(path: &std::path::Path) -> Result<String, String> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut text = String::new();
    f.take(64 * 1024).read_to_string(&mut text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text)
}

/// Fails when any probe of this run (this process or a child) was refused as off the machine,
/// or, when `scripts/offbox-counter.sh start` counts (as `scripts/test.sh` does as root), when any
/// packet to a private range left the machine since it started.
pub fn no_probe_left_the_machine() -> Result<(), String> {
    let path = refusals();
    let text = read_refusals(&path)?;
    if !text.trim().is_empty() {
        return Err(format!(
            "probes to addresses off this machine were tried (and refused, so none was sent); a trial must send only to \
             127.0.0.0/8, ::1 or a network namespace it created ({}):\n{text}",
            path.display()
        ));
    }
    let counter = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/offbox-counter.sh");
    // Exit 2: not counting here (not root, no nftables, not started); nothing to read.
    match Command::new(&counter).arg("report").output() {
        Ok(out) if out.status.code() == Some(1) => Err(format!(
            "packets to private ranges left this machine while the trials ran (nftables counter):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )),
        Ok(out) if out.status.success() => {
            eprintln!("local_only: {}", String::from_utf8_lossy(&out.stdout).trim());
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `layout-gate probe` to a private address outside any namespace of the run: refused, said (its
/// human line: `failed at setup: "not sent to …"`; the JSON contract has no class for it),
/// recorded, nothing sent. Run in a network namespace of its own with no route (`unshare -rn`,
/// util-linux), so even a binary without the guard could not send the packet anywhere.
pub fn an_address_off_the_machine_is_refused() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("refusals.log");
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--net", "--"])
        .arg(env!("CARGO_BIN_EXE_layout-gate"))
        .args(["probe", "172.18.0.0:443", "--sni", "www.example.test", "--timeout", "2"])
        .env(LOCAL_ONLY_ENV, &file)
        .output()
        .map_err(|e| format!("unshare (util-linux; apt-get install util-linux) did not start: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("unshare: ") {
        return Err(format!("unshare could not make a network namespace (needs root or user namespaces): {stderr}"));
    }
    let want = "not sent to 172.18.0.0:443: it is off this machine";
    if !stdout.contains(want) {
        return Err(format!("the probe's observation does not say it was not sent ({want:?}):\nstdout {stdout}\nstderr {stderr}"));
    }
    let recorded = read_refusals(&file)?;
    if !recorded.contains(want) || !recorded.contains("probe 172.18.0.0:443") {
        return Err(format!("the refusal is not recorded with the command that tried: {recorded:?}"));
    }
    Ok(())
}
