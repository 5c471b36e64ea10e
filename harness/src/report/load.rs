//! Reading run folders: the only file I/O on the input side. Everything that goes wrong becomes
//! a [`Problem`] naming the path; nothing here panics or stops at the first bad run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::column::Column;
use super::problem::Problem;
use crate::case::CiliumVersion;
use crate::evidence::consistency::{self, Pinned};
use crate::evidence::{DigestCheck, Evidence, Lane, SCHEMA_VERSION, check_digest, content_digest, live, rejudge};

const EVIDENCE_FILE: &str = "evidence.json";
/// The other files `evidence::write_run` puts beside evidence.json: a folder holding them is a
/// run folder even when its evidence.json is gone.
const RUN_FILES: [&str; 2] = ["summary.md", "junit.xml"];

/// One run folder whose evidence was read and understood.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// The run folder as the report shows it.
    pub source: String,
    pub column: Column,
    /// As re-judged: verdicts and outcomes are what the observations give, whatever the file
    /// claimed (the differences are problems).
    pub evidence: Evidence,
    /// The digest of the file's content as read, to tell copies of one run apart.
    pub content: String,
}

#[derive(Debug, Default)]
pub struct Loaded {
    pub runs: Vec<LoadedRun>,
    pub problems: Vec<Problem>,
    /// (case, column) where the case has no expectation at the column's version (a fixture of
    /// another release line): left out of that column, not "not run" ([`find_left_out`]).
    pub left_out: BTreeSet<(String, Column)>,
}

/// The pinned versions (`kind-config/versions.yaml`, found as every command finds it), as
/// the consistency checks read them.
pub fn pinned() -> Result<Vec<Pinned>, String> {
    let pins = crate::versions::Pins::load_default().map_err(|ps| ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))?;
    Ok(pins
        .cilium
        .iter()
        .map(|p| Pinned {
            version: p.version.clone(),
            chart: p.chart.clone(),
            crd_bundle: format!("{} {}", p.gateway_api.version, p.gateway_api.channel),
        })
        .collect())
}

/// Reads every argument: a run folder (it holds `evidence.json`), or a folder of run folders
/// (one level down). `show` turns a path into the text the report prints for it. Each run is
/// checked against the pinned versions.
pub fn load_all(args: &[PathBuf], show: &dyn Fn(&Path) -> String) -> Loaded {
    let mut out = Loaded::default();
    let pins = match pinned() {
        Ok(p) => Some(p),
        Err(error) => {
            out.problems.push(Problem::NoPins { error });
            None
        }
    };
    let mut seen = BTreeSet::new();
    for arg in args {
        for folder in run_folders(arg, show, &mut out.problems) {
            // The same folder named twice (directly and through its parent) is one run.
            let key = folder.canonicalize().unwrap_or_else(|_| folder.clone());
            if !seen.insert(key) {
                continue;
            }
            match load_run(&folder, show, pins.as_deref()) {
                Ok((run, problems)) => {
                    out.runs.extend(run);
                    out.problems.extend(problems);
                }
                Err(p) => out.problems.push(p),
            }
        }
    }
    one_per_run_id(&mut out);
    out
}

/// The same run id in several folders is one run: identical copies count once; copies that
/// differ are a problem and none of them is believed.
fn one_per_run_id(out: &mut Loaded) {
    let mut by_id: std::collections::BTreeMap<String, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, r) in out.runs.iter().enumerate() {
        by_id.entry(r.evidence.run_id.clone()).or_default().push(i);
    }
    let mut drop = BTreeSet::new();
    for (run_id, idx) in by_id.into_iter().filter(|(_, v)| v.len() > 1) {
        let first = &out.runs[idx[0]].content;
        if idx.iter().all(|&i| &out.runs[i].content == first) {
            drop.extend(idx[1..].iter().copied());
        } else {
            out.problems.push(Problem::DuplicateRun { run_id, paths: idx.iter().map(|&i| out.runs[i].source.clone()).collect() });
            drop.extend(idx);
        }
    }
    let mut i = 0;
    out.runs.retain(|_| {
        i += 1;
        !drop.contains(&(i - 1))
    });
}

