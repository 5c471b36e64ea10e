//! `layout-gate status-writer --cilium V`: see `crate::status_writer`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::check::{bad, pins_and_version};
use crate::status_writer::{self, Options, StatusWriterError};

#[derive(Debug, Clone, Args)]
pub struct StatusWriterArgs {
    /// The Cilium version (default: the pins' default).
    #[arg(long, value_name = "VERSION")]
    pub cilium: Option<String>,
    /// Where status-writer.json goes (default: status-writer/<VERSION>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// How long each route is watched once the second writer begins, in seconds (5 to 120).
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = super::whole_within::<5, 120>)]
    pub window: usize,
    /// The pinned versions file to read instead of the one found from the current folder.
    #[arg(long, value_name = "FILE")]
    pub versions_file: Option<PathBuf>,
}

pub fn run(args: StatusWriterArgs) -> ExitCode {
    let cmd = status_writer::WHO;
    let (pins, version) = match pins_and_version(cmd, args.versions_file.as_deref(), args.cilium.as_deref()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let opts = Options {
        out: args.out.unwrap_or_else(|| PathBuf::from("status-writer").join(version.to_string())),
        version,
        pins,
        window: Duration::from_secs(args.window as u64),
        settings: crate::run::Settings::from_env(&crate::lanes::operator::known_settings()),
    };
    match status_writer::run(&opts) {
        Err(StatusWriterError::Input(e)) => bad(cmd, &e),
        Err(StatusWriterError::Run(e)) => {
            eprintln!("layout-gate {cmd}: {e}");
            ExitCode::FAILURE
        }
        Ok(done) => {
            eprintln!("layout-gate {cmd}: wrote {}", done.file.display());
            super::emit(&done.text)
        }
    }
}
