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
    #[command(flatten)]
    pub kind: crate::lanes::kind::KindArgs,
}

pub fn run(args: RunArgs) -> ExitCode {
    match args.lane {
        LaneArg::Model => crate::lanes::model::cli_run(&args),
        LaneArg::Kind => crate::lanes::kind::cli_run(&args),
    }
}
