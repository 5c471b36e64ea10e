//! Embeds the git commit the binary is built from, for `layout-gate --version`. A build outside
//! a git checkout (a source tarball) says so instead of failing.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

fn main() {
    let text = match git(&["rev-parse", "HEAD"]) {
        Some(c) => format!("commit {c}"),
        None => "unknown commit: built without git".to_string(),
    };
    println!("cargo:rustc-env=LAYOUT_GATE_GIT_COMMIT={text}");
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the ref it points at (a commit).
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r])) {
        println!("cargo:rerun-if-changed={r}");
    }
    if let Some(packed) = git(&["rev-parse", "--git-path", "packed-refs"]) {
        println!("cargo:rerun-if-changed={packed}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
