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
        /// Refuse a dump larger than this many bytes (default 2 GiB, or
        /// LAYOUT_GATE_MAX_DUMP_BYTES).
        #[arg(long, value_name = "BYTES")]
        max_bytes: Option<u64>,
    },
}

pub fn run(command: EnvoyCommand) -> ExitCode {
    match command {
        EnvoyCommand::Summarize { file, json, max_bytes } => summarize(file, json, max_bytes),
    }
}

fn summarize(file: PathBuf, json: bool, max_bytes: Option<u64>) -> ExitCode {
    let summary = match max_bytes {
        Some(bytes) => envoy_dump::summarize_path_limited(&file, crate::input::Limit { bytes, knob: Some("--max-bytes") }),
        None => envoy_dump::summarize_path(&file),
    };
    match summary {
        Ok(summary) => {
            if json {
                emit(&format!("{:#}\n", envoy_dump::to_contract_json(&summary)))
            } else {
                emit(&envoy_dump::render_table(&summary))
            }
        }
        Err(e) => {
            eprintln!("layout-gate envoy summarize: {}", crate::term::line(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}
