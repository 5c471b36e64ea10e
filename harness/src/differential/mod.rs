//! `layout-gate differential --seed S --count N`: seeded generated layouts ([`generate`]) put to
//! both the model and Cilium's own operator at each pin the operator can run, compared field
//! class by field class ([`compare`]). Both sides are `check` (its reader, derivation, probe
//! matrix and Envoy observation): the model's `check` and `check --lane operator` over the same
//! files, one control plane per version for every layout. A thin room over `check`: nothing
//! lower imports it.

pub mod compare;
pub mod generate;
pub mod prng;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::case::CiliumVersion;
use crate::check::{self, GatewayCheck, Options};
use crate::lanes::operator::up::Ahead;
use crate::versions::Pins;
use compare::{Class, Difference};
use generate::{GenOptions, Layout};

/// The most layouts one differential takes (`--count`): the nightly's 200 fifty times over. Each
/// layout is a Gateway put to the operator and a local Envoy, some seconds each; a count beyond
/// this is a typo, and one in the billions would be sized in memory before anything runs.
pub const MAX_COUNT: usize = 10_000;

/// How a differential runs.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    pub seed: u64,
    pub count: usize,
    pub versions: Vec<(CiliumVersion, String)>,
    pub pins: Pins,
    pub settings: crate::run::Settings,
    pub timeouts: crate::run::Timeouts,
    /// Test hook: the model predicts with this version's rules (a deliberately wrong model).
    pub model_as: Option<CiliumVersion>,
    /// How many layouts run on the operator's control plane at once.
    pub batch: crate::lanes::operator::batch::Batch,
    /// Each version's control plane and cases times, as the operator lane tells them.
    pub timings: check::operator::Timings,
}

/// One version's result.
#[derive(Debug, Clone, Serialize)]
pub struct VersionReport {
    pub version: String,
    /// Why the operator cannot answer at this version (blocked, not built), if so.
    pub not_runnable: Option<String>,
    pub layouts: usize,
    /// Layouts on which the model and the operator agreed in every class.
    pub agreed: usize,
    /// Per class: (Gateways that agreed, Gateways compared).
    pub classes: BTreeMap<Class, (usize, usize)>,
    /// Gateways the operator lane could not answer (its error).
    pub errors: Vec<(String, String)>,
    /// Per class, the first disagreeing Gateway (`d7/gw0`) and its differences in that class.
    #[serde(skip)]
    pub first: BTreeMap<Class, (String, Vec<Difference>)>,
    pub wall_seconds: f64,
    pub per_layout_seconds: f64,
    /// The operator's control plane coming up (within `wall_seconds`).
    pub control_plane_seconds: f64,
    /// Layouts at once on the operator's control plane.
    pub batch: usize,
    /// The operator module that answered (`github.com/cilium/cilium vX h1:...`).
    pub operator: String,
    /// Whose agent step fed Envoy the operator's CEC: Cilium's own agent, or the emulated one.
    pub agent_step: String,
    /// The operator's checks of the disagreeing Gateways (for `--save-disagreements`).
    #[serde(skip)]
    pub examples: BTreeMap<String, GatewayCheck>,
}

impl VersionReport {
    /// Whether some Gateway the operator answered is answered otherwise by the model.
    pub fn disagrees(&self) -> bool {
        self.not_runnable.is_none() && self.classes.values().any(|(ok, n)| ok < n)
    }

    /// Whether the operator lane could not answer some Gateway: no verdict for it, neither
    /// agreement nor disagreement (a control plane that did not come up is not Cilium's answer).
    pub fn unanswered(&self) -> bool {
        self.not_runnable.is_none() && !self.errors.is_empty()
    }
}

/// The layouts for `version` (its TLSRoute version; ListenerSets from 1.20 on).
pub fn layouts_for(pins: &Pins, version: &CiliumVersion, seed: u64, count: usize) -> Vec<Layout> {
    let tlsroute = pins.get(version).map_or("v1alpha2".to_string(), |p| p.gateway_api.tlsroute.clone());
    let listener_sets = version >= &CiliumVersion::parse("1.20.0").unwrap_or_else(|_| version.clone());
    generate::generate(seed, count, &GenOptions { tlsroute_version: tlsroute, listener_sets })
}

