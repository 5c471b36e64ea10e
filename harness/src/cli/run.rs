//! `layout-gate run --lane kind|model ...`: the flags both lanes share, mapped onto each lane's
//! own options type ([`ModelOptions`], [`KindOptions`]); the lanes never see these flags.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::emit;
use crate::case::Case;
use crate::lanes::cluster::session::{RunEnd, RunError};
use crate::lanes::kind::KindOptions;
use crate::lanes::kind::session::KindEnd;
use crate::lanes::model::{self, ModelOptions};
use crate::lanes::operator::OperatorOptions;
use crate::output::note;
use crate::run::{Selection, Settings, Shard, key_of};
use crate::versions::Pins;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LaneArg {
    /// Real Cilium on a kind cluster the harness creates (needs docker or podman, kind, helm).
    Kind,
    /// layout-gate's model of Cilium, served by a real local Envoy.
    Model,
    /// Cilium's own operator built from the tag, on a local kube-apiserver and etcd (built by
    /// scripts/install-control-plane.sh; needs Go); its CiliumEnvoyConfig on a real local Envoy.
    Operator,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Which lane runs the cases.
    #[arg(long, value_enum)]
    pub lane: LaneArg,
    /// Cilium version(s) to run; repeat for several. None: the model lane runs every pinned
    /// version, the kind lane the default one (kind-config/versions.yaml).
    #[arg(long = "cilium", value_name = "VERSION")]
    pub cilium: Vec<String>,
    /// Folder of cases.
    #[arg(long, default_value = "cases", value_name = "DIR")]
    pub cases: PathBuf,
    /// Run only the cases whose name matches this glob (`dns01-*`, `*passthrough*`); repeat
    /// for several. Names are paths, and `*` and `?` cross `/` (`cilium/*`; `*` is every case).
    /// A pattern matching no case is an error.
    #[arg(long = "case", value_name = "PATTERN")]
    pub case: Vec<String>,
    /// Leave out the cases whose name matches this glob (as --case: `*` crosses `/`, so `*`
    /// leaves out every case); repeat for several.
    #[arg(long = "skip", value_name = "PATTERN")]
    pub skip: Vec<String>,
    /// Only shard I of N of the selected cases (round robin by name), e.g. 2/3.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Print the cases and versions that would run, and the waits with where each comes from;
    /// run nothing.
    #[arg(long)]
    pub list: bool,
    /// Print every table cell whole (--list): by default tables fit 120 columns, long cells
    /// cut with `…`.
    #[arg(long)]
    pub wide: bool,
    /// After the first failing case, start no new one; the rest count as not run.
    #[arg(long)]
    pub fail_fast: bool,
    /// Cases (times versions) run at once in the model lane (1 to 256) [default: 4]. The operator lane
    /// takes --batch; the kind lane runs one case at a time on its cluster.
    #[arg(long, value_name = "N", value_parser = jobs_arg)]
    pub jobs: Option<NonZeroUsize>,
    /// Operator lane: how many cases run on one control plane at once, each in namespaces of
    /// its own on its own Envoy (1 to 64; default: from the free memory, at most 16). Each
    /// case's evidence records the same facts as when it runs alone.
    #[arg(long, value_name = "N")]
    pub batch: Option<crate::lanes::operator::batch::Batch>,
    /// One probe: connect, handshake and HTTP exchange (also LAYOUT_GATE_PROBE_TIMEOUT).
    #[arg(long, value_name = "DURATION")]
    pub probe_timeout: Option<String>,
    /// How long a probe may take to converge (also LAYOUT_GATE_CONVERGE_TIMEOUT).
    #[arg(long, value_name = "DURATION")]
    pub converge_timeout: Option<String>,
    /// Pause between two observations of one probe (also LAYOUT_GATE_PROBE_INTERVAL).
    #[arg(long, value_name = "DURATION")]
    pub probe_interval: Option<String>,
    /// Consecutive agreeing observations a probe needs (also LAYOUT_GATE_CONSECUTIVE).
    #[arg(long, value_name = "N")]
    pub consecutive: Option<String>,
    /// A local Envoy to answer /ready (also LAYOUT_GATE_ENVOY_READY_TIMEOUT).
    #[arg(long, value_name = "DURATION")]
    pub envoy_ready_timeout: Option<String>,
    /// Any named wait, by its name in `--list` (e.g. helm_install_timeout=20m); repeat for
    /// several. Precedence: flag > environment (LAYOUT_GATE_*) > config file > default.
    #[arg(long = "timeout", value_name = "NAME=DURATION", value_parser = parse_setting)]
    pub timeout: Vec<(String, String)>,
    /// Config file with a `timeouts:` map of the same names [default: ./layout-gate.yaml when
    /// it exists; LAYOUT_GATE_CONFIG names another].
    #[arg(long, value_name = "FILE", env = "LAYOUT_GATE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where evidence folders are written.
    #[arg(long, default_value = "evidence", value_name = "DIR")]
    pub evidence_dir: PathBuf,
    /// The pinned versions file to read instead of the one found from the current folder (or,
    /// outside a checkout, the binary's own).
    #[arg(long, value_name = "FILE")]
    pub versions_file: Option<PathBuf>,
    /// Model lane: predict a pinned version the model has not been checked at with this checked
    /// version's behaviour (said in its evidence); without it such a version is refused.
    #[arg(long, value_name = "VERSION")]
    pub assume_like: Option<String>,
    /// Kind lane: rewrite the cases' matching inferred expectations in case.yaml to what this
    /// run observed (`provenance: observed`). Operator lane: add a `confirmed:` entry (version,
    /// operator module sum, date, run) to every group Cilium's operator answered in full. Both
    /// list what changed.
    #[arg(long)]
    pub record: bool,
    #[command(flatten)]
    pub kind: KindArgs,
}

