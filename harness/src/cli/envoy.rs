//! `layout-gate envoy summarize FILE [--json]`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use super::emit;
use crate::observe::envoy_dump;

#[derive(Subcommand)]
pub enum EnvoyCommand {
    /// Summarize a config dump (/config_dump, `cilium-dbg envoy admin config listeners`, or a
    /// CiliumEnvoyConfig) as one row per filter chain.
    Summarize {
        file: PathBuf,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: EnvoyCommand) -> ExitCode {
    match command {
        EnvoyCommand::Summarize { file, json } => summarize(file, json),
    }
}

fn summarize(file: PathBuf, json: bool) -> ExitCode {
    match envoy_dump::summarize_path(&file) {
        Ok(summary) => {
            if json {
                emit(&format!("{:#}\n", envoy_dump::to_contract_json(&summary)))
            } else {
                emit(&envoy_dump::render_table(&summary))
            }
        }
        Err(e) => {
            eprintln!("layout-gate envoy summarize: {e}");
            ExitCode::FAILURE
        }
    }
}
