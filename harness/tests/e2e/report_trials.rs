//! The report as others see it: its summary size over the whole catalogue (fresh model-lane
//! runs on every pinned version), report.html rendered by headless Chromium, and every
//! junit.xml the e2e trials wrote read by a JUnit reader that is not ours (junitparser).
//!
//! Chromium and junitparser come from `scripts/install-report-tools.sh`; a trial that cannot
//! find them fails with that command, it never skips.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use layout_gate::evidence::{self, CiliumInfo, Evidence, Lane, ToolInfo};
use layout_gate::lanes::model;
use layout_gate::report::{self, Report, markdown::summary_part, merge::Cell};
use layout_gate::versions::Pins;

const INSTALL: &str =
    "scripts/install-report-tools.sh (Chromium: apt-get update && apt-get install -y chromium; junitparser: pip, into .tools/)";
/// The summary part (what shows before anything is unfolded) of the catalogue's report at every
/// pinned version must fit here: it is meant to be pasted into release notes.
const SUMMARY_LIMIT: usize = 30 * 1024;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn evidence_root() -> PathBuf {
    std::env::var_os("LAYOUT_GATE_EVIDENCE_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target/layout-gate-evidence"))
}

fn data(name: &str) -> PathBuf {
    repo().join("harness/tests/data/report").join(name)
}

/// The whole catalogue on every pinned version in the model lane, as `run --lane model` runs
/// it (one run per version), then the report over those runs: its summary part fits 30 KB.
pub fn catalogue_summary_fits() -> Result<(), String> {
    let pins = Pins::load_default().map_err(|p| p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))?;
    let cases =
        layout_gate::case::lint(&repo().join("cases")).map_err(|p| p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))?;
    let timeouts = model::model_timeouts().map_err(|e| e.to_string())?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let envoy = layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?.version().map_err(|e| e.to_string())?.raw;
    for pin in &pins.cilium {
        let started_at = evidence::now_rfc3339();
        let results: Vec<_> = runtime.block_on(
            futures::stream::iter(cases.iter().map(|c| model::run_case(c, &pin.version, &timeouts))).buffered(4).collect::<Vec<_>>(),
        );
        let mut phases = Vec::new();
        let mut evs = Vec::new();
        for (ev, p) in results {
            phases.extend(p);
            evs.push(ev);
        }
        let ev = Evidence {
            schema_version: evidence::SCHEMA_VERSION,
            tool: ToolInfo::current(),
            run_id: evidence::run_id(Lane::Model, Some(&pin.version.to_string()), None),
            lane: Lane::Model,
            status: evidence::RunStatus::Ran,
            selected: Some(evs.iter().map(|c| c.name.clone()).collect()),
            not_run: Vec::new(),
            interrupted: false,
            digest: None,
            cilium: Some(CiliumInfo { version: pin.version.to_string(), source: "e2e: the catalogue on every pinned version".into() }),
            started_at,
            finished_at: evidence::now_rfc3339(),
            phases,
            environment: model::environment(&envoy, &pin.version, None),
            certificates: Vec::new(),
            cases: evs,
        };
        evidence::write_run(tmp.path(), &ev).map_err(|e| e.to_string())?;
    }
    drop(runtime);
    let r = Report::build(report::load_all(&[tmp.path().to_path_buf()], &|p: &Path| p.display().to_string()));
    if !r.problems.is_empty() {
        return Err(format!("the catalogue's runs have problems: {:#?}", r.problems));
    }
    let md = r.markdown();
    let summary = summary_part(&md);
    println!(
        "report of {} cases at {} versions: summary part {} bytes (limit {SUMMARY_LIMIT}), report.md {} bytes",
        r.matrix.cases.len(),
        pins.cilium.len(),
        summary.len(),
        md.len()
    );
    if r.matrix.cases.len() != cases.len() {
        return Err(format!("{} cases in the report, {} in the catalogue", r.matrix.cases.len(), cases.len()));
    }
    if summary.len() > SUMMARY_LIMIT {
        return Err(format!("the summary part is {} bytes, over {SUMMARY_LIMIT}:\n{summary}", summary.len()));
    }
    // The whole document pastes into a pull-request comment; what it leaves out is in the HTML.
    let chars = md.chars().count();
    if chars >= report::markdown::PASTE_LIMIT {
        return Err(format!("report.md has {chars} characters, not under {}", report::markdown::PASTE_LIMIT));
    }
    let id: String = cases[0].name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    if !r.html().contains(&format!("id=\"case-{id}\"")) {
        return Err(format!("report.html lacks the case {}", cases[0].name));
    }
    Ok(())
}

