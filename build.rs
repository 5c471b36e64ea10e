//! Embeds the git commit the binary is built from, for `layout-gate --version`. A build outside
//! a git checkout (a source tarball) says so instead of failing.

use std::process::Command;

#[path = "harness/src/build_watch.rs"]
mod build_watch;

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
    // Rebuild when HEAD moves, and only then: the files `build_watch` names all exist (a watched
    // file that does not exist makes Cargo rerun this script, and rebuild the crate, every time).
    // Relative paths are relative to here, the package root (git before 2.31 has no
    // `--path-format=absolute`).
    let here = std::env::current_dir().unwrap_or_default();
    let dirs = git(&["rev-parse", "--git-dir", "--git-common-dir"]);
    if let Some((git_dir, common)) = dirs.as_deref().and_then(|d| d.split_once('\n')) {
        let (git_dir, common) = (here.join(git_dir.trim()), here.join(common.trim()));
        let head = std::fs::read_to_string(git_dir.join("HEAD")).unwrap_or_default();
        for path in build_watch::watched(&git_dir, &common, &head, &|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=harness/src/build_watch.rs");
}
