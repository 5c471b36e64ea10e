//! `layout-gate run --lane kind|model ...`: the arguments both lanes share, and the dispatch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::run::Shard;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LaneArg {
    /// Real Cilium on a kind cluster the harness creates (needs docker or podman, kind, helm).
    Kind,
    /// layout-gate's model of Cilium, served by a real local Envoy.
    Model,
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
    /// Run only this case; repeat for several.
    #[arg(long = "case", value_name = "NAME")]
    pub case: Vec<String>,
    /// Only shard I of N of the selected cases (round robin by name), e.g. 2/3.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Where evidence folders are written.
    #[arg(long, default_value = "evidence", value_name = "DIR")]
    pub evidence_dir: PathBuf,
    /// Kind lane only: rewrite the cases' matching inferred expectations in case.yaml to what
    /// this run observed (`provenance: observed`), and list what changed.
    #[arg(long)]
    pub record: bool,
    #[command(flatten)]
    pub kind: crate::lanes::kind::KindArgs,
}

pub fn run(args: RunArgs) -> ExitCode {
    match args.lane {
        LaneArg::Model if args.record => {
            eprintln!("layout-gate run: --record belongs to the kind lane; a model run never makes an expectation observed");
            ExitCode::from(2)
        }
        LaneArg::Model => crate::lanes::model::cli_run(&args),
        LaneArg::Kind if args.record && !args.kind.dry_run => {
            let started = crate::evidence::now_rfc3339();
            let code = crate::lanes::kind::cli_run(&args);
            let recorded = record_runs(&args, &started);
            if recorded == ExitCode::SUCCESS { code } else { recorded }
        }
        LaneArg::Kind => crate::lanes::kind::cli_run(&args),
    }
}

/// `--record`: every kind evidence this invocation wrote (started at or after `since`) is applied
/// to its cases' case.yaml.
fn record_runs(args: &RunArgs, since: &str) -> ExitCode {
    let Ok(entries) = std::fs::read_dir(&args.evidence_dir) else { return ExitCode::SUCCESS };
    let pins = match crate::versions::Pins::load_default() {
        Ok(p) => p.versions(),
        Err(_) => Vec::new(),
    };
    let mut code = ExitCode::SUCCESS;
    for e in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path().join("evidence.json")) else { continue };
        let Ok(ev) = serde_json::from_str::<crate::evidence::Evidence>(&text) else { continue };
        if ev.lane != crate::evidence::Lane::Kind || ev.started_at.as_str() < since {
            continue;
        }
        for c in &ev.cases {
            let dir = args.cases.join(&c.name);
            let result =
                crate::case::load(&dir).map_err(|ps| ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")).and_then(|case| {
                    let text = std::fs::read_to_string(&case.file).map_err(|e| e.to_string())?;
                    let r = crate::check::record::record(&case, &text, &ev, &pins)?;
                    if r.text != text {
                        crate::check::record::write_atomically(&case.file, &r.text).map_err(|e| format!("{}: {e}", case.file.display()))?;
                    }
                    Ok(r)
                });
            match result {
                Ok(r) => {
                    println!("record {} ({}): {} change(s)", c.name, ev.run_id, r.changed.len());
                    for l in r.changed {
                        println!("  changed  {l}");
                    }
                    for l in r.not_rewritten {
                        println!("  differs  {l}");
                    }
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