/// The run folders an argument names, and problems with the ones that cannot be runs.
fn run_folders(arg: &Path, show: &dyn Fn(&Path) -> String, problems: &mut Vec<Problem>) -> Vec<PathBuf> {
    match std::fs::metadata(arg) {
        Ok(m) if m.is_dir() => {}
        // `run/evidence.json` named directly is its run folder.
        Ok(_) if arg.file_name().is_some_and(|n| n == EVIDENCE_FILE) => {
            return arg.parent().map(|p| vec![p.to_path_buf()]).unwrap_or_default();
        }
        Ok(_) if arg.file_name().is_some_and(|n| n == live::FILE) => {
            problems.push(live_reading(arg, show));
            return Vec::new();
        }
        Ok(_) => {
            problems
                .push(Problem::NotAFolder { path: show(arg), error: "it is a file; pass the run folder that holds evidence.json".into() });
            return Vec::new();
        }
        Err(e) => {
            problems.push(Problem::NotAFolder { path: show(arg), error: e.to_string() });
            return Vec::new();
        }
    }
    if arg.join(EVIDENCE_FILE).exists() {
        return vec![arg.to_path_buf()];
    }
    if arg.join(live::FILE).exists() {
        problems.push(live_reading(&arg.join(live::FILE), show));
        return Vec::new();
    }
    if is_run_folder(arg) {
        problems.push(Problem::MissingEvidence { path: show(&arg.join(EVIDENCE_FILE)) });
        return Vec::new();
    }
    let before = problems.len();
    let entries = match std::fs::read_dir(arg) {
        Ok(rd) => {
            let mut v: Vec<PathBuf> = Vec::new();
            for path in rd.filter_map(|e| e.ok().map(|e| e.path())) {
                // Followed as a run folder would be: a link that leads nowhere (a loop, a
                // dangling link) is named, never skipped as if it were not there.
                match std::fs::metadata(&path) {
                    Ok(m) if m.is_dir() => v.push(path),
                    Ok(_) => {}
                    Err(e) => problems.push(Problem::NotAFolder { path: show(&path), error: e.to_string() }),
                }
            }
            v.sort();
            v
        }
        Err(e) => {
            problems.push(Problem::NotAFolder { path: show(arg), error: e.to_string() });
            return Vec::new();
        }
    };
    let mut runs = Vec::new();
    for dir in entries {
        let hidden = dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'));
        if hidden {
            // write_run renders into `.<run id>.XXXX` and renames it into place; one that is
            // still there is a write that died half way.
            problems.push(Problem::UnfinishedWrite { path: show(&dir) });
        } else if dir.join(EVIDENCE_FILE).exists() {
            runs.push(dir);
        } else if dir.join(live::FILE).exists() {
            problems.push(live_reading(&dir.join(live::FILE), show));
        } else {
            problems.push(Problem::MissingEvidence { path: show(&dir.join(EVIDENCE_FILE)) });
        }
    }
    if runs.is_empty() && problems.len() == before {
        problems.push(Problem::NoEvidence { path: show(arg) });
    }
    runs
}

/// A `check --live` reading met where run evidence is read: said (bounded read), never loaded.
fn live_reading(file: &Path, show: &dyn Fn(&Path) -> String) -> Problem {
    let what = match crate::input::read_text(file, crate::input::EVIDENCE) {
        Ok(text) => live::describe(&text).unwrap_or_else(|| format!("{} does not say `lane: live`", live::FILE)),
        Err(e) => format!("it cannot be read: {e}"),
    };
    Problem::LiveReading { path: show(file), what }
}

fn is_run_folder(dir: &Path) -> bool {
    RUN_FILES.iter().any(|f| dir.join(f).is_file())
}

/// Only the field that says how to read the rest; everything else is ignored at this stage, so
/// a newer schema is named as such instead of failing on its first changed field.
#[derive(Deserialize)]
struct SchemaOnly {
    #[serde(default)]
    schema_version: Option<serde_json::Value>,
}