/// Chromium: `LAYOUT_GATE_CHROMIUM`, else `chromium`, `chromium-browser` or `google-chrome` on PATH.
fn chromium() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("LAYOUT_GATE_CHROMIUM") {
        return Ok(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err(format!("Chromium not found (set LAYOUT_GATE_CHROMIUM or put chromium on PATH); install it with {INSTALL}"))
}

/// Runs headless Chromium on `url` with `extra` arguments; returns its stdout. Killed after two
/// minutes: a browser that hangs must not hang the suite (a guard, not a timing check).
fn run_chromium(chromium: &Path, extra: &[String], url: &str) -> Result<String, String> {
    let profile = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out_path = profile.path().join("stdout");
    let err_path = profile.path().join("stderr");
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.path().join("profile").display()))
    .args(extra)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(&out_path).map_err(|e| e.to_string())?)
    .stderr(std::fs::File::create(&err_path).map_err(|e| e.to_string())?);
    let mut child = cmd.spawn().map_err(|e| format!("starting {}: {e}; install Chromium with {INSTALL}", chromium.display()))?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) => break s,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} did not finish within 120 s", chromium.display()));
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    if !status.success() {
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        return Err(format!("{} exited with {status}:\n{stderr}", chromium.display()));
    }
    Ok(stdout)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// The value of attribute `name` in a start tag's text.
fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let len = tag[start..].find('"')?;
    Some(unescape(&tag[start..start + len]))
}

/// Text content of an element's inner HTML: tags dropped, entities resolved.
fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    unescape(out.trim())
}

/// Matrix cells: (case, column) -> (class, text).
type Cells = BTreeMap<(String, String), (String, String)>;

/// Every matrix cell in a DOM.
fn matrix_cells(dom: &str) -> Result<Cells, String> {
    let mut cells = BTreeMap::new();
    let mut rest = dom;
    while let Some(i) = rest.find("<td ") {
        rest = &rest[i..];
        let tag_end = rest.find('>').ok_or("an unterminated <td> in the DOM")?;
        let tag = &rest[..tag_end];
        let close = rest.find("</td>").ok_or("a <td> without </td> in the DOM")?;
        if let (Some(case), Some(column)) = (attr(tag, "data-case"), attr(tag, "data-column")) {
            let class = attr(tag, "class").unwrap_or_default();
            if cells.insert((case.clone(), column.clone()), (class, text_of(&rest[tag_end + 1..close]))).is_some() {
                return Err(format!("two matrix cells for {case} on {column}"));
            }
        }
        rest = &rest[close..];
    }
    Ok(cells)
}

/// What a cell must say, from the matrix itself (not from the renderer's status helper).
fn expected_cell(r: &Report, case: &str, column: &report::Column) -> (String, String) {
    let changed = r.changes.iter().any(|c| c.case == case && c.lane == column.lane && Some(&c.to_version) == column.cilium.as_ref());
    let delta = if changed { "Δ" } else { "" };
    let (class, words) = match r.matrix.cases[case].cells.get(column) {
        None | Some(Cell::NotRun { .. }) => ("notrun", "not run".to_string()),
        Some(Cell::Disagreeing { .. }) => ("disagree", "disagree".into()),
        Some(Cell::Observed { facts, verdicts, .. }) => {
            let failed = verdicts.iter().filter(|v| !v.passed()).count();
            match (facts.outcome, &facts.error) {
                (layout_gate::judge::Outcome::Pass, _) => ("pass", "pass".into()),
                (_, Some(_)) if failed == 0 => ("error", "error".into()),
                _ => ("fail", format!("FAIL {failed}/{}", verdicts.len())),
            }
        }
    };
    (class.into(), format!("{words}{delta}"))
}

