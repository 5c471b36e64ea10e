//! `layout-gate check PATH...`: what each pinned Cilium does with rendered manifests, predicted
//! by the model (see `check`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::emit;
use crate::case::CiliumVersion;
use crate::check::format::{self, Report};
use crate::check::outcome::FailOn;
use crate::check::{self, GatewayCheck, Options, read};
use crate::versions::Pins;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Markdown,
}

/// Who answers `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckLane {
    /// layout-gate's model of Cilium, on a real local Envoy (no Go needed; a second).
    Model,
    /// Cilium's own operator built from each version's tag, on a local API server, its
    /// CiliumEnvoyConfig served on a real local Envoy (needs the control plane built by
    /// scripts/install-control-plane.sh).
    Operator,
}

/// The flags `check` (and `check --live`) and `case new` share: which pinned versions are
/// predicted, and how. Defined once, so the commands cannot drift apart.
#[derive(Debug, Clone, Args)]
pub struct PredictArgs {
    /// Cilium version to predict; repeat for several (default: every pinned version).
    #[arg(long = "cilium", value_name = "VERSION")]
    pub cilium: Vec<String>,
    /// Compute the answers from the predicted chains instead of observing a real Envoy.
    #[arg(long)]
    pub no_envoy: bool,
    /// Treat the input as the whole namespace (a `kubectl get -o yaml` of it): a referenced
    /// Secret or Service it lacks is missing, not stood in by a generated certificate or an
    /// in-process backend.
    #[arg(long)]
    pub complete: bool,
    /// The pinned versions file to read instead of the one found from the current folder.
    #[arg(long, value_name = "FILE")]
    pub versions_file: Option<PathBuf>,
    /// Predict a pinned version the model has not been checked at with this checked version's
    /// behaviour (said in what it prints or writes); without it such a version is refused.
    #[arg(long, value_name = "VERSION")]
    pub assume_like: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Manifest files, folders (recursively: *.yaml, *.yml, *.json), or - for standard input.
    #[arg(required_unless_present = "live", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub predict: PredictArgs,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// The version every other is judged against (default: `default:` in the pins, what the
    /// platform runs today); checked too when --cilium leaves it out.
    #[arg(long, value_name = "VERSION")]
    pub baseline: Option<String>,
    /// Comma-separated: conflicted, not-accepted, not-programmed, route-not-accepted,
    /// envoy-rejected, answer-changed, route-not-resolved, unreachable, traffic-changed,
    /// status-changed (the last two against the baseline; default: all). Exit 1 when one
    /// happened.
    #[arg(long, value_name = "LIST")]
    pub fail_on: Option<String>,
    /// Compare two layouts at every version: the PATHs are the old layout, the paths after `--`
    /// the new one (`check --compare old.yaml -- new.yaml`); both are probed on every name
    /// either claims. Exit 1 when the new layout takes a name away or answers it otherwise
    #[arg(long, requires = "new")]
    pub compare: bool,
    /// The new layout of --compare (after `--`).
    #[arg(last = true, value_name = "NEW")]
    pub new: Vec<PathBuf>,
    /// A name to probe on every port besides those the layout claims; repeat for several.
    #[arg(long = "sni", value_name = "NAME")]
    pub sni: Vec<String>,
    /// Print every table cell whole: by default the table output fits 120 columns, long cells
    /// cut with `…`.
    #[arg(long)]
    pub wide: bool,

    /// Who answers: the model (default), or Cilium's own operator at each version
    /// (`operator`: one local control plane per version; a version whose operator is not built
    /// or cannot be built here is said, never answered by the model).
    #[arg(long, value_enum, default_value = "model")]
    pub lane: CheckLane,

    /// With --lane operator: how many Gateways run on one control plane at once, each in
    /// namespaces of its own (1 to 64; default: from the free memory, at most 16).
    #[arg(long, value_name = "N")]
    pub batch: Option<crate::lanes::operator::batch::Batch>,

    #[command(flatten)]
    pub live: LiveArgs,
}

/// Exit code 2: bad input or a missing tool. The message can hold words from outside (a name
/// in a manifest, what an API server said): escaped, so it cannot drive the terminal.
pub(crate) fn bad(cmd: &str, m: &str) -> ExitCode {
    eprintln!("layout-gate {cmd}: {}", crate::term::text(m));
    ExitCode::from(2)
}

/// What `check` and `case new` share: versions, options, the run on a runtime.
pub(crate) struct Prepared {
    pub opts: Options,
    pub pins: Pins,
    pub envoy_version: Option<String>,
}

