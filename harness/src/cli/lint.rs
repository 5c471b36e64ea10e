//! `layout-gate lint [DIR]`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::emit;

pub fn run(dir: PathBuf) -> ExitCode {
    // A range no pinned version falls in is never judged: a problem like any other.
    let linted = crate::case::lint(&dir).and_then(|cases| {
        let pins = crate::versions::Pins::load_default()?;
        let p = crate::case::lint_rules::with_pins(&cases, &pins.versions());
        // Said, not refused: the case may mean it at another version.
        let installs: Vec<_> =
            pins.cilium.iter().map(|p| (p.version.clone(), p.gateway_api.version.clone(), p.gateway_api.tlsroute.clone())).collect();
        for w in crate::case::lint_rules::admission_warnings(&cases, &installs) {
            eprintln!("warning: {}", crate::term::line(&w.to_string()));
        }
        if p.is_empty() { Ok(cases) } else { Err(p) }
    });
    match linted {
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