/// Reads one run, checks its seal, re-judges it, checks that it agrees with itself; the run
/// (unless it contradicts itself) and its problems.
fn load_run(folder: &Path, show: &dyn Fn(&Path) -> String, pins: Option<&[Pinned]>) -> Result<(Option<LoadedRun>, Vec<Problem>), Problem> {
    let file = folder.join(EVIDENCE_FILE);
    let path = show(&file);
    // Bounded and non-blocking: a FIFO or an endless file is refused, never waited on.
    let text = crate::input::read_text(&file, crate::input::EVIDENCE)
        .map_err(|e| Problem::Unreadable { path: path.clone(), error: e.to_string() })?;
    let mut evidence = decode(&text, &path)?;
    let column = column_of(&evidence, &path)?;
    let mut problems = Vec::new();
    // decode() has parsed it already, so this parse cannot fail on syntax.
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    match check_digest(&doc) {
        DigestCheck::Matches => {}
        DigestCheck::Missing => problems.push(Problem::NoDigest { path: path.clone() }),
        DigestCheck::Differs { recorded, computed } => problems.push(Problem::DigestMismatch { path: path.clone(), recorded, computed }),
    }
    // Before re-judging: what the file says about itself, as it says it.
    let inconsistent = inconsistencies(&evidence, &path, pins);
    problems.extend(judged_again(&mut evidence, &path));
    problems.extend(replayed(&evidence, &path));
    if let Some(p) = not_run(&evidence, &path) {
        problems.push(p);
    }
    if !inconsistent.is_empty() {
        // A file that contradicts itself is not believed in any part: no column, no sentence.
        problems.extend(inconsistent);
        return Ok((None, problems));
    }
    Ok((Some(LoadedRun { source: show(folder), column, evidence, content: content_digest(&doc) }), problems))
}

/// The ways a run contradicts itself or its lane, one problem per case (and one for the run).
fn inconsistencies(evidence: &Evidence, path: &str, pins: Option<&[Pinned]>) -> Vec<Problem> {
    by_case(consistency::check(evidence, pins))
        .into_iter()
        .map(|(case, differences)| Problem::Inconsistent { path: path.into(), case, differences })
        .collect()
}

/// Mismatches grouped by case, in the order they came.
fn by_case(mismatches: Vec<rejudge::Mismatch>) -> Vec<(Option<String>, Vec<String>)> {
    let mut out: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for m in mismatches {
        match out.iter_mut().find(|(c, _)| *c == m.case) {
            Some((_, d)) => d.push(m.what),
            None => out.push((m.case, vec![m.what])),
        }
    }
    out
}

/// Re-judges every case (in place) and says where the file claimed otherwise.
pub fn judged_again(evidence: &mut Evidence, path: &str) -> Vec<Problem> {
    by_case(rejudge::correct(evidence))
        .into_iter()
        .map(|(case, differences)| Problem::Rejudged { path: path.into(), case, differences })
        .collect()
}

/// Kind cases that carry their raw recordings are replayed too (trackers, summarizer, judge):
/// the conditions and Envoy facts judged must be what the recorded objects and `cilium-dbg`
/// output give.
fn replayed(evidence: &Evidence, path: &str) -> Vec<Problem> {
    if evidence.lane != Lane::Kind {
        return Vec::new();
    }
    evidence
        .cases
        .iter()
        .filter(|c| c.recording.is_some())
        .map(|c| crate::lanes::cluster::replay::replay_case(evidence, c))
        .filter(|r| !r.agrees())
        .map(|r| Problem::Rejudged { path: path.into(), case: Some(r.case), differences: r.differences })
        .collect()
}

/// A run that did not reach its lane, or left selected cases unrun.
fn not_run(ev: &Evidence, path: &str) -> Option<Problem> {
    let cases: Vec<String> = ev.not_run.iter().map(|c| c.name.clone()).collect();
    let reason = match ev.not_run_reason() {
        Some(r) => r.to_string(),
        None if cases.is_empty() => return None,
        None => {
            let mut r: Vec<&str> = ev.not_run.iter().map(|c| c.reason.as_str()).collect();
            r.dedup();
            r.join("; ")
        }
    };
    Some(Problem::NotRun { path: path.into(), run_id: ev.run_id.clone(), reason, cases, nothing_ran: ev.not_run_reason().is_some() })
}

/// Decodes one evidence.json: schema version first, then the whole document with the path of
/// the first field that does not fit.
pub fn decode(text: &str, path: &str) -> Result<Evidence, Problem> {
    let head: SchemaOnly = serde_json::from_str(text).map_err(|e| json_problem(&e, path, "(document)"))?;
    let found = head.schema_version.as_ref().and_then(serde_json::Value::as_u64);
    if found != Some(u64::from(SCHEMA_VERSION)) {
        return Err(Problem::UnknownSchema { path: path.into(), found, supported: SCHEMA_VERSION });
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        json_problem(e.inner(), path, &field)
    })
}