pub(crate) fn prepare(cmd: &str, args: &PredictArgs) -> Result<Prepared, ExitCode> {
    let (cilium, assume_like, envoy, complete) = (&args.cilium, args.assume_like.as_deref(), !args.no_envoy, args.complete);
    let pins = pins(cmd, args.versions_file.as_deref())?;
    let versions = crate::lanes::model::resolve_versions(&pins, cilium).map_err(|e| bad(cmd, &format!("--cilium: {e}")))?;
    let (versions, left_out) = crate::lanes::model::checked::default_selection(versions, !cilium.is_empty(), assume_like);
    if let Some(line) = left_out {
        eprintln!("layout-gate {cmd}: {line}");
    }
    let vs: Vec<CiliumVersion> = versions.iter().map(|(v, _)| v.clone()).collect();
    let assume: std::collections::BTreeMap<CiliumVersion, CiliumVersion> =
        crate::lanes::model::checked::assumptions(&vs, assume_like).map_err(|e| bad(cmd, &e))?.into_iter().collect();
    for (v, like) in &assume {
        eprintln!("layout-gate {cmd}: {}", crate::lanes::model::checked::assumed_line(v, like));
    }
    let timeouts = check::timeouts().map_err(|e| bad(cmd, &e.to_string()))?;
    let envoy_version = if envoy {
        let b = crate::envoy::EnvoyBinary::find()
            .map_err(|e| bad(cmd, &format!("{e} (or pass --no-envoy to compute the matrix from the chains)")))?;
        b.version().ok().map(|v| v.version.to_string())
    } else {
        None
    };
    Ok(Prepared {
        opts: Options {
            versions,
            envoy,
            timeouts,
            plan: check::EnvoyPlan::Shared,
            complete,
            assume,
            extra_sni: Vec::new(),
            operator: None,
            each_file: false,
        },
        pins,
        envoy_version,
    })
}

/// `check --lane operator`: every version asked for (default: every pin) is answered by its own
/// operator, so the model's checked list does not apply; the model's prediction only chooses
/// what to probe. The operator's data plane is a real Envoy: `--no-envoy` and `--assume-like`
/// do not apply.
pub(crate) fn prepare_operator(args: &CheckArgs) -> Result<Prepared, ExitCode> {
    if args.predict.no_envoy {
        return Err(bad("check", "--lane operator serves the operator's CiliumEnvoyConfig on a real Envoy: drop --no-envoy"));
    }
    if args.predict.assume_like.is_some() {
        return Err(bad("check", "--lane operator answers each version with its own operator: drop --assume-like"));
    }
    let pins = pins("check", args.predict.versions_file.as_deref())?;
    let versions =
        crate::lanes::model::resolve_versions(&pins, &args.predict.cilium).map_err(|e| bad("check", &format!("--cilium: {e}")))?;
    let timeouts = check::timeouts().map_err(|e| bad("check", &e.to_string()))?;
    let envoy = crate::envoy::EnvoyBinary::find().map_err(|e| bad("check", &e.to_string()))?;
    let settings = crate::run::Settings::from_env(&crate::lanes::operator::known_settings());
    Ok(Prepared {
        opts: Options {
            versions,
            envoy: true,
            timeouts,
            plan: check::EnvoyPlan::Shared,
            complete: args.predict.complete,
            assume: Default::default(),
            extra_sni: Vec::new(),
            operator: Some(check::operator::OperatorCheck {
                pins: pins.clone(),
                settings,
                batch: args.batch.unwrap_or_else(crate::lanes::operator::batch::default_here),
                timings: Default::default(),
                ahead: Default::default(),
            }),
            each_file: false,
        },
        pins,
        envoy_version: envoy.version().ok().map(|v| v.version.to_string()),
    })
}

/// The pins a command uses: `--versions-file`, else the checkout's found from the current
/// folder, else the binary's own; which one is said on standard error unless it is the
/// binary's own.
pub(crate) fn pins(cmd: &str, versions_file: Option<&Path>) -> Result<Pins, ExitCode> {
    let source = crate::versions::PinsSource::choose(versions_file);
    if let Some(n) = source.note() {
        eprintln!("layout-gate {cmd}: {n}");
    }
    source.load().map_err(|ps| bad(cmd, &ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))
}