/// Options only the kind lane reads.
#[derive(Debug, Clone, Default, Args)]
pub struct KindArgs {
    /// Print every command and manifest the run would apply, in order, and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Leave the cluster the run created in place (reuse it later with --reuse-cluster).
    #[arg(long)]
    pub keep_cluster: bool,
    /// Reuse a cluster an earlier run created and kept (e.g. layout-gate-1-19-5). Refused
    /// unless it carries layout-gate's marker with the same Cilium version and Helm values.
    /// A reused cluster is kept.
    #[arg(long, value_name = "NAME", conflicts_with = "existing_cluster")]
    pub reuse_cluster: Option<String>,
    /// Run in a cluster layout-gate did not create, by kubeconfig context. Explicit opt-in:
    /// nothing cluster-wide is installed or deleted there; Cilium must already run the
    /// requested version.
    #[arg(long, value_name = "CONTEXT", conflicts_with = "keep_cluster")]
    pub existing_cluster: Option<String>,
    /// Leave each case's namespace in place after it ran.
    #[arg(long)]
    pub keep_namespaces: bool,
    /// Install Cilium with debug.verbose=envoy (Envoy debug logs in diagnostics).
    #[arg(long)]
    pub cilium_debug: bool,
}

/// `--jobs`: 1 to [`MAX_JOBS`]. (Each job is a local Envoy; a count in the billions would also
/// overflow the runtime's semaphore.)
fn jobs_arg(s: &str) -> Result<NonZeroUsize, String> {
    super::whole_within::<1, MAX_JOBS>(s).and_then(|n| NonZeroUsize::new(n).ok_or_else(|| "must be at least 1".to_string()))
}

/// The most model-lane cases (times versions) run at once.
pub const MAX_JOBS: usize = 256;

fn parse_setting(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("{s:?} is not NAME=DURATION (e.g. helm_install_timeout=20m)"))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

impl RunArgs {
    /// Every setting the flags give, as `(name, value)`; the dedicated flags beat `--timeout`.
    fn setting_flags(&self) -> Vec<(String, String)> {
        let mut out = self.timeout.clone();
        for (key, value) in [
            ("probe_timeout", &self.probe_timeout),
            ("converge_timeout", &self.converge_timeout),
            ("probe_interval", &self.probe_interval),
            ("consecutive", &self.consecutive),
            ("envoy_ready_timeout", &self.envoy_ready_timeout),
        ] {
            if let Some(v) = value {
                out.push((key.to_string(), v.clone()));
            }
        }
        out
    }
}

