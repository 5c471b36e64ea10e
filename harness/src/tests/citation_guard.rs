//! No tracked file cites a document a reader of the repository cannot open.
//!
//! layout-gate was written with private working notes beside it (a Cilium translation note, a
//! cozystack layout note, a local-Envoy note, a survey of other harnesses, and sample Envoy
//! configs kept next to them). They are not in the repository, so a citation of them is a dead
//! end for every reader: cite the upstream issue, pull request or file at a tag or commit, or a
//! document inside the repository (`docs/cilium-translation.md §N`, `cases/README.md`) instead.
//! This test walks every file `git ls-files` lists and fails on any mention of those notes, in
//! any of the spellings they were cited by (`<note>.md`, `<note> §N`, `(<note>)`), or of the
//! folder they live in.

use std::path::Path;
use std::process::Command;

/// The notes' names, without `.md`. Each is forbidden with `.md`, or followed by `§`/`)`.
const NOTES: [&str; 4] = ["cilium-gateway", "cozystack-layouts", "local-envoy", "anchors"];

/// Mentions that are wrong wherever they appear: the notes' folder and the workplace around it.
const FORBIDDEN: [&str; 5] = ["shared/reference", "envoy-samples", "/work/shared", "/work/.library", "cozystack-layouts"];

/// Tracked files that may mention them, and why.
const ALLOWED: [(&str, &str); 1] = [("harness/src/tests/citation_guard.rs", "this guard names what it forbids")];

/// Every forbidden mention on one line, as the text that matched.
fn mentions(line: &str) -> Vec<String> {
    let lower = line.to_ascii_lowercase();
    let mut found: Vec<String> = FORBIDDEN.iter().filter(|f| lower.contains(*f)).map(|f| f.to_string()).collect();
    for note in NOTES {
        for (at, _) in lower.match_indices(note) {
            // `cilium-gateway-gw` (a CiliumEnvoyConfig name) and `scripts/local-envoy.sh` are
            // fine: only the note itself, as `<note>.md`, `<note> §N` or `(<note>)`, is a citation.
            let before_ok = at == 0 || !lower[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            let rest = lower[at + note.len()..].trim_start_matches(' ');
            let parenthesised = lower[..at].ends_with('(') && rest.starts_with(')');
            if before_ok && (rest.starts_with(".md") || rest.starts_with('§') || parenthesised) {
                found.push(format!("{note}{}", &rest[..rest.char_indices().nth(3).map_or(rest.len(), |(i, _)| i)]));
            }
        }
    }
    // `cozystack-layouts.md` is one mention, not two.
    let all = found.clone();
    found.retain(|f| !all.iter().any(|g| g != f && g.contains(f.as_str())));
    found
}

#[test]
fn mentions_catches_every_spelling_and_spares_legitimate_names() {
    for bad in [
        "see cilium-gateway.md §9",
        "(cilium-gateway §9)",
        "per (cozystack-layouts (a))",
        "as in local-envoy.md section 8",
        "local-envoy §12",
        "(anchors)",
        "../../shared/reference/x",
        "SAMPLES=/work/shared/x",
        "from the envoy-samples folder",
        "Cilium-Gateway.MD",
    ] {
        assert!(!mentions(bad).is_empty(), "{bad:?} passed");
    }
    for good in [
        "ns/cilium-gateway-gw/listener",
        "scripts/local-envoy.sh 10447",
        "CN=local-envoy Test CA",
        "its anchors: a, b",
        "YAML anchors resolve",
        "(and its YAML anchors)",
        "docs/cilium-translation.md §9",
        "my-cilium-gateway.md",
    ] {
        assert!(mentions(good).is_empty(), "{good:?} flagged: {:?}", mentions(good));
    }
}

#[test]
fn no_tracked_file_cites_the_private_notes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("running `git ls-files` in {}: {e}; this test needs git (apt-get install git)", root.display()));
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "`git ls-files` in {} listed nothing ({}): this test needs a git checkout of the repository",
        root.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let files: Vec<&str> =
        out.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()).map(|p| std::str::from_utf8(p).expect("git paths are UTF-8")).collect();
    let mut hits = Vec::new();
    for file in &files {
        if ALLOWED.iter().any(|(a, _)| a == file) {
            continue;
        }
        let Ok(bytes) = std::fs::read(root.join(file)) else {
            continue; // listed but deleted in the working tree
        };
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue; // binary (images); a citation is text
        };
        for (n, line) in text.lines().enumerate() {
            for m in mentions(line) {
                hits.push(format!("{file}:{}: {m:?}", n + 1));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "{} mention(s) of the private notes, which are not in the repository; cite upstream (cilium#N, \
         cilium@<tag>:<path>:<function>) or a document in the repository (docs/cilium-translation.md §N) instead:\n{}",
        hits.len(),
        hits.join("\n")
    );
}