/// The pins and the one Cilium version a command is for: `--cilium`, else the pins' default;
/// a version that is not pinned is bad input (said, exit 2).
pub(crate) fn pins_and_version(
    cmd: &str,
    versions_file: Option<&Path>,
    cilium: Option<&str>,
) -> Result<(Pins, crate::case::CiliumVersion), ExitCode> {
    let pins = pins(cmd, versions_file)?;
    let version = match cilium {
        None => pins.default.clone(),
        Some(f) => pins.pick(f).map_err(|e| bad(cmd, &format!("--cilium: {e}")))?.version.clone(),
    };
    Ok((pins, version))
}

/// Runs the check on a runtime; a signal ends the process (see `signals::exit_on_signal`).
pub(crate) fn execute(cmd: &str, paths: &[PathBuf], opts: &Options) -> Result<(read::Inputs, Vec<GatewayCheck>), ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| bad(cmd, &format!("starting the async runtime: {e}")))?;
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!("{cmd}: predicting {} version(s){} ...", opts.versions.len(), if opts.envoy { " on a local Envoy" } else { "" });
    }
    // A signal is the process's own signal handler's (`signals::exit_on_signal`): it removes the
    // temporary folders and exits 128 + the signal, and the Envoys die with the process. A
    // second listener here raced it and could end the process first with exit 2.
    let out = runtime.block_on(check::check_paths(paths, opts));
    drop(runtime);
    match out {
        Err(e) => Err(bad(cmd, &e.to_string())),
        Ok(r) => {
            for n in r.0.walk_notes() {
                eprintln!("layout-gate {cmd}: note: {n}");
            }
            Ok(r)
        }
    }
}

/// The `--sni` names, each a DNS name (exit 2 naming the bad one).
fn extra_names(args: &CheckArgs) -> Result<Vec<crate::types::Sni>, ExitCode> {
    args.sni.iter().map(|n| crate::types::Sni::new(n.as_str()).map_err(|e| bad("check", &format!("--sni {n:?}: {e}")))).collect()
}

/// `check --compare OLD... -- NEW...`.
fn run_compare(args: &CheckArgs, mut prepared: Prepared) -> ExitCode {
    // Standard input can be read once: it can be one side, never both.
    let stdin = |ps: &[PathBuf]| ps.iter().any(|p| p.as_os_str() == "-");
    if stdin(&args.paths) && stdin(&args.new) {
        return bad("check", "--compare: `-` (standard input) can be the old or the new layout, not both");
    }
    prepared.opts.extra_sni = match extra_names(args) {
        Ok(n) => n,
        Err(code) => return code,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return bad("check", &format!("starting the async runtime: {e}")),
    };
    // A signal is `signals::exit_on_signal`'s alone (see `execute`).
    let out = runtime.block_on(check::compare::compare_paths(&args.paths, &args.new, &prepared.opts));
    drop(runtime);
    let compared = match out {
        Err(e) => return bad("check", &e.to_string()),
        Ok(c) => c,
    };
    for n in compared.old.walk_notes().into_iter().chain(compared.new.walk_notes()) {
        eprintln!("layout-gate check: note: {n}");
    }
    let label = |ps: &[PathBuf]| ps.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ");
    let report = check::compare_format::CompareReport {
        compared: &compared,
        old_label: label(&args.paths),
        new_label: label(&args.new),
        banner: format::banner(!args.predict.no_envoy, prepared.envoy_version.as_deref()),
        extra: prepared.opts.extra_sni.iter().map(|s| s.to_string()).collect(),
    };
    let text = match args.format {
        Format::Table => check::compare_format::table_text_at(&report, crate::table::width(args.wide)),
        Format::Markdown => check::compare_format::markdown_text(&report),
        Format::Json => format!("{:#}\n", check::compare_format::json_value(&report)),
    };
    let code = emit(&text);
    if code != ExitCode::SUCCESS {
        return code;
    }
    let errors = report.errors();
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("layout-gate check: {}", crate::term::text(e));
        }
        return ExitCode::from(2);
    }
    if report.differs() { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// `check --live`'s flags, part of `check`'s command line; `cli::live` runs them (the dispatch is
/// in `cli/mod.rs`, so `check` and `live` do not call each other).
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Read the layout from a cluster instead of PATHs, read-only, with your credentials: its
    /// Gateways, routes, ListenerSets, ReferenceGrants, Services, the referenced Secrets'
    /// certificates (never a key) and the running Cilium; compares its statuses with the
    /// prediction at the running version, which is the baseline of every verdict.
    #[arg(long, conflicts_with_all = ["paths", "compare", "baseline"])]
    pub live: bool,
    /// The kubeconfig of --live (default: KUBECONFIG, else ~/.kube/config).
    #[arg(long, requires = "live", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context of --live (default: its current-context).
    #[arg(long, requires = "live", value_name = "CONTEXT")]
    pub context: Option<String>,
    /// A namespace --live reads; repeat for several (default: all namespaces).
    #[arg(long = "namespace", requires = "live", value_name = "NAMESPACE")]
    pub namespace: Vec<String>,
    /// The Cilium version the cluster runs, when it cannot be read from the `cilium` DaemonSet
    /// or the `cilium-operator` Deployment in kube-system.
    #[arg(long, requires = "live", value_name = "VERSION")]
    pub running: Option<String>,
    /// Do not probe the Gateways' addresses (when they are not reachable from here).
    #[arg(long, requires = "live")]
    pub no_probe: bool,
    /// Keep the reading as DIR/<run id>/live.json (`lane: live`, the cluster's context, name and
    /// API server digest, the disagreements and `check`'s JSON), written whole or not at all.
    /// Never gate evidence: `report` names such a folder and leaves it out.
    #[arg(long, requires = "live", value_name = "DIR")]
    pub evidence_dir: Option<PathBuf>,
}

