//! `layout-gate report EVIDENCE_DIR...` (merge runs into one release-note report) and
//! `layout-gate versions` (the pinned versions, for people and for the nightly matrix).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::report::{self, Report};
use crate::versions::Pins;

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Run folders (holding evidence.json), or folders of run folders (one level down).
    #[arg(required = true, value_name = "EVIDENCE_DIR")]
    pub dirs: Vec<PathBuf>,
    /// Write report.md and report.json into this folder instead of printing the Markdown.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the JSON document to stdout instead of the Markdown.
    #[arg(long)]
    pub json: bool,
    /// Exit 0 even when the input has problems (they are still named in the report and on
    /// stderr).
    #[arg(long)]
    pub allow_problems: bool,
}

pub fn run(args: ReportArgs) -> ExitCode {
    let loaded = report::load_all(&args.dirs, &|p: &Path| p.display().to_string());
    let r = Report::build(loaded);
    for p in &r.problems {
        eprintln!("layout-gate report: problem: {p}");
    }
    let markdown = r.markdown();
    let json = r.json();
    let printed = match &args.out {
        Some(out) => match report::write_report(out, &markdown, &json) {
            Ok(paths) => {
                for p in paths {
                    eprintln!("layout-gate report: wrote {}", p.display());
                }
                if args.json { super::emit(&json) } else { ExitCode::SUCCESS }
            }
            Err(e) => {
                eprintln!("layout-gate {e}");
                return ExitCode::FAILURE;
            }
        },
        None => super::emit(if args.json { &json } else { &markdown }),
    };
    if printed != ExitCode::SUCCESS {
        return printed;
    }
    if r.problems.is_empty() || args.allow_problems {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "layout-gate report: {} problem(s) with the input (listed above and under Problems in the report); --allow-problems to exit 0 anyway",
            r.problems.len()
        );
        ExitCode::FAILURE
    }
}

#[derive(Debug, Clone, Args)]
pub struct VersionsArgs {
    /// One JSON document (pins, plus `matrix`: the selected versions) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Only these Cilium versions, comma-separated (blank: every pinned version). A version
    /// that is not pinned is an error.
    #[arg(long, value_name = "V1,V2", default_value = "")]
    pub only: String,
    /// The versions file (default: kind-config/versions.yaml, found from here upwards).
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

pub fn versions(args: VersionsArgs) -> ExitCode {
    let path = args.file.unwrap_or_else(Pins::locate);
    let pins = match Pins::load(&path) {
        Ok(p) => p,
        Err(problems) => {
            for p in problems {
                eprintln!("{p}");
            }
            return ExitCode::FAILURE;
        }
    };
    let selected = match report::pins::select(&pins, &args.only) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("layout-gate versions: --only: {e}");
            return ExitCode::FAILURE;
        }
    };
    super::emit(&if args.json { report::pins::json(&pins, &selected) } else { report::pins::text(&pins, &selected) })
}
