//! `layout-gate lint [DIR]`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::emit;

pub fn run(dir: PathBuf) -> ExitCode {
    match crate::case::lint(&dir) {
        Ok(cases) => {
            let mut text = String::new();
            for c in &cases {
                let groups: Vec<&str> = c.groups.iter().map(|g| g.range.as_str()).collect();
                text.push_str(&format!("ok  {} ({} expectation groups: {})\n", c.name, c.groups.len(), groups.join("; ")));
            }
            text.push_str(&format!("{} cases valid\n", cases.len()));
            emit(&text)
        }
        Err(problems) => {
            for p in &problems {
                eprintln!("{}", crate::term::line(&p.to_string()));
            }
            eprintln!("{} problem(s)", problems.len());
            ExitCode::FAILURE
        }
    }
}