fn json_problem(e: &serde_json::Error, path: &str, field: &str) -> Problem {
    match e.classify() {
        serde_json::error::Category::Eof => Problem::Truncated { path: path.into(), line: e.line(), column: e.column() },
        _ => Problem::Invalid {
            path: path.into(),
            field: if field.is_empty() || field == "." { "(document)".into() } else { field.into() },
            message: e.to_string(),
        },
    }
}

/// The column a run belongs to. The kind and model lanes are always about one Cilium version;
/// evidence without one cannot be placed and is refused rather than guessed.
fn column_of(ev: &Evidence, path: &str) -> Result<Column, Problem> {
    let cilium = match (&ev.cilium, ev.lane) {
        (None, Lane::Fixture) => None,
        (None, lane) => {
            return Err(Problem::Invalid {
                path: path.into(),
                field: "cilium".into(),
                message: format!("a {} run must name its Cilium version", lane.as_str()),
            });
        }
        (Some(c), _) => Some(CiliumVersion::parse(&c.version).map_err(|e| Problem::Invalid {
            path: path.into(),
            field: "cilium.version".into(),
            message: e.0,
        })?),
    };
    Ok(Column { lane: ev.lane, cilium })
}

/// How a run folder is named in a report meant to be shared: as given when relative; an
/// absolute path relative to `cwd` when under it, otherwise by its own name (its last two
/// components: the folder of runs and the run), never a local absolute path.
pub fn shared_path(p: &Path, cwd: Option<&Path>) -> String {
    if p.is_relative() {
        return p.display().to_string();
    }
    if let Some(rel) = cwd.and_then(|c| p.strip_prefix(c).ok()).filter(|r| !r.as_os_str().is_empty()) {
        return rel.display().to_string();
    }
    let tail: Vec<String> = p
        .components()
        .rev()
        .take(2)
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if tail.is_empty() { ".".into() } else { tail.into_iter().rev().collect::<Vec<_>>().join("/") }
}

/// With `report --cases DIR`: for every case the runs name and every column with a version,
/// whether the case (as `DIR/<case>/` gives it now) has an expectation at that version; where it
/// has none, the cell is left out (`—`), not "not run". A case folder that is not there, or does
/// not load, is left as the runs say.
pub fn find_left_out(loaded: &mut Loaded, cases_dir: &Path) {
    let columns: BTreeSet<&Column> = loaded.runs.iter().map(|r| &r.column).collect();
    let names: BTreeSet<&str> = loaded
        .runs
        .iter()
        .flat_map(|r| r.evidence.cases.iter().map(|c| c.name.as_str()).chain(r.evidence.not_run.iter().map(|c| c.name.as_str())))
        .collect();
    let mut out = BTreeSet::new();
    for name in names {
        let dir = cases_dir.join(name);
        if !dir.is_dir() {
            continue;
        }
        let Ok(case) = crate::case::load(&dir) else { continue };
        for column in &columns {
            if column.cilium.as_ref().is_some_and(|v| !case.expects_at(v)) {
                out.insert((name.to_string(), (*column).clone()));
            }
        }
    }
    loaded.left_out = out;
}