/// report.html over hand-written runs with every kind of cell (pass, fail, not run, runs that
/// disagree, changes), loaded by headless Chromium: each matrix cell the browser shows is the
/// one the report's matrix says, the heat map is there, and a screenshot is taken (written to
/// target/layout-gate-report/report.png to look at).
pub fn html_matrix_in_chromium() -> Result<(), String> {
    let chromium = chromium()?;
    let r = Report::build(report::load_all(&[data("handwritten"), data("bad")], &|p: &Path| p.display().to_string()));
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    report::write_report(tmp.path(), &r.rendered()).map_err(|e| e.to_string())?;
    let url = format!("file://{}", tmp.path().join("report.html").display());
    let dom = run_chromium(&chromium, &["--dump-dom".to_string()], &url)?;
    let shown = matrix_cells(&dom)?;
    let mut want = BTreeMap::new();
    for row in r.matrix.cases.values() {
        for lane in [Lane::Kind, Lane::Model, Lane::Fixture] {
            if !row.cells.keys().any(|c| c.lane == lane) {
                continue;
            }
            for column in r.matrix.columns.keys().filter(|c| c.lane == lane) {
                want.insert((row.name.clone(), column.to_string()), expected_cell(&r, &row.name, column));
            }
        }
    }
    if want.len() < 6 {
        return Err(format!("the fixture report has only {} cells; the check needs the hand-written runs", want.len()));
    }
    let kinds: BTreeSet<&str> = want.values().map(|(c, _)| c.as_str()).collect();
    for k in ["pass", "fail", "notrun", "disagree"] {
        if !kinds.contains(k) {
            return Err(format!("no {k} cell in the fixture report: the check would not see that kind rendered"));
        }
    }
    if shown != want {
        let mut diff = Vec::new();
        for (k, v) in &want {
            match shown.get(k) {
                Some(s) if s == v => {}
                other => diff.push(format!("{} on {}: want {v:?}, Chromium shows {other:?}", k.0, k.1)),
            }
        }
        for k in shown.keys().filter(|k| !want.contains_key(*k)) {
            diff.push(format!("{} on {}: shown but not in the matrix", k.0, k.1));
        }
        return Err(format!("the rendered matrix differs from the report:\n{}", diff.join("\n")));
    }
    // The heat map is inline, with one cell per case and column.
    let heat = dom.find("id=\"heat-map\"").ok_or("no heat map (svg#heat-map) in the rendered page")?;
    let heat_end = dom[heat..].find("</svg>").ok_or("the heat map svg is not closed")? + heat;
    let heat_cells = dom[heat..heat_end].matches("class=\"cell ").count();
    let want_heat = r.matrix.cases.len() * r.matrix.columns.len();
    if heat_cells != want_heat {
        return Err(format!("the heat map shows {heat_cells} cells, want {want_heat} (cases × columns)"));
    }
    // A screenshot, for people to look at; it must be a PNG of the window asked for.
    let shots = repo().join("target/layout-gate-report");
    std::fs::create_dir_all(&shots).map_err(|e| e.to_string())?;
    let png = shots.join("report.png");
    run_chromium(&chromium, &[format!("--screenshot={}", png.display()), "--window-size=1400,1800".into()], &url)?;
    let bytes = std::fs::read(&png).map_err(|e| format!("{}: {e}", png.display()))?;
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]) != 1400 {
        return Err(format!("{} is not a 1400 px wide PNG", png.display()));
    }
    println!("report.html: {} matrix cells as the report says; screenshot {}", shown.len(), png.display());
    Ok(())
}

/// The run folders under the evidence root now (to tell which ones this invocation wrote).
pub fn run_folders() -> BTreeSet<PathBuf> {
    std::fs::read_dir(evidence_root())
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.join("junit.xml").is_file()).collect())
        .unwrap_or_default()
}

fn junit_python() -> Result<PathBuf, String> {
    let python = std::env::var_os("LAYOUT_GATE_REPORT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".tools/report-tools-venv/bin/python"));
    let ok = Command::new(&python)
        .args(["-c", "import junitparser"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok { Ok(python) } else { Err(format!("junitparser not found at {}: install it with {INSTALL}", python.display())) }
}

/// Every junit.xml written since `before` (by this invocation's trials), plus the one
/// `layout-gate report --junit` merges from those runs and the hand-written ones (which carry
/// failures and an error), read by junitparser and checked by scripts/check-junit.py.
pub fn junit_second_reader(before: &BTreeSet<PathBuf>) -> Result<(), String> {
    let python = junit_python()?;
    let mut new: Vec<PathBuf> = run_folders().difference(before).cloned().collect();
    if new.is_empty() {
        // Run alone (a filter left out the trials that write evidence): write one run here.
        crate::pipeline_trials::fixture_case_passes()?;
        new = run_folders().difference(before).cloned().collect();
        if new.is_empty() {
            return Err(format!("no run folder with a junit.xml appeared under {}", evidence_root().display()));
        }
    }
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let merged = tmp.path().join("merged.xml");
    let handwritten: Vec<PathBuf> =
        std::fs::read_dir(data("handwritten")).map_err(|e| e.to_string())?.flatten().map(|e| e.path()).collect();
    let out = Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .arg("report")
        .args(&new)
        .args(&handwritten)
        .arg("--out")
        .arg(tmp.path().join("report"))
        .arg("--junit")
        .arg(&merged)
        .arg("--allow-problems")
        .stdout(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("layout-gate report --junit failed:\n{}", String::from_utf8_lossy(&out.stderr)));
    }
    let merged_text = std::fs::read_to_string(&merged).map_err(|e| format!("{}: {e}", merged.display()))?;
    if !merged_text.contains("<failure ") {
        return Err("the merged junit.xml has no failure, though the hand-written runs fail".into());
    }
    let files: Vec<PathBuf> = new.iter().map(|d| d.join("junit.xml")).chain([merged]).collect();
    let out = Command::new(&python)
        .arg(repo().join("scripts/check-junit.py"))
        .args(&files)
        .output()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().take(40).collect();
        return Err(format!("junitparser finds problems in {} files:\n{}", files.len(), lines.join("\n")));
    }
    println!("junitparser read {} junit.xml files (the last one merged) without a problem", files.len());
    Ok(())
}