pub fn run(args: RunArgs) -> ExitCode {
    let lane = match args.lane {
        LaneArg::Model => "model",
        LaneArg::Kind => "kind",
        LaneArg::Operator => "operator",
    };
    let fail = |code: u8, m: String| {
        note(&format!("layout-gate run --lane {lane}: {m}"));
        ExitCode::from(code)
    };
    if let Some(f) = &args.versions_file {
        // Every reader of pins in this run (the kind lane's session, --record) reads this file.
        crate::versions::use_versions_file(f);
    }
    let selection = match Selection::new(&args.case, &args.skip) {
        Ok(s) => s,
        Err(e) => return fail(2, e),
    };
    let cases = match crate::run::select(&args.cases, &selection, args.shard) {
        Ok(c) if c.is_empty() => return fail(2, "no case selected".into()),
        Ok(c) => c,
        Err(e) => return fail(2, e),
    };
    let known = match args.lane {
        LaneArg::Model => crate::run::Timeouts::vars(),
        LaneArg::Kind | LaneArg::Operator => crate::lanes::cluster::timeouts::known_settings(),
    };
    let settings = match Settings::load(&known, &args.setting_flags(), args.config.as_deref()) {
        Ok(s) => s,
        Err(e) => return fail(2, e),
    };
    match args.lane {
        LaneArg::Model if args.record => {
            note("layout-gate run: --record belongs to the kind lane; a model run never makes an expectation observed");
            ExitCode::from(2)
        }
        LaneArg::Model => run_model(&args, cases, &settings),
        LaneArg::Kind if args.record && !args.kind.dry_run && !args.list => {
            let started = crate::evidence::now_rfc3339();
            let code = run_kind(&args, cases, settings);
            let recorded = record_runs(&args, &started);
            if recorded == ExitCode::SUCCESS { code } else { recorded }
        }
        LaneArg::Kind => run_kind(&args, cases, settings),
        LaneArg::Operator if args.record && !args.list => {
            let started = crate::evidence::now_rfc3339();
            let code = run_operator(&args, cases, settings);
            let recorded = record_runs(&args, &started);
            if recorded == ExitCode::SUCCESS { code } else { recorded }
        }
        LaneArg::Operator => run_operator(&args, cases, settings),
    }
}

