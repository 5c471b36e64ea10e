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
        eprintln!("layout-gate report: problem: {}", crate::term::line(&p.to_string()));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/report").join(name)
    }

    fn args(dirs: &[&str], out: &Path) -> ReportArgs {
        ReportArgs { dirs: dirs.iter().map(|d| data(d)).collect(), out: Some(out.to_path_buf()), json: false, allow_problems: false }
    }

    #[test]
    fn problems_fail_the_command_unless_allowed_and_the_report_is_still_written() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("report");
        let mut a = args(&["handwritten", "bad"], &out);
        assert_eq!(run(a.clone()), ExitCode::FAILURE);
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains("## Problems"), "{md}");
        a.allow_problems = true;
        assert_eq!(run(a), ExitCode::SUCCESS);
    }

    #[test]
    fn clean_input_writes_both_files_and_replaces_an_older_report() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("report");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("report.md"), "old").unwrap();
        assert_eq!(run(args(&["handwritten"], &out)), ExitCode::SUCCESS);
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        assert_eq!(json["report_schema_version"], 1);
        assert!(std::fs::read_to_string(out.join("report.md")).unwrap().starts_with("# layout-gate report"));
        // Nothing but the two files: no temporary file is left behind.
        let mut names: Vec<String> =
            std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["report.json", "report.md"]);
    }

    #[test]
    fn versions_refuses_an_unpinned_choice() {
        let a = VersionsArgs { json: true, only: "1.18.0".into(), file: None };
        assert_eq!(versions(a), ExitCode::FAILURE);
        let a = VersionsArgs { json: true, only: String::new(), file: None };
        assert_eq!(versions(a), ExitCode::SUCCESS);
    }
}
