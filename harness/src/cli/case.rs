//! `layout-gate case new NAME --from PATH...`: the case `check` derives from rendered
//! manifests, written down with the model's prediction per version as `inferred` expectations.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::check::{PredictArgs, bad, execute, prepare};
use crate::check::casefile;
use crate::types::CertName;

#[derive(Debug, Clone, Subcommand)]
pub enum CaseCommand {
    /// Write cases/NAME/ from rendered manifests; expectations are the model's prediction.
    New(NewArgs),
}

#[derive(Debug, Clone, Args)]
pub struct NewArgs {
    /// The case's name (its folder under --cases).
    pub name: String,
    /// Manifest files, folders, or - for standard input; repeat for several (`--from a.yaml
    /// --from b.yaml`). One value each, so the name may come before or after it.
    #[arg(long = "from", required = true, action = clap::ArgAction::Append, num_args = 1, value_name = "PATH")]
    pub from: Vec<PathBuf>,
    /// Folder of cases.
    #[arg(long, default_value = "cases", value_name = "DIR")]
    pub cases: PathBuf,
    #[command(flatten)]
    pub predict: PredictArgs,
}

pub fn run(command: CaseCommand) -> ExitCode {
    match command {
        CaseCommand::New(args) => new(args),
    }
}

fn new(args: NewArgs) -> ExitCode {
    let cmd = "case new";
    if CertName::new(args.name.clone()).is_err() {
        return bad(cmd, &format!("{:?} is not a case name: use lower-case letters, digits and inner hyphens", args.name));
    }
    let dir = args.cases.join(&args.name);
    if dir.exists() {
        return bad(cmd, &format!("{} exists; choose another name or remove it", dir.display()));
    }
    let prepared = match prepare(cmd, &args.predict) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (_, checks) = match execute(cmd, &args.from, &prepared.opts) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let check = match checks.as_slice() {
        [one] => one,
        many => {
            let names: Vec<String> = many.iter().map(|c| format!("{}/{}", c.derived.namespace, c.derived.gateway)).collect();
            return bad(cmd, &format!("a case speaks of one Gateway; the input has {}: {}", many.len(), names.join(", ")));
        }
    };
    let text = crate::check::case_text(check, &args.from, &prepared.pins.versions());
    if let Err(e) = casefile::write_case_dir(&dir, &text, &check.derived) {
        return bad(cmd, &format!("writing {}: {e}", dir.display()));
    }
    match crate::case::load(&dir) {
        Ok(case) => {
            // The case is written whatever becomes of this output: a closed pipe is exit 0, a
            // full disk exit 1, never a panic (println! was exit 101 after writing the case).
            let mut text =
                format!("wrote {} ({} expectation groups, all provenance: inferred, from the model)\n", dir.display(), case.groups.len());
            for n in &check.derived.notes {
                text.push_str(&format!("  note: {n}\n"));
            }
            text.push_str(&format!(
                "  next: layout-gate lint {}; layout-gate run --lane model --cases {} --case {}\n",
                dir.display(),
                args.cases.display(),
                args.name
            ));
            super::emit(&text)
        }
        Err(ps) => {
            eprintln!("layout-gate {cmd}: the written case does not load (a layout-gate bug; please report it):");
            for p in ps {
                eprintln!("  {p}");
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Top {
        #[command(subcommand)]
        command: CaseCommand,
    }

    fn parsed(args: &[&str]) -> NewArgs {
        let top = Top::try_parse_from(std::iter::once("case").chain(args.iter().copied())).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        match top.command {
            CaseCommand::New(a) => a,
        }
    }

    #[test]
    fn the_name_may_come_before_or_after_from() {
        for args in [&["new", "--from", "x.yaml", "mine"][..], &["new", "mine", "--from", "x.yaml"]] {
            let a = parsed(args);
            assert_eq!((a.name.as_str(), a.from.clone()), ("mine", vec![PathBuf::from("x.yaml")]), "{args:?}");
        }
        let a = parsed(&["new", "--from", "a.yaml", "--from", "b", "mine"]);
        assert_eq!(a.from, [PathBuf::from("a.yaml"), PathBuf::from("b")]);
    }
}
