//! The model lane: layout-gate's prediction of Cilium's Gateway translation, on a real Envoy.
//! (Being built.)

use std::process::ExitCode;

use crate::cli::run::RunArgs;

pub fn cli_run(_args: &RunArgs) -> ExitCode {
    eprintln!("layout-gate run --lane model: the model lane is not built yet");
    ExitCode::FAILURE
}
