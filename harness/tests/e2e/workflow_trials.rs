//! `workflow::check_layout::*`: the reusable workflow `.github/workflows/check-layout.yaml` run
//! here. Its steps' logic lives in `scripts/check-layout/`; these trials hold the workflow to
//! calling exactly those scripts (`calls_only_its_scripts`) and run its jobs' steps, in order,
//! as the runner would, against a temporary platform repository: `GITHUB_WORKSPACE` with the
//! platform at `platform/` and the layout-gate checkout at `layout-gate/` (a link to this
//! repository), `GITHUB_ENV`, `GITHUB_PATH`, `GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY` temporary
//! files applied between steps as Actions applies them. The install steps are pointed at what
//! is installed here: `LAYOUT_GATE_BIN` (this build's binary: nothing is built) and `ENVOY_BIN`
//! (the Envoy the suite uses: nothing is installed); each still runs and must put its tool on the
//! next steps' PATH or environment. The kind job runs with `LG_LANE=model` (no container engine
//! here): the same `case new` and `run`, on the model lane.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const WORKFLOW: &str = ".github/workflows/check-layout.yaml";
const SCRIPTS: &str = "scripts/check-layout";
/// How a step calls a script: the whole of its `run:`.
const CALL_PREFIX: &str = "\"$LG_SCRIPTS/";

fn workflow() -> Result<Value, String> {
    let text = std::fs::read_to_string(repo().join(WORKFLOW)).map_err(|e| format!("{WORKFLOW}: {e}"))?;
    serde_saphyr::from_str(&text).map_err(|e| format!("{WORKFLOW}: {e}"))
}

