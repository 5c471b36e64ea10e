//! `layout-gate report EVIDENCE_DIR...` (merge runs into one release-note report) and
//! `layout-gate versions` (the pinned versions, for people and for the nightly matrix).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::report::{self, Report};

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Run folders (holding evidence.json), or folders of run folders (one level down).
    #[arg(required = true, value_name = "EVIDENCE_DIR")]
    pub dirs: Vec<PathBuf>,
    /// Write report.md, report.json, report.html and report.svg into this folder instead of
    /// printing the Markdown.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write every run's results as one JUnit XML file (one testsuite per case and run),
    /// for a CI test tab.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print the JSON document to stdout instead of the Markdown.
    #[arg(long)]
    pub json: bool,
    /// Also compare each case file a run judged with the case folder here (`DIR/<case>/`),
    /// by digest, and the expectations the run stored with what those files give; a
    /// difference is a problem. Without it, the repository's own `cases/` is consulted where
    /// a case's files are still the ones a run judged (stored expectations, provenance
    /// included, must be what they give).
    #[arg(long, value_name = "DIR")]
    pub cases: Option<PathBuf>,
    /// Exit 0 even when the input has problems (they are still named in the report and on
    /// stderr).
    #[arg(long)]
    pub allow_problems: bool,
}

pub fn run(args: ReportArgs) -> ExitCode {
    // Run folders as a shared report may name them: never a local absolute path.
    let cwd = std::env::current_dir().ok();
    let mut loaded = report::load_all(&args.dirs, &|p: &Path| report::load::shared_path(p, cwd.as_deref()));
    match &args.cases {
        Some(dir) => {
            report::load::check_case_files(&mut loaded, report::load::CaseFiles::Given(dir));
            report::load::find_left_out(&mut loaded, dir);
        }
        // Not asked: the repository's own case files still hold each run to what it judged,
        // where they are the ones it judged.
        None => {
            if let Some(dir) = report::load::catalogue() {
                report::load::check_case_files(&mut loaded, report::load::CaseFiles::Catalogue(&dir));
            }
        }
    }
    // Rendered before the report takes the runs; written only after the report was.
    let junit = args.junit.as_ref().map(|_| {
        let mut runs: Vec<(&crate::evidence::Evidence, &str)> = loaded.runs.iter().map(|r| (&r.evidence, r.source.as_str())).collect();
        runs.sort_by(|a, b| {
            (a.0.lane, &a.0.cilium.as_ref().map(|c| &c.version), &a.0.run_id).cmp(&(
                b.0.lane,
                &b.0.cilium.as_ref().map(|c| &c.version),
                &b.0.run_id,
            ))
        });
        // evidence.json does not record the host a run ran on; saying so beats naming this one.
        crate::evidence::junit_of(&runs, "unknown")
    });
    let r = Report::build(loaded);
    for p in &r.problems {
        eprintln!("layout-gate report: problem: {}", crate::term::line(&p.to_string()));
    }
    let rendered = r.rendered();
    let (markdown, json) = (&rendered.markdown, &rendered.json);
    if let (Some(path), Some(body)) = (&args.junit, &junit) {
        match report::write::write_file(path, body) {
            Ok(p) => eprintln!("layout-gate report: wrote {}", p.display()),
            Err(e) => {
                eprintln!("layout-gate {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let printed = match &args.out {
        Some(out) => match report::write_report(out, &rendered) {
            Ok(paths) => {
                for p in paths {
                    eprintln!("layout-gate report: wrote {}", p.display());
                }
                if args.json { super::emit(json) } else { ExitCode::SUCCESS }
            }
            Err(e) => {
                eprintln!("layout-gate {e}");
                return ExitCode::FAILURE;
            }
        },
        None => super::emit(if args.json { json } else { markdown }),
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
    /// The versions file (default: kind-config/versions.yaml found from here upwards, else the
    /// pins embedded at build time).
    #[arg(long, visible_alias = "versions-file", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Also ask the Go module proxy (needs Go) which Cilium releases exist beyond the pins:
    /// its list, plus each pinned line's next patch releases and the next minor's `.0` and
    /// pre-releases. Exits 1 when one is served and not pinned.
    #[arg(long)]
    pub upstream: bool,
}

pub fn versions(args: VersionsArgs) -> ExitCode {
    let source = crate::versions::PinsSource::choose(args.file.as_deref());
    if let Some(n) = source.note() {
        eprintln!("layout-gate versions: {n}");
    }
    let pins = match source.load() {
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
    if args.upstream {
        eprintln!("layout-gate versions: asking the Go module proxy about {} ...", crate::versions::upstream::MODULE);
        return match crate::versions::upstream::find(&pins.versions()) {
            Ok(f) => {
                let code = super::emit(&crate::versions::upstream::text(&f));
                if f.iter().any(|f| f.served == crate::versions::upstream::Served::Yes) { ExitCode::FAILURE } else { code }
            }
            Err(e) => {
                eprintln!("layout-gate versions --upstream: {e}");
                ExitCode::from(2)
            }
        };
    }
    super::emit(&if args.json { report::pins::json(&pins, &selected) } else { report::pins::text(&pins, &selected) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/report").join(name)
    }

    fn args(dirs: &[&str], out: &Path) -> ReportArgs {
        ReportArgs {
            dirs: dirs.iter().map(|d| data(d)).collect(),
            out: Some(out.to_path_buf()),
            junit: None,
            json: false,
            cases: None,
            allow_problems: false,
        }
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
        assert_eq!(names, ["report.html", "report.json", "report.md", "report.svg"]);
    }

    #[test]
    fn junit_merges_every_run_into_one_file() {
        let tmp = tempfile::tempdir().unwrap();
        let junit = tmp.path().join("ci/merged.xml");
        let mut a = args(&["handwritten"], &tmp.path().join("report"));
        a.junit = Some(junit.clone());
        assert_eq!(run(a), ExitCode::SUCCESS);
        let xml = std::fs::read_to_string(&junit).unwrap();
        // One suite per case and run: 5 kind runs (1.20.1 in two shards) and 1 model run.
        let suites = xml.matches("<testsuite ").count();
        let loaded = report::load_all(&[data("handwritten")], &|p: &Path| p.display().to_string());
        let cases: usize = loaded.runs.iter().map(|r| r.evidence.cases.len()).sum();
        assert_eq!(suites, cases, "{xml}");
        assert!(xml.contains("name=\"kind 1.19.7 dns01-default\"") && xml.contains("name=\"model 1.19.6 dns01-default\""), "{xml}");
    }

    #[test]
    fn versions_refuses_an_unpinned_choice() {
        let a = VersionsArgs { json: true, only: "1.18.0".into(), file: None, upstream: false };
        assert_eq!(versions(a), ExitCode::FAILURE);
        let a = VersionsArgs { json: true, only: String::new(), file: None, upstream: false };
        assert_eq!(versions(a), ExitCode::SUCCESS);
    }
}