/// The layouts for `version` (see [`layouts_for`]) written under `root/v<version>/`, one file
/// each; their paths. What `differential` puts to both sides, and what `--write-layouts` leaves.
pub fn write_version_layouts(root: &Path, pins: &Pins, version: &CiliumVersion, seed: u64, count: usize) -> Result<Vec<PathBuf>, String> {
    let dir = root.join(format!("v{version}"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    write_layouts(&dir, &layouts_for(pins, version, seed, count))
}

/// Writes each layout into `dir`, one file each; their paths.
pub fn write_layouts(dir: &Path, layouts: &[Layout]) -> Result<Vec<PathBuf>, String> {
    layouts
        .iter()
        .map(|l| {
            let p = dir.join(l.file_name());
            std::fs::write(&p, l.text()).map_err(|e| format!("{}: {e}", p.display()))?;
            Ok(p)
        })
        .collect()
}

fn options(opts: &DiffOptions, v: &CiliumVersion, operator: bool, ahead: &Ahead) -> Options {
    Options {
        versions: vec![(v.clone(), "--cilium".into())],
        envoy: true,
        timeouts: opts.timeouts.clone(),
        plan: check::EnvoyPlan::Shared,
        // The generated layouts are whole namespaces: a Secret or Service they lack is missing.
        complete: true,
        assume: match (&opts.model_as, operator) {
            (Some(like), false) => [(v.clone(), like.clone())].into_iter().collect(),
            _ => Default::default(),
        },
        extra_sni: Vec::new(),
        operator: operator.then(|| check::operator::OperatorCheck {
            pins: opts.pins.clone(),
            settings: opts.settings.clone(),
            batch: opts.batch,
            timings: opts.timings.clone(),
            ahead: ahead.clone(),
        }),
        // One file per layout, each its own namespaces: a Gateway's case carries only its own.
        each_file: true,
    }
}

/// Compares the model's checks with the operator's, Gateway by Gateway (each layout's
/// namespace `d<i>` names it).
pub fn tally(version: &str, layouts: usize, model: &[GatewayCheck], operator: &[GatewayCheck]) -> VersionReport {
    let mut r = VersionReport {
        version: version.to_string(),
        not_runnable: None,
        layouts,
        agreed: 0,
        classes: Class::ALL.iter().map(|c| (*c, (0, 0))).collect(),
        errors: Vec::new(),
        first: BTreeMap::new(),
        wall_seconds: 0.0,
        per_layout_seconds: 0.0,
        control_plane_seconds: 0.0,
        batch: 0,
        operator: String::new(),
        agent_step: String::new(),
        examples: BTreeMap::new(),
    };
    let mut disagreeing: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for m in model {
        let key = format!("{}/{}", m.derived.namespace, m.derived.gateway);
        let o = operator.iter().find(|o| o.derived.namespace == m.derived.namespace && o.derived.gateway == m.derived.gateway);
        let (Some(mv), Some(ov)) = (m.versions.first(), o.and_then(|o| o.versions.first())) else {
            r.errors.push((key.clone(), "the operator lane gave no result for this Gateway".into()));
            disagreeing.insert(m.derived.namespace.clone());
            continue;
        };
        if let Some(e) = ov.error.as_ref().or(mv.error.as_ref()) {
            r.errors.push((key.clone(), e.clone()));
            disagreeing.insert(m.derived.namespace.clone());
            continue;
        }
        let diffs = compare::differences(mv, ov);
        for c in Class::ALL {
            // ListenerSets: neither side's result carries them at a pin without ListenerSets.
            let mine: Vec<Difference> = diffs.iter().filter(|d| d.class == c).cloned().collect();
            let e = r.classes.entry(c).or_default();
            e.1 += 1;
            if mine.is_empty() {
                e.0 += 1;
            } else {
                r.first.entry(c).or_insert_with(|| (key.clone(), mine));
                if let Some(o) = o {
                    r.examples.entry(key.clone()).or_insert_with(|| o.clone());
                }
            }
        }
        if !diffs.is_empty() {
            disagreeing.insert(m.derived.namespace.clone());
        }
    }
    r.agreed = layouts.saturating_sub(disagreeing.len());
    r
}

/// Why Cilium's operator cannot answer at `v` here, if it cannot. A warm plane that matches the
/// binaries here answers without their bytes being read.
fn not_answerable(opts: &DiffOptions, v: &CiliumVersion) -> Option<String> {
    let warm = crate::lanes::operator::warm::attach(&opts.pins, v).ok().flatten().is_some();
    (!warm).then(|| check::operator::not_runnable(&opts.pins, v)).flatten()
}

/// Starts the control plane of the first version after the `i`-th that the operator can answer
/// (`why_not[j]` is `None`), while the `i`-th is compared (when the free memory holds a second
/// plane beside this one's; one ahead is enough: it is up long before a version's 200 layouts
/// are). Its `check` adopts it.
fn start_next(opts: &DiffOptions, why_not: &[Option<String>], i: usize, ahead: &Ahead) -> Result<(), String> {
    use crate::lanes::operator::batch::{mem_available, planes_at_once};
    if planes_at_once(mem_available()) < 2 {
        return Ok(());
    }
    let Some((next, _)) = opts.versions.iter().zip(why_not).skip(i + 1).find_map(|(v, why)| why.is_none().then_some(v)) else {
        return Ok(());
    };
    let setup = crate::lanes::operator::session::setup(&opts.pins, next.clone(), "--cilium flag".into(), &[], &opts.settings)
        .map_err(|e| e.to_string())?;
    let run_id = || crate::evidence::run_id(crate::evidence::Lane::Operator, Some(&next.to_string()), Some("check"));
    ahead.start(&tokio::runtime::Handle::current(), &std::sync::Arc::new(setup), run_id, check::operator::CHECK);
    Ok(())
}

/// Runs the differential at every version of `opts`: each one's report, in order. The next
/// version's control plane comes up while a version is compared.
pub async fn run(opts: &DiffOptions, work: &Path) -> Result<Vec<VersionReport>, String> {
    let mut out = Vec::new();
    // Dropped at the end or on an early return: a plane started ahead and not taken is stopped.
    let ahead = Ahead::default();
    // Once per version: finding its binaries reads and hashes them.
    let why_not: Vec<Option<String>> = opts.versions.iter().map(|(v, _)| not_answerable(opts, v)).collect();
    for (i, (v, _)) in opts.versions.iter().enumerate() {
        start_next(opts, &why_not, i, &ahead)?;
        if let Some(why) = &why_not[i] {
            out.push(VersionReport { not_runnable: Some(why.clone()), ..tally(&v.to_string(), 0, &[], &[]) });
            continue;
        }
        let paths = write_version_layouts(work, &opts.pins, v, opts.seed, opts.count)?;
        let t = Instant::now();
        let (_, model) = check::check_paths(&paths, &options(opts, v, false, &ahead)).await.map_err(|e| format!("the model: {e}"))?;
        let model_time = t.elapsed();
        let t = Instant::now();
        let (_, operator) =
            check::check_paths(&paths, &options(opts, v, true, &ahead)).await.map_err(|e| format!("the operator lane: {e}"))?;
        let op_time = t.elapsed();
        let mut r = tally(&v.to_string(), paths.len(), &model, &operator);
        let wall: Duration = model_time + op_time;
        r.wall_seconds = wall.as_secs_f64();
        // Per layout: the operator lane's time once its control plane is up.
        let timing = opts.timings.all().into_iter().rfind(|t| &t.version == v);
        let up = timing.as_ref().map_or(Duration::ZERO, |t| t.control_plane);
        r.control_plane_seconds = up.as_secs_f64();
        r.batch = timing.as_ref().map_or(opts.batch.get(), |t| t.batch.get());
        r.agent_step = timing.as_ref().map(|t| t.agent_step.clone()).unwrap_or_default();
        r.per_layout_seconds = if paths.is_empty() { 0.0 } else { op_time.saturating_sub(up).as_secs_f64() / paths.len() as f64 };
        r.operator = crate::lanes::operator::binaries::find_recorded(&opts.pins, v).map(|b| b.operator.build.source()).unwrap_or_default();
        eprintln!(
            "layout-gate differential: Cilium {v}: the model in {:.1}s, the operator in {:.1}s (its control plane {:.1}s, then {:.2}s per layout, {} at once)",
            model_time.as_secs_f64(),
            op_time.as_secs_f64(),
            r.control_plane_seconds,
            r.per_layout_seconds,
            r.batch
        );
        out.push(r);
    }
    Ok(out)
}

/// The report as text: agreement per class and version, and the first example of each
/// disagreeing class.
pub fn text(seed: u64, count: usize, reports: &[VersionReport]) -> String {
    use std::fmt::Write;
    let mut s = format!(
        "layout-gate differential --seed {seed} --count {count}: the model against Cilium's own operator (statuses and CiliumEnvoyConfig from the operator at each tag, through the agent step each version names; both served on a real local Envoy)\n"
    );
    for r in reports {
        if let Some(why) = &r.not_runnable {
            let _ = writeln!(s, "\nCilium {}: not runnable: {why}", r.version);
            continue;
        }
        let _ = writeln!(
            s,
            "\nCilium {}: {} of {} layouts agree ({:.1}s; control plane {:.1}s, then {:.2}s per layout on the operator lane, {} at once; agent step: {})",
            r.version, r.agreed, r.layouts, r.wall_seconds, r.control_plane_seconds, r.per_layout_seconds, r.batch, r.agent_step
        );
        for (c, (ok, n)) in &r.classes {
            let note = if *c == Class::ListenerSetConditions && !r.first.contains_key(c) && !r.version.starts_with("1.2") {
                " (no ListenerSets below 1.20)"
            } else {
                ""
            };
            let _ = writeln!(s, "  {:<24} {ok}/{n} Gateways agree{note}", c.as_str());
        }
        // Whole: the log tail after the first line is what says why.
        for (key, e) in &r.errors {
            let mut lines = e.lines();
            let _ = writeln!(s, "  NOT ANSWERED {key}: {}", lines.next().unwrap_or(""));
            for l in lines {
                let _ = writeln!(s, "    {l}");
            }
        }
        for (c, (key, diffs)) in &r.first {
            let _ = writeln!(s, "  first {} disagreement: {key}", c.as_str());
            for d in diffs.iter().take(5) {
                let _ = writeln!(s, "    {}", d.what);
            }
        }
    }
    let bad = reports.iter().filter(|r| r.disagrees()).count();
    let unanswered = reports.iter().filter(|r| r.unanswered()).count();
    let _ = writeln!(s, "\n{}", if bad == 0 { "no disagreement".to_string() } else { format!("DISAGREEMENT at {bad} version(s)") });
    if unanswered > 0 {
        let _ = writeln!(s, "NOT ANSWERED at {unanswered} version(s): the operator lane gave no answer to compare (no verdict)");
    }
    s
}

/// Writes the first example of each disagreeing class as a case folder under `dir` (the
/// operator's answers as its expectations at the version): `dir/diff-<class>-s<seed>-<layout>`.
pub fn save_disagreements(dir: &Path, seed: u64, r: &VersionReport) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let version = CiliumVersion::parse(&r.version).map_err(|e| e.0)?;
    for (c, (key, diffs)) in &r.first {
        let Some(op) = r.examples.get(key) else { continue };
        let name = format!("diff-{}-s{seed}-{}", c.as_str(), key.replace('/', "-"));
        let case_dir = dir.join(&name);
        if case_dir.exists() {
            continue;
        }
        let groups = check::expectation_groups(op, std::slice::from_ref(&version));
        let groups: Vec<check::casefile::Group> = groups
            .into_iter()
            .map(|mut g| {
                g.range = format!("={version}");
                g
            })
            .collect();
        let mut header = format!(
            "Written by `layout-gate differential --seed {seed} --save-disagreements`: the model and Cilium's own operator at {version} ({}) disagree on {} for Gateway {key}.\nThe expectations are the operator's answers at {version} (statuses and CiliumEnvoyConfig are Cilium's; agent step: {}).",
            r.operator,
            c.as_str(),
            r.agent_step
        );
        for d in diffs.iter().take(10) {
            header.push_str(&format!("\n{}", d.what));
        }
        let note = format!("answered by Cilium's own operator at {version} ({}), layout-gate differential", r.operator);
        let text = check::casefile::case_yaml(&op.derived, &header, &format!("generated layout {key} (seed {seed})"), &groups, &note);
        check::casefile::write_case_dir(&case_dir, &text, &op.derived).map_err(|e| format!("{}: {e}", case_dir.display()))?;
        out.push(case_dir);
    }
    Ok(out)
}

/// Rewrites the committed figures file (`lanes/model/differential_figures.json` under `repo`)
/// with each answered version's figure, keeping the versions this run did not answer.
pub fn record_figures(repo: &Path, seed: u64, count: usize, reports: &[VersionReport]) -> Result<PathBuf, String> {
    use crate::lanes::model::differential_figures as f;
    let path = repo.join(f::PATH);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut figures = f::parse(&text)?;
    let date = crate::evidence::now_rfc3339();
    let date = date.split('T').next().unwrap_or(&date).to_string();
    for r in reports.iter().filter(|r| r.not_runnable.is_none() && r.layouts > 0) {
        figures.versions.retain(|v| v.version != r.version);
        figures.versions.push(f::VersionFigure {
            version: r.version.clone(),
            seed,
            count,
            agreed: r.agreed,
            operator: r.operator.clone(),
            date: date.clone(),
        });
    }
    figures.versions.sort_by(|a, b| a.version.cmp(&b.version));
    let out = serde_json::to_string_pretty(&figures).map_err(|e| e.to_string())? + "\n";
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, out).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}
