//! `layout-gate replay EVIDENCE_DIR`: a kind run judged again from its recordings, offline.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::lanes::cluster::replay;

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// A kind or operator run's evidence folder (holding evidence.json), or the evidence.json itself.
    #[arg(value_name = "EVIDENCE_DIR")]
    pub dir: PathBuf,
}

/// Exit 0 when the replay agrees with every recorded verdict, 1 when it does not, 2 when the
/// evidence cannot be replayed at all.
pub fn run(args: ReplayArgs) -> ExitCode {
    match replay::replay_dir(&args.dir) {
        Ok(r) => {
            let printed = super::emit(&replay::render(&r));
            if printed != ExitCode::SUCCESS {
                return printed;
            }
            if r.agrees() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("layout-gate replay: {e}");
            ExitCode::from(2)
        }
    }
}
