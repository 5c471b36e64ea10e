//! `layout-gate explain CASE --cilium VERSION`: the model's predicted layout for a case.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::emit;
use crate::lanes::model::{explain, input, translate};

#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// A case folder, or a case name under --cases.
    case: String,
    /// Cilium version (one of the pinned versions); default: every pinned version.
    #[arg(long = "cilium", value_name = "VERSION")]
    cilium: Vec<String>,
    /// Folder of cases, for a case given by name.
    #[arg(long, default_value = "cases", value_name = "DIR")]
    cases: PathBuf,
    /// The pinned versions file to read instead of the one found from the current folder.
    #[arg(long, value_name = "FILE")]
    versions_file: Option<PathBuf>,
}

pub fn run(args: ExplainArgs) -> ExitCode {
    let fail = |m: String| {
        eprintln!("layout-gate explain: {m}");
        ExitCode::FAILURE
    };
    let dir = if PathBuf::from(&args.case).join(crate::case::load::CASE_FILE).is_file() {
        PathBuf::from(&args.case)
    } else {
        args.cases.join(&args.case)
    };
    let case = match crate::case::load(&dir) {
        Ok(c) => c,
        Err(problems) => return fail(problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")),
    };
    let pins = match super::check::pins("explain", args.versions_file.as_deref()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let versions = match crate::lanes::model::resolve_versions(&pins, &args.cilium) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    // Never another version's answer unsaid: unchecked pins are left out by default and refused
    // when named (explain has no --assume-like; check and run do).
    let (versions, left_out) = crate::lanes::model::checked::default_selection(versions, !args.cilium.is_empty(), None);
    if let Some(line) = left_out {
        eprintln!("layout-gate explain: {line}");
    }
    let chosen: Vec<_> = versions.iter().map(|(v, _)| v.clone()).collect();
    if let Err(e) = crate::lanes::model::checked::assumptions(&chosen, None) {
        return fail(e);
    }
    let model = match input::read(&case) {
        Ok(m) => m,
        Err(e) => return fail(e.to_string()),
    };
    // Every Gateway of the case, each translated on its own.
    let text: Vec<String> = versions
        .iter()
        .flat_map(|(v, _)| model.gateways.iter().map(|gw| explain::render(&case.name, gw, &translate::predict(gw, v))).collect::<Vec<_>>())
        .collect();
    emit(&text.join("\n"))
}