/// The case files a report holds its runs to.
#[derive(Debug, Clone, Copy)]
pub enum CaseFiles<'a> {
    /// `report --cases DIR`: a case file that differs from the one a run judged is a problem.
    Given(&'a Path),
    /// The repository's own catalogue ([`catalogue`]), consulted without being asked: only
    /// where a case's files are still the ones a run judged (the catalogue moves on, and a run
    /// of an older case is not wrong for it).
    Catalogue(&'a Path),
}

/// The repository's own `cases/`, beside the pins file's folder (`kind-config/versions.yaml`,
/// found as every command finds it), when there is one.
pub fn catalogue() -> Option<PathBuf> {
    let pins = crate::versions::Pins::load_default().ok()?;
    let dir = pins.file.parent()?.parent()?.join("cases");
    dir.is_dir().then_some(dir)
}

/// Each case file a run judged, compared by digest with `DIR/<case>/<file>` as it is now
/// (read like lint reads it: inside the case folder, bounded, opened once). A case folder that
/// is not there is not compared. Where the files are the ones the run judged, the expectations
/// the run stored must be what they give at the run's version: a run whose stored expectations
/// were edited (to match what it observed, or to raise an expectation's provenance from
/// `inferred` to `source`) is a problem and is taken out of `loaded`. The seal cannot catch
/// such an edit (whoever edits can reseal) and re-judging cannot either (the verdicts follow
/// from the edited expectations); only the case files the run names by digest can.
pub fn check_case_files(loaded: &mut Loaded, files: CaseFiles) {
    let (cases_dir, changed_is_problem) = match files {
        CaseFiles::Given(d) => (d, true),
        CaseFiles::Catalogue(d) => (d, false),
    };
    use sha2::Digest;
    let mut drop = BTreeSet::new();
    for (i, run) in loaded.runs.iter().enumerate() {
        for case in &run.evidence.cases {
            let dir = cases_dir.join(&case.name);
            if !dir.is_dir() {
                continue;
            }
            let mut differences = Vec::new();
            for (file, recorded) in &case.case_files {
                match crate::input::read_bytes_inside(&dir, file, crate::input::MANIFEST) {
                    Ok(bytes) => {
                        let d = crate::types::Fingerprint(sha2::Sha256::digest(&bytes).into()).hex();
                        if &d != recorded {
                            differences.push(format!("{file}: sha256 {} judged, {} now", short(recorded), short(&d)));
                        }
                    }
                    Err(e) => differences.push(format!("{file}: {}", e.reason())),
                }
            }
            if !differences.is_empty() {
                if changed_is_problem {
                    loaded.problems.push(Problem::CaseChanged { path: run.source.clone(), case: case.name.clone(), differences });
                }
                continue;
            }
            // The files are the judged ones: the stored expectations must be theirs. (The
            // fixture lane names no version, so there is none to take them at.)
            let Some(version) = run.evidence.cilium.as_ref().and_then(|c| CiliumVersion::parse(&c.version).ok()) else { continue };
            let now = match crate::case::load(&dir) {
                Ok(c) => c.applied(&version),
                Err(ps) => {
                    let differences = ps.iter().map(ToString::to_string).collect();
                    loaded.problems.push(Problem::CaseChanged { path: run.source.clone(), case: case.name.clone(), differences });
                    continue;
                }
            };
            let (now, stored) =
                (serde_json::to_value(&now).unwrap_or_default(), serde_json::to_value(&case.expectations).unwrap_or_default());
            if now != stored {
                let mut differences = Vec::new();
                json_differences(&stored, &now, "", &mut differences);
                loaded.problems.push(Problem::ExpectationsDiffer {
                    path: run.source.clone(),
                    case: case.name.clone(),
                    version: version.to_string(),
                    differences,
                });
                drop.insert(i);
            }
        }
    }
    let mut i = 0;
    loaded.runs.retain(|_| {
        i += 1;
        !drop.contains(&(i - 1))
    });
}

/// Where two JSON values differ, as `path: stored ..., the case gives ...`, at most
/// [`MAX_DIFFERENCES`] of them (the rest counted): what was edited, said.
fn json_differences(stored: &serde_json::Value, now: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    use serde_json::Value;
    if stored == now {
        return;
    }
    match (stored, now) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let (x, y) = (a.get(k).unwrap_or(&Value::Null), b.get(k).unwrap_or(&Value::Null));
                json_differences(x, y, &format!("{at}.{k}"), out);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                json_differences(x, y, &format!("{at}[{i}]"), out);
            }
        }
        _ => {
            if out.len() == MAX_DIFFERENCES {
                out.push("and more".into());
            } else if out.len() < MAX_DIFFERENCES {
                let shown = |v: &Value| {
                    let t = v.to_string();
                    let t = if t.chars().count() > 80 { t.chars().take(79).collect::<String>() + "…" } else { t };
                    crate::term::line(&t).into_owned()
                };
                out.push(format!("{}: stored {}, the case gives {}", at.trim_start_matches('.'), shown(stored), shown(now)));
            }
        }
    }
}

const MAX_DIFFERENCES: usize = 5;

/// The first 12 characters of a hash (by character: evidence is input, and may not be hex).
pub fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_local_absolute_path_is_shown() {
        let cwd = Path::new("/home/me/repo");
        assert_eq!(shared_path(Path::new("evidence/run-1"), Some(cwd)), "evidence/run-1");
        assert_eq!(shared_path(Path::new("/home/me/repo/evidence/run-1"), Some(cwd)), "evidence/run-1");
        assert_eq!(shared_path(Path::new("/tmp/x/ev/run-1"), Some(cwd)), "ev/run-1");
        assert_eq!(shared_path(Path::new("/tmp/x/ev/run-1"), None), "ev/run-1");
        assert_eq!(shared_path(Path::new("/"), None), ".");
    }
}