/// The script a step's `run:` calls, when it calls one and does nothing else.
fn called_script(run: &str) -> Option<&str> {
    let name = run.trim().strip_prefix(CALL_PREFIX)?.strip_suffix('"')?;
    (name.ends_with(".sh") && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')).then_some(name)
}

/// Problems of `wf` against the scripts in `scripts`: a `run:` that is not exactly one call of a
/// script there, a called script that does not exist, a script no step calls, or a job whose
/// `LG_SCRIPTS` is not the layout-gate checkout's folder of them.
fn drift(wf: &Value, scripts: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut called: Vec<String> = Vec::new();
    let jobs = wf["jobs"].as_object().cloned().unwrap_or_default();
    if jobs.is_empty() {
        problems.push("no jobs".into());
    }
    for (job, j) in &jobs {
        if j["env"]["LG_SCRIPTS"].as_str() != Some("${{ github.workspace }}/layout-gate/scripts/check-layout") {
            problems.push(format!("job {job}: env LG_SCRIPTS is {}, not the layout-gate checkout's {SCRIPTS}", j["env"]["LG_SCRIPTS"]));
        }
        for (i, step) in j["steps"].as_array().into_iter().flatten().enumerate() {
            let Some(run) = step.get("run") else { continue };
            let run = run.as_str().unwrap_or_default();
            match called_script(run) {
                Some(s) if scripts.iter().any(|x| x == s) => called.push(s.to_string()),
                Some(s) => problems.push(format!("job {job} step {i}: calls {SCRIPTS}/{s}, which does not exist")),
                None => problems.push(format!("job {job} step {i}: run: {run:?} holds logic that is not one script of {SCRIPTS}")),
            }
        }
    }
    for s in scripts {
        if !called.contains(s) {
            problems.push(format!("{SCRIPTS}/{s}: no step of the workflow calls it"));
        }
    }
    problems
}

fn scripts() -> Result<Vec<String>, String> {
    let mut out: Vec<String> = std::fs::read_dir(repo().join(SCRIPTS))
        .map_err(|e| format!("{SCRIPTS}: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".sh"))
        .collect();
    out.sort();
    Ok(out)
}

/// The workflow calls exactly the scripts of `scripts/check-layout/`, and this check sees a
/// step that does more (so it cannot drift from the workflow unnoticed).
pub fn calls_only_its_scripts() -> Result<(), String> {
    let wf = workflow()?;
    let scripts = scripts()?;
    if scripts.len() < 5 {
        return Err(format!("{SCRIPTS} holds {scripts:?}"));
    }
    let problems = drift(&wf, &scripts);
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    // The check itself: logic beside the call, an unknown script and an uncalled one are seen.
    let mut bad = wf.clone();
    bad["jobs"]["check"]["steps"][4]["run"] = Value::String("\"$LG_SCRIPTS/check.sh\" || true".into());
    bad["jobs"]["kind"]["steps"][3]["run"] = Value::String("\"$LG_SCRIPTS/other.sh\"".into());
    let found = drift(&bad, &scripts);
    let want = ["holds logic", "other.sh, which does not exist", "lane.sh: no step of the workflow calls it"];
    if want.iter().all(|w| found.iter().any(|f| f.contains(w))) {
        Ok(())
    } else {
        Err(format!("the drift check missed a mutation: {found:?}"))
    }
}

/// A job's environment, its `${{ inputs.X }}` and `${{ github.workspace }}` put in.
fn job_env(job: &Value, inputs: &BTreeMap<&str, String>, declared: &Value, workspace: &Path) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (k, v) in job["env"].as_object().into_iter().flatten() {
        let mut v = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        v = v.replace("${{ github.workspace }}", &workspace.display().to_string());
        while let Some(start) = v.find("${{ inputs.") {
            let end = v[start..].find("}}").ok_or_else(|| format!("env {k}: unclosed expression"))? + start;
            let name = v[start + "${{ inputs.".len()..end].trim().to_string();
            let value = match inputs.get(name.as_str()) {
                Some(x) => x.clone(),
                None => declared[&name]["default"].as_str().map(str::to_string).ok_or_else(|| format!("input {name} has no value"))?,
            };
            v.replace_range(start..end + 2, &value);
        }
        out.push((k.clone(), v));
    }
    Ok(out)
}

/// What one job run did.
struct JobRun {
    /// The status of the first step that failed (0: every step passed).
    status: i32,
    summary: String,
    outputs: String,
    /// The folders the upload steps upload, relative to the workspace.
    uploads: Vec<String>,
    log: String,
}

/// Runs `job`'s steps in `workspace` as the runner does: each `run:` with bash `-eo pipefail`
/// in the job's working directory, `GITHUB_ENV`/`GITHUB_PATH` lines applied to the next steps,
/// `uses:` steps skipped (the checkouts are the workspace's folders; uploads are returned).
fn run_job(wf: &Value, job: &str, inputs: &BTreeMap<&str, String>, workspace: &Path, extra: &[(&str, String)]) -> Result<JobRun, String> {
    let j = &wf["jobs"][job];
    let declared = &wf["on"]["workflow_call"]["inputs"];
    let files = workspace.join("runner");
    std::fs::create_dir_all(&files).map_err(|e| e.to_string())?;
    let file = |n: &str| files.join(format!("{job}-{n}"));
    for n in ["env", "path", "output", "summary"] {
        std::fs::write(file(n), "").map_err(|e| e.to_string())?;
    }
    let mut env = job_env(j, inputs, declared, workspace)?;
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let dir = workspace.join(j["defaults"]["run"]["working-directory"].as_str().unwrap_or("."));
    let mut run = JobRun { status: 0, summary: String::new(), outputs: String::new(), uploads: Vec::new(), log: String::new() };
    for step in j["steps"].as_array().into_iter().flatten() {
        if let Some(uses) = step["uses"].as_str() {
            if uses.starts_with("actions/upload-artifact@") {
                run.uploads.push(step["with"]["path"].as_str().unwrap_or_default().to_string());
            }
            continue;
        }
        let script = step["run"].as_str().ok_or("a step with neither uses nor run")?;
        let added_path: String = std::fs::read_to_string(file("path")).unwrap_or_default().lines().rev().map(|l| format!("{l}:")).collect();
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script]).current_dir(&dir);
        cmd.env("PATH", format!("{added_path}{}", std::env::var("PATH").unwrap_or_default()));
        cmd.env("GITHUB_WORKSPACE", workspace).env("RUNNER_TEMP", &files);
        cmd.env("GITHUB_ENV", file("env")).env("GITHUB_PATH", file("path"));
        cmd.env("GITHUB_OUTPUT", file("output")).env("GITHUB_STEP_SUMMARY", file("summary"));
        cmd.env_remove("ENVOY_BIN").env_remove("LAYOUT_GATE_BIN");
        for (k, v) in &env {
            cmd.env(k, v);
        }
        for l in std::fs::read_to_string(file("env")).unwrap_or_default().lines() {
            if let Some((k, v)) = l.split_once('=') {
                cmd.env(k, v);
            }
        }
        let out = cmd.output().map_err(|e| format!("bash: {e}"))?;
        run.log.push_str(&format!(
            "== {}\n{}{}",
            step["name"].as_str().unwrap_or(script),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
        if !out.status.success() {
            run.status = out.status.code().unwrap_or(-1);
            break;
        }
    }
    run.summary = std::fs::read_to_string(file("summary")).unwrap_or_default();
    run.outputs = std::fs::read_to_string(file("output")).unwrap_or_default();
    for (n, want) in [("path", "the layout-gate binary's folder"), ("env", "ENVOY_BIN=")] {
        let text = std::fs::read_to_string(file(n)).unwrap_or_default();
        run.log.push_str(&format!("== GITHUB_{} ({want}):\n{text}", n.to_uppercase()));
    }
    Ok(run)
}

/// A platform repository in a temporary workspace: `platform/deploy/rendered/` holds `layout`,
/// `platform/pins.yaml` the test pins; `layout-gate/` is this repository.
fn workspace(layout: &str) -> Result<tempfile::TempDir, String> {
    let ws = tempfile::tempdir().map_err(|e| e.to_string())?;
    let rendered = ws.path().join("platform/deploy/rendered");
    std::fs::create_dir_all(&rendered).map_err(|e| e.to_string())?;
    std::fs::copy(repo().join("harness/tests/data/check").join(layout), rendered.join(layout)).map_err(|e| e.to_string())?;
    std::fs::copy(repo().join("harness/tests/data/check/versions.yaml"), ws.path().join("platform/pins.yaml"))
        .map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(repo(), ws.path().join("layout-gate")).map_err(|e| e.to_string())?;
    Ok(ws)
}

fn installed() -> Result<Vec<(&'static str, String)>, String> {
    let envoy = layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    Ok(vec![("LAYOUT_GATE_BIN", env!("CARGO_BIN_EXE_layout-gate").to_string()), ("ENVOY_BIN", envoy.path().display().to_string())])
}

fn inputs(fail_on: &str) -> BTreeMap<&'static str, String> {
    BTreeMap::from([
        ("manifests", "deploy/rendered".to_string()),
        ("layout-gate-repository", "example/layout-gate".to_string()),
        ("layout-gate-ref", "0000000000000000000000000000000000000000".to_string()),
        ("versions-file", "pins.yaml".to_string()),
        ("baseline", String::new()),
        ("fail-on", fail_on.to_string()),
    ])
}

/// The check job on a layout that passes and on one that fails its `--fail-on`: the summary is
/// check's Markdown, the JSON is in the folder the upload step uploads, the `status` output and
/// the job's status follow check's exit status.
pub fn check_job_runs_here() -> Result<(), String> {
    let wf = workflow()?;
    let mut problems = Vec::new();
    for (layout, fail_on, want_status) in
        [("http-redirect-and-backend.yaml", "unreachable", 0), ("cozystack-dns01-app-namespaces.yaml", "conflicted", 1)]
    {
        let ws = workspace(layout)?;
        let run = run_job(&wf, "check", &inputs(fail_on), ws.path(), &installed()?)?;
        let say = |p: &mut Vec<String>, m: String| p.push(format!("{layout} (--fail-on {fail_on}): {m}"));
        if run.status != want_status {
            say(&mut problems, format!("the job ended {}, want {want_status}\n{}", run.status, run.log));
            continue;
        }
        if !run.summary.contains("### layout-gate check") || !run.summary.contains("MODEL PREDICTION") {
            say(&mut problems, format!("the job summary is not check's Markdown:\n{}", run.summary));
        }
        if !run.outputs.lines().any(|l| l == format!("status={want_status}")) {
            say(&mut problems, format!("GITHUB_OUTPUT: {}", run.outputs));
        }
        let [upload] = run.uploads.as_slice() else {
            say(&mut problems, format!("uploads: {:?}", run.uploads));
            continue;
        };
        let json = ws.path().join(upload).join("check.json");
        match std::fs::read_to_string(&json).map(|t| serde_json::from_str::<Value>(&t)) {
            Ok(Ok(j)) if j["schema"] == "layout-gate-check" && j["gateways"].as_array().is_some_and(|g| !g.is_empty()) => {
                let failed = j["failed"].as_array().map(Vec::len).unwrap_or(0);
                if (failed > 0) != (want_status == 1) {
                    say(&mut problems, format!("JSON failed: {}", j["failed"]));
                }
            }
            other => say(&mut problems, format!("{} where the upload step expects the JSON: {other:?}", json.display())),
        }
        if want_status == 1 && !run.log.contains("a --fail-on kind happened") {
            say(&mut problems, format!("the Verdict step did not say why it failed:\n{}", run.log));
        }
        if !run.log.contains("not building") || !run.log.contains("not installing") {
            say(&mut problems, format!("an install step did not take what is installed:\n{}", run.log));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}

/// The kind job's steps, on the model lane: `case new` writes the platform's case and the lane
/// runs it, evidence where the upload step uploads it.
pub fn kind_job_runs_here_on_the_model_lane() -> Result<(), String> {
    let wf = workflow()?;
    let ws = workspace("http-redirect-and-backend.yaml")?;
    let mut extra = installed()?;
    extra.push(("LG_LANE", "model".to_string()));
    let run = run_job(&wf, "kind", &inputs(""), ws.path(), &extra)?;
    if run.status != 0 {
        return Err(format!("the job ended {}\n{}", run.status, run.log));
    }
    let case = ws.path().join("platform/layout-gate-cases/platform/case.yaml");
    let text = std::fs::read_to_string(&case).map_err(|e| format!("{}: {e}\n{}", case.display(), run.log))?;
    if !text.contains("plain: true") {
        return Err(format!("the case has no plain HTTP probe:\n{text}"));
    }
    let [upload] = run.uploads.as_slice() else { return Err(format!("uploads: {:?}", run.uploads)) };
    let evidence = ws.path().join(upload);
    let runs = std::fs::read_dir(&evidence).map_err(|e| format!("{}: {e}\n{}", evidence.display(), run.log))?.count();
    if runs == 0 {
        return Err(format!("no evidence in {}\n{}", evidence.display(), run.log));
    }
    Ok(())
}
