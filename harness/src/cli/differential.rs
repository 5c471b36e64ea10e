//! `layout-gate differential --seed S --count N`: see `crate::differential`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::check::{bad, pins};
use crate::case::CiliumVersion;
use crate::differential::{self, DiffOptions};

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The generator's seed: the same seed gives the same layouts.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How many layouts (1 to 10000).
    #[arg(long, default_value_t = 20, value_parser = super::whole_within::<1, { differential::MAX_COUNT }>)]
    pub count: usize,
    /// Cilium version to compare at; repeat for several (default: every pin; a pin whose
    /// operator cannot run here is said, with why).
    #[arg(long = "cilium", value_name = "VERSION")]
    pub cilium: Vec<String>,
    /// Write each disagreeing class's first example as a case folder under DIR.
    #[arg(long, value_name = "DIR")]
    pub save_disagreements: Option<PathBuf>,
    /// Write the figures (layouts agreed per version) into the repository's
    /// harness/src/lanes/model/differential_figures.json, which `check` quotes.
    #[arg(long)]
    pub record_figures: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only write the layouts, one file each, under DIR/v<VERSION>/ (to put one to `check` or
    /// `check --lane operator` yourself); compares nothing.
    #[arg(long, value_name = "DIR")]
    pub write_layouts: Option<PathBuf>,
    /// How many layouts run on Cilium's operator at once, each in namespaces of its own, on
    /// one control plane (1 to 64; default: from the free memory, at most 16).
    #[arg(long, value_name = "N")]
    pub batch: Option<crate::lanes::operator::batch::Batch>,
    /// The pinned versions file to read instead of the one found from the current folder.
    #[arg(long, value_name = "FILE")]
    pub versions_file: Option<PathBuf>,
    /// Test hook: the model predicts every version with this version's rules (a deliberately
    /// wrong model, to prove the comparison can fail).
    #[arg(long, value_name = "VERSION", hide = true)]
    pub model_as: Option<String>,
}

pub fn run(args: DiffArgs) -> ExitCode {
    let cmd = "differential";
    let pins = match pins(cmd, args.versions_file.as_deref()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let versions = match crate::lanes::model::resolve_versions(&pins, &args.cilium) {
        Ok(v) => v,
        Err(e) => return bad(cmd, &format!("--cilium: {e}")),
    };
    let model_as = match args.model_as.as_deref().map(CiliumVersion::parse).transpose() {
        Ok(v) => v,
        Err(e) => return bad(cmd, &format!("--model-as: {}", e.0)),
    };
    if let Some(dir) = &args.write_layouts {
        for (v, _) in &versions {
            match differential::write_version_layouts(dir, &pins, v, args.seed, args.count) {
                Ok(paths) => eprintln!("layout-gate differential: wrote {} layouts under {}/v{v}", paths.len(), dir.display()),
                Err(e) => return bad(cmd, &e),
            }
        }
        return ExitCode::SUCCESS;
    }
    let timeouts = match crate::check::timeouts() {
        Ok(t) => t,
        Err(e) => return bad(cmd, &e.to_string()),
    };
    if let Err(e) = crate::envoy::EnvoyBinary::find() {
        return bad(cmd, &e.to_string());
    }
    let opts = DiffOptions {
        seed: args.seed,
        count: args.count,
        versions,
        pins: pins.clone(),
        settings: crate::run::Settings::from_env(&crate::lanes::operator::known_settings()),
        timeouts,
        model_as,
        batch: args.batch.unwrap_or_else(crate::lanes::operator::batch::default_here),
        timings: Default::default(),
    };
    let work = match crate::scratch::Scratch::new(crate::scratch::CHECK) {
        Ok(w) => w,
        Err(e) => return bad(cmd, &format!("work folder: {e}")),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return bad(cmd, &format!("starting the async runtime: {e}")),
    };
    // A signal is `signals::exit_on_signal`'s alone: it removes the work folders and exits 128 +
    // the signal; control planes and Envoys die with the process.
    let out = runtime.block_on(differential::run(&opts, work.path()));
    drop(runtime);
    let reports = match out {
        Err(e) => return bad(cmd, &e),
        Ok(r) => r,
    };
    if let Some(dir) = &args.save_disagreements {
        for r in &reports {
            match differential::save_disagreements(dir, args.seed, r) {
                Ok(written) => {
                    for w in written {
                        eprintln!("layout-gate differential: wrote {}", w.display());
                    }
                }
                Err(e) => return bad(cmd, &e),
            }
        }
    }
    let text = if args.json {
        format!(
            "{:#}\n",
            serde_json::json!({"schema": "layout-gate-differential", "seed": args.seed, "count": args.count, "versions": reports})
        )
    } else {
        differential::text(args.seed, args.count, &reports)
    };
    let code = super::emit(&text);
    if code != ExitCode::SUCCESS {
        return code;
    }
    // After the report is out: a refusal to record must not lose 20 minutes of answers (it did,
    // at --count 200, when a layout went unanswered).
    if args.record_figures {
        if opts.model_as.is_some() {
            return bad(cmd, "--record-figures with --model-as would record a deliberately wrong model's figures");
        }
        if reports.iter().any(|r| r.unanswered()) {
            return bad(cmd, "--record-figures: the operator lane did not answer every layout (said above); no figures recorded");
        }
        let repo = pins.file.parent().and_then(|p| p.parent()).map(PathBuf::from).unwrap_or_default();
        match differential::record_figures(&repo, args.seed, args.count, &reports) {
            Ok(p) => eprintln!("layout-gate differential: figures written to {}", p.display()),
            Err(e) => return bad(cmd, &e),
        }
    }
    if reports.iter().all(|r| r.not_runnable.is_some()) {
        // Nothing was compared: no version's operator can run here.
        return bad(cmd, "no version asked for can be answered by Cilium's operator here (each is said above)");
    }
    // A disagreement is a finding about the model; a layout the operator lane could not answer
    // is no verdict at all, and never a pass.
    if reports.iter().any(|r| r.disagrees()) {
        ExitCode::from(1)
    } else if reports.iter().any(|r| r.unanswered()) {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