fn run_operator(args: &RunArgs, cases: Vec<Case>, settings: Settings) -> ExitCode {
    let fail = |m: String| {
        note(&format!("layout-gate run --lane operator: {m}"));
        ExitCode::from(2)
    };
    if args.kind.dry_run || args.kind.keep_cluster || args.kind.reuse_cluster.is_some() || args.kind.existing_cluster.is_some() {
        return fail("--dry-run, --keep-cluster, --reuse-cluster and --existing-cluster belong to the kind lane".into());
    }
    if args.jobs.is_some_and(|j| j.get() > 1) {
        return fail("--jobs is the model lane's: cases at once on the operator's control plane are --batch N".into());
    }
    let batch = args.batch.unwrap_or_else(crate::lanes::operator::batch::default_here);
    let options = OperatorOptions {
        cilium: args.cilium.clone(),
        fail_fast: args.fail_fast,
        shard: args.shard.map(|s| s.to_string()),
        batch,
        settings,
    };
    let pins = match super::check::pins("run --lane operator", args.versions_file.as_deref()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if args.list {
        return match crate::lanes::operator::session::versions(&pins, &args.cilium) {
            Ok(v) => {
                let names: Vec<String> = v.iter().map(|(v, _)| v.to_string()).collect();
                let waits = match effective_waits(args.lane, &options.settings) {
                    Ok(w) => w,
                    Err(e) => return fail(e),
                };
                let how = format!("operator lane, {batch} case(s) at once per local control plane");
                emit(&listing(&cases, &names, &options.settings, &waits, &how, crate::table::width(args.wide)))
            }
            Err(e) => fail(e),
        };
    }
    cluster_exit("operator", crate::lanes::operator::session::run(cases, &pins, &options, &args.evidence_dir))
}

/// How a run of a cluster lane ended, as an exit status: 0 every case passed, 1 a case failed
/// or did not run, 2 the run could not do its job, 128+N a signal.
fn end_code(end: RunEnd) -> ExitCode {
    match end {
        RunEnd::Passed => ExitCode::SUCCESS,
        RunEnd::Failed => ExitCode::FAILURE,
        RunEnd::Broken => ExitCode::from(2),
        RunEnd::Interrupted(sig) => ExitCode::from(sig.exit_status()),
    }
}

/// A cluster lane's run, said and turned into an exit status.
fn cluster_exit(lane: &str, r: Result<RunEnd, RunError>) -> ExitCode {
    match r {
        Ok(end) => end_code(end),
        Err(e) => {
            match &e {
                RunError::Setup(_) | RunError::Runtime(_) => note(&format!("layout-gate run --lane {lane}: {e}")),
                RunError::DryRun(_) => note(&format!("layout-gate run --lane {lane} --dry-run: {e}")),
                RunError::Local(_) => note(&format!("layout-gate {lane} lane: {e}")),
            }
            ExitCode::from(2)
        }
    }
}

fn run_model(args: &RunArgs, cases: Vec<Case>, settings: &Settings) -> ExitCode {
    let fail = |m: String| {
        note(&format!("layout-gate run --lane model: {m}"));
        ExitCode::from(2)
    };
    if args.kind.dry_run {
        return fail("--dry-run belongs to the kind lane; the model lane starts only local processes".into());
    }
    if args.batch.is_some() {
        return fail("--batch is the operator lane's (cases at once on one control plane); the model lane takes --jobs".into());
    }
    let pins = match super::check::pins("run --lane model", args.versions_file.as_deref()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let versions = match model::resolve_versions(&pins, &args.cilium) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let (versions, left_out) = model::checked::default_selection(versions, !args.cilium.is_empty(), args.assume_like.as_deref());
    if let Some(line) = left_out {
        note(&format!("layout-gate run --lane model: {line}"));
    }
    let chosen: Vec<crate::case::CiliumVersion> = versions.iter().map(|(v, _)| v.clone()).collect();
    if let Some(why) = crate::run::nothing_to_run(&cases, &chosen, !args.cilium.is_empty(), &pins.versions()) {
        return fail(why);
    }
    let assume = match model::checked::assumptions(&chosen, args.assume_like.as_deref()) {
        Ok(a) => a.into_iter().collect(),
        Err(e) => return fail(e),
    };
    for (v, like) in &assume {
        note(&format!("layout-gate run --lane model: {}", model::checked::assumed_line(v, like)));
    }
    let timeouts = match model::model_timeouts_from(settings) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let options = ModelOptions {
        jobs: args.jobs.unwrap_or(model::DEFAULT_JOBS),
        fail_fast: args.fail_fast,
        timeouts,
        shard: args.shard.map(|s| s.to_string()),
        assume,
    };
    if args.list {
        let names: Vec<String> = versions.iter().map(|(v, _)| v.to_string()).collect();
        let waits = match effective_waits(args.lane, settings) {
            Ok(w) => w,
            Err(e) => return fail(e),
        };
        let how = format!("model lane, {} at a time", options.jobs);
        return emit(&listing(&cases, &names, settings, &waits, &how, crate::table::width(args.wide)));
    }
    match model::run(&cases, &versions, &options, &args.evidence_dir) {
        Ok(end) => end_code(end),
        Err(e) => {
            note(&format!("layout-gate run --lane model: {e}"));
            // A model run that could not start exits 1, as it always has (the cluster lanes 2).
            ExitCode::FAILURE
        }
    }
}

fn run_kind(args: &RunArgs, cases: Vec<Case>, settings: Settings) -> ExitCode {
    if args.batch.is_some() {
        note("layout-gate run --lane kind: --batch is the operator lane's: the kind lane runs one case at a time on its cluster");
        return ExitCode::from(2);
    }
    if args.jobs.is_some_and(|j| j.get() > 1) {
        note(
            "layout-gate run --lane kind: --jobs: the kind lane runs one case at a time on its cluster (each case's Envoy dump and logs stay its own)",
        );
        return ExitCode::from(2);
    }
    let options = KindOptions {
        cilium: args.cilium.clone(),
        dry_run: args.kind.dry_run,
        keep_cluster: args.kind.keep_cluster,
        reuse_cluster: args.kind.reuse_cluster.clone(),
        existing_cluster: args.kind.existing_cluster.clone(),
        keep_namespaces: args.kind.keep_namespaces,
        cilium_debug: args.kind.cilium_debug,
        fail_fast: args.fail_fast,
        shard: args.shard.map(|s| s.to_string()),
        settings,
    };
    let pins = match Pins::load_default() {
        Ok(p) => p,
        Err(problems) => {
            note(&problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"));
            return ExitCode::from(2);
        }
    };
    let version = match crate::lanes::kind::session::pick_version(&pins, &args.cilium, std::env::var("LAYOUT_GATE_CILIUM").ok()) {
        Ok((v, _)) => v,
        Err(e) => {
            note(&format!("layout-gate run --lane kind: {e}"));
            return ExitCode::from(2);
        }
    };
    // One version, chosen or the default: nothing at it is nothing to run.
    if let Some(why) = crate::run::nothing_to_run(&cases, std::slice::from_ref(&version), true, &pins.versions()) {
        note(&format!("layout-gate run --lane kind: {why}"));
        return ExitCode::from(2);
    }
    if args.list {
        let waits = match effective_waits(args.lane, &options.settings) {
            Ok(w) => w,
            Err(e) => {
                note(&format!("layout-gate run --lane kind: {e}"));
                return ExitCode::from(2);
            }
        };
        let width = crate::table::width(args.wide);
        return emit(&listing(&cases, &[version.to_string()], &options.settings, &waits, "kind lane, one case at a time", width));
    }
    match crate::lanes::kind::session::run(cases, &options, &args.evidence_dir) {
        Ok(KindEnd::DryRun(text)) => emit(&text),
        Ok(KindEnd::Ran(end)) => end_code(end),
        Err(e) => cluster_exit("kind", Err(e)),
    }
}

/// Every wait of `lane` with the value it will run with: the lane's own default, overridden by
/// a flag, the environment or the config file (`settings`).
fn effective_waits(lane: LaneArg, settings: &Settings) -> Result<Vec<(&'static str, String)>, String> {
    use crate::lanes::cluster::timeouts::ClusterTimeouts;
    use crate::run::{Profile, Timeouts};
    let (probes, cluster) = match lane {
        LaneArg::Model => (model::model_timeouts_from(settings)?, None),
        LaneArg::Kind => {
            (Timeouts::from_settings(Profile::Cluster, settings)?, Some(ClusterTimeouts::from_settings(Profile::Cluster, settings)?))
        }
        LaneArg::Operator => {
            (Timeouts::from_settings(Profile::Local, settings)?, Some(ClusterTimeouts::from_settings(Profile::Local, settings)?))
        }
    };
    let mut out = probes.values();
    out.extend(cluster.iter().flat_map(|c| c.values()));
    Ok(out)
}

/// `run --list`: what would run (the lane, the versions, every case at each), and every wait
/// with the value it will run with and where that comes from. Tables fit `width`.
fn listing(
    cases: &[Case],
    versions: &[String],
    settings: &Settings,
    waits: &[(&'static str, String)],
    how: &str,
    width: Option<usize>,
) -> String {
    let mut out = format!("{} case(s) x {} version(s) ({how}):\n", cases.len(), versions.len());
    out.push_str(&crate::table::wrap_with(&versions.join(", "), width.unwrap_or(usize::MAX), "versions: ", "  "));
    out.push('\n');
    for v in versions {
        for c in cases {
            out.push_str(&format!("  {v} {}\n", c.name));
        }
    }
    out.push_str("settings (flag > environment > config file > default):\n");
    let mut rows = vec![vec!["  NAME".to_string(), "VALUE".to_string(), "FROM".to_string()]];
    for (var, value) in waits {
        rows.push(vec![format!("  {}", key_of(var)), value.clone(), settings.source(var).to_string()]);
    }
    out.push_str(&crate::table::render_fit(&rows, width));
    out
}

/// `--record`: every kind or operator evidence this invocation wrote (started at or after
/// `since`) is applied to its cases' case.yaml (kind: inferred -> observed; operator: a
/// `confirmed:` entry per group its operator answered in full).
fn record_runs(args: &RunArgs, since: &str) -> ExitCode {
    let Ok(entries) = std::fs::read_dir(&args.evidence_dir) else { return ExitCode::SUCCESS };
    let pins = match crate::versions::Pins::load_default() {
        Ok(p) => p.versions(),
        Err(_) => Vec::new(),
    };
    let mut code = ExitCode::SUCCESS;
    let stdout = crate::output::Stdout::new();
    for e in entries.flatten() {
        let Ok(text) = crate::input::read_text(&e.path().join("evidence.json"), crate::input::EVIDENCE) else { continue };
        let Ok(ev) = serde_json::from_str::<crate::evidence::Evidence>(&text) else { continue };
        if !matches!(ev.lane, crate::evidence::Lane::Kind | crate::evidence::Lane::Operator) || ev.started_at.as_str() < since {
            continue;
        }
        for c in &ev.cases {
            let dir = args.cases.join(&c.name);
            let result =
                crate::case::load(&dir).map_err(|ps| ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")).and_then(|case| {
                    let text = crate::input::read_text(&case.file, crate::input::CASE_FILE).map_err(|e| e.to_string())?;
                    let r = match ev.lane {
                        crate::evidence::Lane::Operator => crate::check::record::record_operator(&case, &text, &ev)?,
                        _ => crate::check::record::record(&case, &text, &ev, &pins)?,
                    };
                    if r.text != text {
                        crate::case::edit::write_atomically(&case.file, &r.text).map_err(|e| format!("{}: {e}", case.file.display()))?;
                    }
                    Ok(r)
                });
            match result {
                Ok(r) => {
                    // Never println!: a closed or full stdout must not stop the recording.
                    let mut text = format!("record {} ({}): {} change(s)\n", c.name, ev.run_id, r.changed.len());
                    for l in r.changed {
                        text.push_str(&format!("  changed  {l}\n"));
                    }
                    for l in r.not_rewritten {
                        text.push_str(&format!("  differs  {l}\n"));
                    }
                    stdout.write(&text);
                }
                Err(m) => {
                    eprintln!("layout-gate run --record: {}: {m}", c.name);
                    code = ExitCode::FAILURE;
                }
            }
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> RunArgs {
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            args: RunArgs,
        }
        use clap::Parser;
        let root = env!("CARGO_MANIFEST_DIR");
        let mut argv = vec!["run".to_string(), "--cases".into(), format!("{root}/cases")];
        argv.extend(args.iter().map(|a| a.to_string()));
        Run::parse_from(argv).args
    }

    /// The command issue 18 ran: it printed "0 passed, 0 failed, 0 not run" and exited 0.
    /// Now it is bad input (exit 2), before any Envoy is looked for, and nothing is written.
    #[test]
    fn a_run_with_nothing_at_the_chosen_version_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let ev = tmp.path().join("ev");
        let ev_flag = ev.display().to_string();
        for lane in ["model", "kind"] {
            let a = parse(&[
                "--lane",
                lane,
                "--case",
                "cilium/gateway-multi-port-tls-passthrough",
                "--cilium",
                "1.19.5",
                "--evidence-dir",
                &ev_flag,
            ]);
            assert_eq!(run(a), ExitCode::from(2), "{lane}");
            assert!(!ev.exists(), "{lane}: evidence written for a run of nothing");
        }
    }

    /// `run --list` shows the value each wait will run with (the lane's own default unless
    /// something overrides it), never "(the lane's default)".
    #[test]
    fn the_listing_prints_every_value() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
        let cases = crate::run::select(&root, &crate::run::Selection::new(&["dns01-default".into()], &[]).unwrap(), None).unwrap();
        let known: Vec<&str> = crate::run::Timeouts::vars();
        let settings = Settings::load(&known, &[("converge_timeout".into(), "7s".into())], None).unwrap();
        let waits = effective_waits(LaneArg::Model, &settings).unwrap();
        let text = listing(&cases, &["1.19.5".into(), "1.19.6".into()], &settings, &waits, "model lane, 4 at a time", Some(120));
        assert!(!text.contains("lane's default"), "{text}");
        assert!(text.contains("versions: 1.19.5, 1.19.6\n"), "{text}");
        let row = |name: &str| text.lines().find(|l| l.trim_start().starts_with(name)).map(|l| l.split_whitespace().collect::<Vec<_>>());
        // The model lane's own defaults (a local Envoy converges fast), and the flag's value.
        assert_eq!(row("probe_timeout"), Some(vec!["probe_timeout", "2s", "default"]), "{text}");
        assert_eq!(row("converge_timeout"), Some(vec!["converge_timeout", "7s", "flag"]), "{text}");
        // The kind lane lists its cluster waits with theirs.
        let kind_known = crate::lanes::cluster::timeouts::known_settings();
        let kind = effective_waits(LaneArg::Kind, &Settings::load(&kind_known, &[], None).unwrap()).unwrap();
        assert!(kind.contains(&("LAYOUT_GATE_HELM_INSTALL_TIMEOUT", "15m".into())), "{kind:?}");
        assert_eq!(kind.len(), kind_known.len());
    }

    #[test]
    fn settings_are_name_equals_value() {
        assert_eq!(parse_setting("helm_install_timeout = 20m").unwrap(), ("helm_install_timeout".into(), "20m".into()));
        assert!(parse_setting("20m").unwrap_err().contains("NAME=DURATION"));
    }
}
