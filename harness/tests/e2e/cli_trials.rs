//! The `layout-gate` binary as a user runs it: output into a closed pipe, Ctrl-C and SIGTERM
//! mid-run, stderr into a pipe, and every command README.md and docs/ show.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use layout_gate::evidence::Evidence;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layout-gate"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    // A developer's progress setting must not change what the trials see.
    c.env_remove("LAYOUT_GATE_PROGRESS");
    c
}

fn envoy_check() -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map(|_| ()).map_err(|e| e.to_string())
}

/// Every evidence.json under `root`.
fn evidences(root: &Path) -> Result<Vec<Evidence>, String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))? {
        let p = entry.map_err(|e| e.to_string())?.path().join("evidence.json");
        if p.is_file() {
            let text = std::fs::read_to_string(&p).map_err(|e| e.to_string())?;
            out.push(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?);
        }
    }
    Ok(out)
}

/// How many versions a model run selects by default: the pins the model has been checked at
/// (the others are left out and said).
fn model_versions() -> Result<usize, String> {
    let pins = layout_gate::versions::Pins::load_default().map_err(|p| format!("{p:?}"))?;
    Ok(pins.versions().iter().filter(|v| layout_gate::lanes::model::checked::is_checked(v)).count())
}

/// `run --lane model | head -1`: the first line is read, stdout closes, and the run still
/// writes every version's evidence and exits with its own status (it panicked with 101 after
/// the first version before).
pub fn closed_stdout_keeps_evidence() -> Result<(), String> {
    envoy_check()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut child = bin()
        .args(["run", "--lane", "model", "--case", "dns01-default", "--evidence-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut first = String::new();
    {
        let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        out.read_line(&mut first).map_err(|e| e.to_string())?;
        // Dropping the reader closes the pipe, as `head -1` does.
    }
    let mut stderr = String::new();
    child.stderr.take().ok_or("no stderr")?.read_to_string(&mut stderr).map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if !first.starts_with("ok   model ") {
        return Err(format!("first line {first:?}"));
    }
    if status.code() != Some(0) || stderr.contains("panicked") {
        return Err(format!("exit {status} after stdout closed; stderr:\n{stderr}"));
    }
    let evs = evidences(dir.path())?;
    let pinned = model_versions()?;
    if evs.len() != pinned || evs.iter().any(|e| e.cases.len() != 1) {
        return Err(format!("{} evidence folders for {pinned} versions", evs.len()));
    }
    Ok(())
}

/// A signal once the first case has finished: no new case starts, the evidence of every
/// finished case is written with `interrupted: true`, the exit status names the signal, and no
/// temporary folder of the run (keys, Envoy work folders) is left.
fn interrupted_by(signal: &str, want: i32) -> Result<(), String> {
    envoy_check()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut child = bin()
        .args(["run", "--lane", "model", "--jobs", "1", "--evidence-dir"])
        .arg(dir.path())
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut lines = Vec::new();
    let mut line = String::new();
    while out.read_line(&mut line).map_err(|e| e.to_string())? > 0 {
        let finished = line.starts_with("ok   model ") || line.starts_with("FAIL model ");
        lines.push(std::mem::take(&mut line));
        if finished {
            break;
        }
    }
    let killed = Command::new("kill").args([signal, &child.id().to_string()]).status().map_err(|e| format!("kill: {e}"))?;
    if !killed.success() {
        return Err("kill failed".into());
    }
    let mut rest = String::new();
    out.read_to_string(&mut rest).map_err(|e| e.to_string())?;
    let mut stderr = String::new();
    child.stderr.take().ok_or("no stderr")?.read_to_string(&mut stderr).map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if status.code() != Some(want) {
        return Err(format!("exit {status}, want {want}; stdout:\n{}{rest}\nstderr:\n{stderr}", lines.concat()));
    }
    let evs = evidences(dir.path())?;
    let finished: usize = evs.iter().map(|e| e.cases.len()).sum();
    let total = layout_gate::case::lint(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cases")).map_err(|p| format!("{p:?}"))?.len()
        * model_versions()?;
    if finished == 0 || finished >= total {
        return Err(format!("{finished} of {total} cases in the evidence; want the finished ones only"));
    }
    if evs.iter().any(|e| !e.interrupted) {
        return Err("evidence of an interrupted run without interrupted: true".into());
    }
    // Every version is accounted for: one that no case finished on is evidence that says it did
    // not run, and why, with no verdict.
    let versions = model_versions()?;
    if evs.len() != versions {
        return Err(format!("{} evidence folders for {versions} versions", evs.len()));
    }
    for e in evs.iter().filter(|e| e.cases.is_empty()) {
        match e.not_run_reason() {
            Some(r) if r.contains("stopped by") && !e.not_run.is_empty() => {}
            other => return Err(format!("a version with no finished case reads status {other:?}, not_run {}", e.not_run.len())),
        }
    }
    if !rest.contains(" not run") || !rest.contains("evidence (lane: model") {
        return Err(format!("no final count or evidence line after the signal:\n{rest}"));
    }
    let left = crate::process_trials::scratch_folders(tmp.path());
    if !left.is_empty() {
        return Err(format!("temporary folders left after {signal}: {left:?}"));
    }
    Ok(())
}

pub fn sigint_keeps_finished_cases() -> Result<(), String> {
    interrupted_by("-INT", 130)
}

pub fn sigterm_keeps_finished_cases() -> Result<(), String> {
    interrupted_by("-TERM", 143)
}

/// A closed terminal (SIGHUP) is a stop like SIGTERM: it ended the run with none of its
/// finished cases written and its key folders left before.
pub fn sighup_keeps_finished_cases() -> Result<(), String> {
    interrupted_by("-HUP", 129)
}

/// Ctrl-\ (SIGQUIT) too: it dumped core before, writing nothing.
pub fn sigquit_keeps_finished_cases() -> Result<(), String> {
    interrupted_by("-QUIT", 131)
}

/// Log lines into a pipe carry no colour codes, and nothing on stderr or stdout has ANSI
/// escapes when neither is a terminal.
pub fn no_ansi_codes_in_pipes() -> Result<(), String> {
    envoy_check()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = bin()
        .args(["run", "--lane", "model", "--case", "edge-mode", "--cilium", "1.19.6", "--evidence-dir"])
        .arg(dir.path())
        .env("LAYOUT_GATE_LOG", "debug")
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.lines().count() < 3 {
        return Err(format!("expected debug log lines on stderr, got:\n{stderr}"));
    }
    if stderr.contains('\u{1b}') || String::from_utf8_lossy(&out.stdout).contains('\u{1b}') {
        return Err(format!("ANSI escape codes in a pipe:\n{}", stderr.lines().take(5).collect::<Vec<_>>().join("\n")));
    }
    Ok(())
}

/// `layout-gate --version` names the commit it was built from.
pub fn version_names_the_commit() -> Result<(), String> {
    let out = bin().arg("--version").output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output();
    match head {
        Ok(h) if h.status.success() => {
            let commit = String::from_utf8_lossy(&h.stdout).trim().to_string();
            if text.contains(&commit) { Ok(()) } else { Err(format!("--version says {text:?}; HEAD is {commit}")) }
        }
        _ => {
            if text.contains("unknown commit") {
                Ok(())
            } else {
                Err(format!("--version says {text:?} outside git"))
            }
        }
    }
}

/// The command reference: every command's synopsis and most examples (scripts/readme.sh
/// regenerates them from the binary).
const COMMAND_REFERENCE: &str = "docs/commands.md";

fn read_doc(rel: &str) -> Result<String, String> {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)).map_err(|e| format!("{rel}: {e}"))
}

/// README.md and every Markdown file of docs/: wherever a `$ layout-gate` example is shown.
fn documents() -> Result<Vec<(String, String)>, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut names = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .map_err(|e| format!("docs/: {e}"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names.into_iter().map(|n| read_doc(&n).map(|t| (n, t))).collect()
}

/// The blocks between `<!-- {open}...-->` and `<!-- /{close} -->`: (the marker's text, the body).
fn blocks<'a>(text: &'a str, open: &str, close: &str) -> Vec<(&'a str, &'a str)> {
    let mut out = Vec::new();
    let mut rest = text;
    let start = format!("<!-- {open}");
    let end = format!("<!-- /{close} -->");
    while let Some(i) = rest.find(&start) {
        let after = &rest[i + start.len()..];
        let Some(m) = after.find("-->") else { break };
        let marker = after[..m].trim();
        let body_start = &after[m + 3..];
        let Some(j) = body_start.find(&end) else { break };
        out.push((marker, &body_start[..j]));
        rest = &body_start[j + end.len()..];
    }
    out
}

/// The text of the first fenced block in `body`.
fn fenced(body: &str) -> Option<String> {
    let start = body.find("```")?;
    let after = &body[start + 3..];
    let after = &after[after.find('\n')? + 1..];
    let end = after.find("```")?;
    Some(after[..end].trim_end().to_string())
}

fn help_of(args: &[&str]) -> Result<String, String> {
    let out = bin().args(args).arg("--help").output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("layout-gate {} --help: {}", args.join(" "), out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// Every command's synopsis in the command reference (docs/commands.md) is its `--help`, and
/// every command `layout-gate --help` lists has one (scripts/readme.sh regenerates them).
pub fn readme_synopses_are_the_help() -> Result<(), String> {
    let text = read_doc(COMMAND_REFERENCE)?;
    let shown = blocks(&text, "help:", "help");
    let mut problems = Vec::new();
    for (cmd, body) in &shown {
        let args: Vec<&str> = cmd.split_whitespace().collect();
        let want = help_of(&args)?;
        match fenced(body) {
            Some(got) if got == want => {}
            Some(_) => problems.push(format!("`layout-gate {cmd} --help` differs from {COMMAND_REFERENCE} (run scripts/readme.sh)")),
            None => problems.push(format!("help block {cmd:?} has no fenced text")),
        }
    }
    let top = help_of(&[])?;
    let commands = top.split("Commands:").nth(1).ok_or("no Commands: in layout-gate --help")?;
    for line in commands.lines().take_while(|l| !l.trim().is_empty()) {
        let Some(name) = line.split_whitespace().next() else { continue };
        if name != "help" && !shown.iter().any(|(cmd, _)| cmd.split_whitespace().next() == Some(name)) {
            problems.push(format!(
                "{COMMAND_REFERENCE} shows no `layout-gate {name} --help`: add a section with `<!-- help: {name} -->` and `<!-- /help -->` and run scripts/readme.sh"
            ));
        }
    }
    if shown.is_empty() {
        problems.push(format!("no help blocks in {COMMAND_REFERENCE}"));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}

/// Splits a README command line as the shell would for the quoting the README uses (plain
/// words and '...').
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in line.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The published answers (docs/answers.md): each example there is the command that reproduces
/// an answer, so it must pass (exit 0), not merely run; a failing one would publish an answer the
/// model no longer gives.
const ANSWERS: &str = "docs/answers.md";

/// Every `$ layout-gate ...` line of an example block in README.md and docs/ runs: no usage
/// error, no panic, exit 0 or 1 (1: the examples of errors), and exit 0 in the answers page.
/// Probes run against whatever listens on the examples' port (nothing, here: `refused` is
/// still a run).
pub fn readme_commands_run() -> Result<(), String> {
    envoy_check()?;
    let mut problems = Vec::new();
    let mut ran = 0;
    let mut in_reference = 0;
    let mut in_answers = 0;
    for (doc, text) in documents()? {
        for (_, body) in blocks(&text, "example", "example") {
            for line in body.lines().filter_map(|l| l.strip_prefix("$ layout-gate ")) {
                let args = words(line);
                let out = bin().args(&args).output().map_err(|e| e.to_string())?;
                let stderr = String::from_utf8_lossy(&out.stderr);
                ran += 1;
                if doc == COMMAND_REFERENCE {
                    in_reference += 1;
                }
                let allowed: &[i32] = if doc == ANSWERS { &[0] } else { &[0, 1] };
                let passed = out.status.code().is_some_and(|c| allowed.contains(&c));
                if !passed || stderr.contains("panicked") || stderr.contains("\nUsage: ") {
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    problems.push(format!("{doc}: `layout-gate {line}`: {}\n{stdout}{stderr}", out.status));
                }
                if doc == ANSWERS {
                    in_answers += 1;
                }
            }
        }
    }
    if ran == 0 || in_reference == 0 {
        problems.push(format!("no `$ layout-gate` commands in the examples of {COMMAND_REFERENCE}"));
    }
    if in_answers == 0 {
        problems.push(format!("no `$ layout-gate` commands in the examples of {ANSWERS}"));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}

/// Three fixtures of the 1.19.6 and 1.20 lines on every pinned version: the 7 case-version
/// pairs without an expectation are said to be left out once, and the final count is of the 5
/// that ran (it read "7 not run" before, as if something had been lost).
pub fn left_out_not_counted() -> Result<(), String> {
    envoy_check()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = bin()
        .args(["run", "--lane", "model", "--case", "cilium/gateway-multi-port-*", "--evidence-dir"])
        .arg(dir.path())
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || stdout.lines().last() != Some("11 passed, 0 failed, 0 not run") {
        return Err(format!("exit {}; stdout:\n{stdout}\nstderr:\n{stderr}", out.status));
    }
    if !format!("{stdout}{stderr}").contains("7 case-version pair(s) without an expectation left out") {
        return Err(format!("the left-out pairs are not said:\n{stdout}\n{stderr}"));
    }
    Ok(())
}

/// `--fail-fast --jobs 1`: the first case fails, the second never starts and is counted as not
/// run, and the exit status says a case failed.
pub fn fail_fast_starts_no_new_case() -> Result<(), String> {
    envoy_check()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = bin()
        .args(["run", "--lane", "model", "--cases", "harness/tests/data/run/fail-fast", "--cilium", "1.19.6", "--jobs", "1", "--fail-fast"])
        .arg("--evidence-dir")
        .arg(dir.path())
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.code() != Some(1) || !stdout.contains("FAIL model 1.19.6 a-fails") || stdout.contains("b-passes") {
        return Err(format!("exit {}; stdout:\n{stdout}", out.status));
    }
    if stdout.lines().last() != Some("0 passed, 1 failed, 1 not run") {
        return Err(format!("final line of:\n{stdout}"));
    }
    let evs = evidences(dir.path())?;
    if evs.len() != 1 || evs[0].cases.len() != 1 || evs[0].interrupted {
        return Err(format!("{} evidence folders; want one with a-fails only, not interrupted", evs.len()));
    }
    Ok(())
}

/// Stdout on a full disk (`> /dev/full`): the run says once that it cannot print, goes on, and
/// writes its evidence.
pub fn full_stdout_keeps_evidence() -> Result<(), String> {
    envoy_check()?;
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").map_err(|e| format!("/dev/full: {e}"))?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = bin()
        .args(["run", "--lane", "model", "--case", "edge-mode", "--evidence-dir"])
        .arg(dir.path())
        .stdout(full)
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(0) || stderr.contains("panicked") || stderr.matches("writing output").count() != 1 {
        return Err(format!("exit {}; stderr:\n{stderr}", out.status));
    }
    let evs = evidences(dir.path())?;
    if evs.is_empty() || evs.iter().any(|e| e.cases.len() != 1) {
        return Err(format!("{} evidence folders after a full stdout", evs.len()));
    }
    Ok(())
}

/// Where the pins come from (issue 17): outside a checkout a binary uses the pins embedded when
/// it was built and says nothing; inside one (a `kind-config/versions.yaml` found upwards) it
/// says which file it read; `--versions-file` wins and is said too. Before, a binary run
/// elsewhere silently read the checkout it was built in.
pub fn pins_outside_a_checkout() -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let run = |dir: &std::path::Path, args: &[&str]| -> Result<(String, String), String> {
        let out = bin().current_dir(dir).args(args).output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("layout-gate {}: {}\n{}", args.join(" "), out.status, String::from_utf8_lossy(&out.stderr)));
        }
        Ok((String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned()))
    };
    let (out, err) = run(tmp.path(), &["versions"])?;
    if !err.is_empty() || !out.contains("1.19.5") {
        return Err(format!("outside a checkout: stdout {out:?}, stderr {err:?}"));
    }
    // A checkout of another project (a platform's repository with its own pins).
    let own = tmp.path().join("platform");
    std::fs::create_dir_all(own.join("kind-config/sub")).map_err(|e| e.to_string())?;
    let pins = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/check/versions.yaml"))
        .map_err(|e| e.to_string())?;
    std::fs::write(own.join("kind-config/versions.yaml"), pins.replace("default: 1.19.5", "default: 1.19.6")).map_err(|e| e.to_string())?;
    let (out, err) = run(&own.join("kind-config/sub"), &["versions", "--json"])?;
    if !err.contains("found from the current folder") || !out.contains("\"default\":\"1.19.6\"") {
        return Err(format!("in a checkout: stdout {out:?}, stderr {err:?}"));
    }
    let flag = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/check/versions.yaml");
    let (_, err) = run(tmp.path(), &["versions", "--versions-file", &flag.display().to_string()])?;
    if !err.contains("(--versions-file)") {
        return Err(format!("--versions-file: stderr {err:?}"));
    }
    Ok(())
}

/// A pinned version the model has not been checked at (issue 17): `check` refuses it, naming
/// the checked versions and `--assume-like`; with `--assume-like 1.20.1` it answers, and every
/// output says whose behaviour was assumed.
pub fn unchecked_version_assumed_aloud() -> Result<(), String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let pins = std::fs::read_to_string(root.join("harness/tests/data/check/versions.yaml")).map_err(|e| e.to_string())?;
    let entry = pins.split("  - version: 1.20.1").nth(1).ok_or("no 1.20.1 entry in the test pins")?;
    let with = format!("{pins}  - version: 1.20.9{}", entry.replace("chart: 1.20.1", "chart: 1.20.9"));
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = tmp.path().join("versions.yaml");
    std::fs::write(&file, with).map_err(|e| e.to_string())?;
    let input = root.join("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml");
    let args = |extra: &[&str]| {
        let mut a = vec!["check".to_string(), "--no-envoy".into(), "--versions-file".into(), file.display().to_string()];
        a.extend(extra.iter().map(|s| s.to_string()));
        a.push(input.display().to_string());
        a
    };
    // Every pin (no --cilium): the unchecked one is left out, and said.
    let out = bin().args(args(&[])).output().map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    if !err.contains("left out: Cilium 1.20.9 (pinned, but the model has not been checked at it") || text.contains("1.20.9") {
        return Err(format!("every pin: {} {err}\n{text}", out.status));
    }
    // Named, without --assume-like: refused.
    let out = bin().args(args(&["--cilium", "1.20.9"])).output().map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(2) || !err.contains("Cilium 1.20.9 is pinned, but the model has not been checked at it") {
        return Err(format!("without --assume-like: {} {err}", out.status));
    }
    for format in ["table", "markdown", "json"] {
        let out = bin().args(args(&["--assume-like", "1.20.1", "--format", format])).output().map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout);
        let said = match format {
            "json" => text.contains("\"assumed_like\": \"1.20.1\""),
            _ => text.contains("1.20.9: the model has not been checked at it; predicted with 1.20.1's behaviour (--assume-like 1.20.1)"),
        };
        if out.status.code() != Some(1) || !said {
            return Err(format!(
                "--assume-like 1.20.1 --format {format}: {}\n{text}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    // The model lane too: refused, then run with the assumption written into its evidence.
    let evidence = tmp.path().join("evidence");
    let run = |extra: &[&str]| {
        let mut a: Vec<String> = ["run", "--lane", "model", "--case", "dns01-default", "--cilium", "1.20.9", "--versions-file"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.push(file.display().to_string());
        a.extend(["--evidence-dir".to_string(), evidence.display().to_string()]);
        a.extend(extra.iter().map(|s| s.to_string()));
        bin().args(a).output()
    };
    let out = run(&[]).map_err(|e| e.to_string())?;
    if out.status.code() != Some(2) || !String::from_utf8_lossy(&out.stderr).contains("--assume-like") {
        return Err(format!("run without --assume-like: {} {}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    let out = run(&["--assume-like", "1.20.1"]).map_err(|e| e.to_string())?;
    let written: Vec<String> = std::fs::read_dir(&evidence)
        .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&out.stderr)))?
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("evidence.json")).ok())
        .collect();
    if !written
        .iter()
        .any(|t| t.contains("model of Cilium 1.20.9") && t.contains("predicted with 1.20.1's behaviour (--assume-like 1.20.1)"))
    {
        return Err(format!("run --assume-like: {} {}\n{written:?}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}
/// `report --junit PATH` and `--out DIR` as a user (here root) runs them: a symbolic link, a
/// FIFO, a device node made in the trial's own folder, and a linked `--out` folder are each
/// refused with what they are, and each is still there afterwards, unchanged. (Run as root,
/// `--junit /dev/full` replaced the real /dev/full with a regular file.)
pub fn report_never_replaces_what_is_not_ours() -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let target = tmp.path().join("target.txt");
    std::fs::write(&target, "keep").map_err(|e| e.to_string())?;
    let link = tmp.path().join("link.xml");
    std::os::unix::fs::symlink(&target, &link).map_err(|e| e.to_string())?;
    let fifo = tmp.path().join("fifo.xml");
    let made = Command::new("mkfifo").arg(&fifo).status().map_err(|e| format!("mkfifo: {e}"))?;
    // As root, a device of our own (the null device's numbers); otherwise /dev/null itself,
    // which a non-root rename could not replace anyway.
    let root = Command::new("id").arg("-u").output().map_err(|e| e.to_string())?.stdout.starts_with(b"0\n");
    let device = if root {
        let d = tmp.path().join("device.xml");
        Command::new("mknod").arg(&d).args(["c", "1", "3"]).status().map_err(|e| format!("mknod: {e}"))?;
        d
    } else {
        PathBuf::from("/dev/null")
    };
    if !made.success() {
        return Err("mkfifo failed".into());
    }
    let report = |args: &[&std::ffi::OsStr]| {
        bin().arg("report").arg("harness/tests/data/report/real").arg("--allow-problems").args(args).output().map_err(|e| e.to_string())
    };
    for (path, what) in [(&link, "a symbolic link"), (&fifo, "a FIFO"), (&device, "a character device")] {
        let out = report(&["--junit".as_ref(), path.as_os_str()])?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(1) || !stderr.contains(&format!("is {what}")) || stderr.contains("panicked") {
            return Err(format!("--junit {}: {}; stderr:\n{stderr}", path.display(), out.status));
        }
    }
    let kinds = |p: &Path| std::fs::symlink_metadata(p).map(|m| m.file_type()).map_err(|e| e.to_string());
    if !kinds(&link)?.is_symlink() || !kinds(&fifo)?.is_fifo() || !kinds(&device)?.is_char_device() {
        return Err("a refused destination was changed".into());
    }
    if std::fs::read_to_string(&target).map_err(|e| e.to_string())? != "keep" {
        return Err("the link's target was written".into());
    }
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).map_err(|e| e.to_string())?;
    let out_link = tmp.path().join("out");
    std::os::unix::fs::symlink(&real, &out_link).map_err(|e| e.to_string())?;
    let out = report(&["--out".as_ref(), out_link.as_os_str()])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(1)
        || !stderr.contains("is a symbolic link")
        || std::fs::read_dir(&real).map_err(|e| e.to_string())?.count() != 0
    {
        return Err(format!("--out through a link: {}; stderr:\n{stderr}", out.status));
    }
    Ok(())
}

/// Where a command's stdout goes in [`no_command_panics_on_stdout_errors`].
#[derive(Debug, Clone, Copy)]
enum Stdout {
    /// File descriptor 1 closed before the program starts (`>&-`).
    Closed,
    /// A pipe whose reader is gone before anything is written (`| head -0`).
    ReaderGone,
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
}

/// Every subcommand (and `--help`, `--version`), with stdout closed, into a pipe nobody reads,
/// and on `/dev/full`: none panics (exit 101, "panicked" on stderr). `case new NAME --from FILE
/// | head -0` and `> /dev/full` exited 101 after writing the case.
pub fn no_command_panics_on_stdout_errors() -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    envoy_check()?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let input = tmp.path().join("gateway.yaml");
    std::fs::write(&input, crate::process_trials::many_listeners(2)).map_err(|e| e.to_string())?;
    // A port that refuses: held, never listening.
    let refused = layout_gate::envoy::HeldAddrs::reserve([()]).map_err(|e| e.to_string())?;
    let probe_at = refused[&()].to_string();
    let (input, cases, evidence) = (input.display().to_string(), tmp.path().join("cases"), tmp.path().join("evidence"));
    let (cases, evidence) = (cases.display().to_string(), evidence.display().to_string());
    let commands: Vec<Vec<String>> = [
        vec!["--help"],
        vec!["--version"],
        vec!["lint", "cases/dns01-default"],
        vec!["versions", "--json"],
        vec!["explain", "dns01-default", "--cilium", "1.19.6"],
        vec!["envoy", "summarize", "harness/tests/data/envoy-dumps/cec-worked-example.json"],
        vec!["report", "harness/tests/data/report/real", "--allow-problems"],
        vec!["replay", "harness/tests/data/replay/worked-example-1.19.5"],
        vec!["check", &input, "--cilium", "1.20.1"],
        vec!["case", "new", "NAME", "--from", &input, "--cases", &cases, "--cilium", "1.20.1"],
        vec!["run", "--lane", "model", "--list"],
        vec!["run", "--lane", "model", "--case", "edge-mode", "--cilium", "1.19.6", "--evidence-dir", &evidence],
        vec!["run", "--lane", "kind", "--dry-run", "--case", "dns01-default", "--cilium", "1.19.6"],
        vec!["probe", &probe_at, "--sni", "a.example.test"],
    ]
    .iter()
    .map(|c| c.iter().map(|s| s.to_string()).collect())
    .collect();
    let mut problems = Vec::new();
    for (i, mode) in [Stdout::Closed, Stdout::ReaderGone, Stdout::Full].into_iter().enumerate() {
        for args in &commands {
            let args: Vec<String> = args.iter().map(|a| if a == "NAME" { format!("new-{i}") } else { a.clone() }).collect();
            let mut cmd = bin();
            cmd.args(&args).stdin(Stdio::null()).stderr(Stdio::piped());
            let out = match mode {
                Stdout::Closed => {
                    // SAFETY: close(2) between fork and exec, nothing else.
                    unsafe {
                        cmd.pre_exec(|| {
                            libc::close(1);
                            Ok(())
                        });
                    }
                    cmd.stdout(Stdio::inherit()).output()
                }
                Stdout::ReaderGone => {
                    let mut child = cmd.stdout(Stdio::piped()).spawn().map_err(|e| e.to_string())?;
                    drop(child.stdout.take());
                    child.wait_with_output()
                }
                Stdout::Full => {
                    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").map_err(|e| format!("/dev/full: {e}"))?;
                    cmd.stdout(full).output()
                }
            }
            .map_err(|e| format!("{args:?}: {e}"))?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.code() == Some(101) || out.status.code().is_none() || stderr.contains("panicked") {
                problems.push(format!("{args:?} with stdout {mode:?}: {}; stderr:\n{stderr}", out.status));
            }
        }
    }
    // `case new` wrote its case every time, whatever became of its output.
    for i in 0..3 {
        if !tmp.path().join(format!("cases/new-{i}/case.yaml")).is_file() {
            problems.push(format!("case new-{i} was not written"));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}