pub fn run(args: CheckArgs) -> ExitCode {
    if !args.new.is_empty() && !args.compare {
        return bad("check", "paths after `--` are the new layout of --compare: add --compare (check --compare OLD... -- NEW...)");
    }
    let fail_on: BTreeSet<FailOn> = match &args.fail_on {
        None => FailOn::ALL.into_iter().collect(),
        Some(list) => match list.split(',').map(|s| FailOn::parse(s.trim())).collect::<Result<_, _>>() {
            Ok(s) => s,
            Err(e) => return bad("check", &e),
        },
    };
    if args.batch.is_some() && args.lane != CheckLane::Operator {
        return bad("check", "--batch is how many Gateways run at once on Cilium's operator: add --lane operator, or drop --batch");
    }
    let prepared = match args.lane {
        CheckLane::Model => prepare("check", &args.predict),
        CheckLane::Operator => prepare_operator(&args),
    };
    let mut prepared = match prepared {
        Ok(p) => p,
        Err(code) => return code,
    };
    let baseline = match &args.baseline {
        None => (prepared.pins.default.clone(), format!("default: in {}", prepared.pins.file_label())),
        Some(b) => match prepared.pins.pick(b) {
            Ok(p) => (p.version.clone(), "--baseline".to_string()),
            Err(e) => return bad("check", &format!("--baseline: {e}")),
        },
    };
    if !prepared.opts.versions.iter().any(|(v, _)| *v == baseline.0) {
        prepared.opts.versions.push((baseline.0.clone(), "the baseline".into()));
        prepared.opts.versions.sort_by(|a, b| a.0.cmp(&b.0));
    }
    if args.compare {
        if args.lane == CheckLane::Operator {
            return bad("check", "--compare is answered by the model only; drop --lane operator");
        }
        return run_compare(&args, prepared);
    }
    prepared.opts.extra_sni = match extra_names(&args) {
        Ok(n) => n,
        Err(code) => return code,
    };
    let (inputs, checks) = match execute("check", &args.paths, &prepared.opts) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let report = Report {
        checks: &checks,
        skipped: inputs.skipped_line(),
        skipped_counts: inputs.skipped.clone(),
        envoy: !args.predict.no_envoy,
        envoy_version: prepared.envoy_version.clone(),
        fail_on,
        baseline: Some((baseline.0.to_string(), baseline.1)),
    };
    let text = match args.format {
        Format::Table => format::table_text_at(&report, crate::table::width(args.wide)),
        Format::Markdown => format::markdown_text(&report),
        Format::Json => format!("{:#}\n", format::json_value(&report)),
    };
    finish(&report, &text, false)
}

/// Prints `text` and picks check's exit status: 2 when a version could not be observed (no
/// answer is a tool error), 1 when a verdict fails or `disagrees` (`--live`: the cluster and the
/// prediction differ), 0 otherwise.
pub(super) fn finish(report: &Report<'_>, text: &str, disagrees: bool) -> ExitCode {
    let errors = report.errors();
    let code = emit(text);
    if code != ExitCode::SUCCESS {
        return code;
    }
    if !errors.is_empty() {
        // A version that could not be observed is no answer: say which, and fail as a tool error.
        for e in &errors {
            eprintln!("layout-gate check: {}", crate::term::text(e));
        }
        return ExitCode::from(2);
    }
    if report.failed().is_empty() && !disagrees { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
