//! `layout-gate explain CASE --cilium VERSION`: the model's predicted layout for a case; or
//! `layout-gate explain FILE.yaml...` (files, folders, `-`): for every Gateway of rendered
//! manifests, read exactly as `check` reads them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::emit;
use crate::lanes::model::{explain, input, translate};

#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// A case folder, a case name under --cases, or manifests as `check` takes them: files,
    /// folders (recursively: *.yaml, *.yml, *.json) or - for standard input; every Gateway in
    /// them is explained.
    #[arg(required = true, value_name = "CASE|PATH")]
    what: Vec<String>,
    /// Cilium version (one of the pinned versions); default: every pinned version.
    #[arg(long = "cilium", value_name = "VERSION")]
    cilium: Vec<String>,
    /// Folder of cases, for a case given by name.
    #[arg(long, default_value = "cases", value_name = "DIR")]
    cases: PathBuf,
    /// The pinned versions file to read instead of the one found from the current folder.
    #[arg(long, value_name = "FILE")]
    versions_file: Option<PathBuf>,
    /// With manifests: treat the input as the whole namespace, as `check --complete` does.
    #[arg(long)]
    complete: bool,
    /// Print every table cell whole: by default tables fit 120 columns, long cells cut with `…`.
    #[arg(long)]
    wide: bool,
}

/// The case folder `what` names, if it names one: a folder with a case.yaml, or a case name
/// under `cases`.
fn case_dir(what: &str, cases: &Path) -> Option<PathBuf> {
    let direct = PathBuf::from(what);
    if direct.join(crate::case::walk::CASE_FILE).is_file() {
        return Some(direct);
    }
    let named = cases.join(what);
    (!direct.exists() && what != "-" && named.join(crate::case::walk::CASE_FILE).is_file()).then_some(named)
}

pub fn run(args: ExplainArgs) -> ExitCode {
    let fail = |m: String| {
        eprintln!("layout-gate explain: {m}");
        ExitCode::FAILURE
    };
    // One case, or manifests (never a mix: a case is explained as its own folder says).
    let case = match args.what.as_slice() {
        [one] => case_dir(one, &args.cases),
        _ => None,
    };
    let manifests = case.is_none() && args.what.iter().all(|w| w == "-" || Path::new(w).exists());
    if case.is_none() && !manifests {
        let missing: Vec<&str> = args.what.iter().filter(|w| *w != "-" && !Path::new(w).exists()).map(String::as_str).collect();
        return fail(format!(
            "{}: neither a case folder, a case under {}, nor a manifest file or folder",
            missing.join(", "),
            args.cases.display()
        ));
    }
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
    let width = crate::table::width(args.wide);
    let Some(dir) = case else {
        // Manifests: `check`'s reader and derivation, so the same input gives the same errors
        // (exit 2, as `check` exits on bad input).
        let paths: Vec<PathBuf> = args.what.iter().map(PathBuf::from).collect();
        return match crate::check::explain_paths(&paths, &chosen, args.complete, width) {
            Ok((inputs, text)) => {
                for n in inputs.walk_notes() {
                    eprintln!("layout-gate explain: note: {n}");
                }
                if let Some(k) = inputs.skipped_line() {
                    eprintln!("layout-gate explain: {k}");
                }
                emit(&text.join("\n"))
            }
            Err(e) => super::check::bad("explain", &e.to_string()),
        };
    };
    let case = match crate::case::load(&dir) {
        Ok(c) => c,
        Err(problems) => return fail(problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")),
    };
    let model = match input::read(&case) {
        Ok(m) => m,
        Err(e) => return fail(e.to_string()),
    };
    // Every Gateway of the case, each translated on its own.
    let text: Vec<String> = chosen
        .iter()
        .flat_map(|v| {
            model
                .gateways
                .iter()
                .map(|gw| {
                    let gateway = format!("{}/{}", gw.namespace, gw.name);
                    explain::render_at(&format!("case {}", case.name), &gateway, gw, &translate::predict(gw, v), width, &|c| c.to_string())
                })
                .collect::<Vec<_>>()
        })
        .collect();
    emit(&text.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explain(args: &[&str]) -> (ExitCode, ExplainArgs) {
        #[derive(clap::Parser)]
        struct Cmd {
            #[command(flatten)]
            args: ExplainArgs,
        }
        use clap::Parser;
        let root = env!("CARGO_MANIFEST_DIR");
        let mut argv = vec!["explain".to_string(), "--cases".into(), format!("{root}/cases")];
        argv.extend(args.iter().map(|a| a.to_string()));
        let a = Cmd::parse_from(argv).args;
        (run(a.clone()), a)
    }

    /// A manifest file is explained like a case (every Gateway in it), and a bad one is refused
    /// with `check`'s own error, naming file, line and field.
    #[test]
    fn manifests_are_explained_as_check_reads_them() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let file = root.join("cases/rendered/cozystack-tenantgateway-dns01.yaml");
        let paths = vec![file.clone()];
        let v = crate::case::CiliumVersion::parse("1.19.6").unwrap();
        let (_, text) = crate::check::explain_paths(&paths, std::slice::from_ref(&v), false, Some(crate::table::WIDTH)).unwrap();
        assert_eq!(text.len(), 1, "one Gateway, one version");
        let t = &text[0];
        assert!(t.starts_with("MODEL PREDICTION (not an observation): manifests "), "{t}");
        assert!(t.contains("Cilium 1.19.6"), "{t}");
        assert!(t.contains("Conflicted=True/ProtocolConflict"), "{t}");
        assert!(!t.contains("lg-check"), "the input's own namespace, never the derived case's: {t}");
        // The chain table fits 120 columns in the input's names (renamed before it is fitted, so
        // its columns stay aligned); the status lines are never cut.
        let chains: Vec<&str> = t.lines().filter(|l| l.starts_with("listener ")).collect();
        assert!(chains.len() > 2 && chains.iter().all(|l| l.chars().count() <= crate::table::WIDTH), "{t}");
        let target_at = |l: &str| l.find("tenant-root:").or_else(|| l.find("listener-")).map(|i| l[..i].chars().count());
        let columns: Vec<Option<usize>> = chains.iter().map(|l| target_at(l)).collect();
        assert!(columns.windows(2).all(|w| w[0] == w[1]), "TARGET column misaligned: {t}");
        assert!(t.contains("Accepted=False/Invalid"), "{t}");
        // The same bad input, the same error as `check`.
        let tmp = tempfile::tempdir().unwrap();
        let bad = tmp.path().join("bad.yaml");
        std::fs::write(&bad, "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: [oops]\n").unwrap();
        let from_explain = crate::check::explain_paths(std::slice::from_ref(&bad), std::slice::from_ref(&v), false, None).unwrap_err();
        let from_check = crate::check::read::read(std::slice::from_ref(&bad)).unwrap_err();
        assert_eq!(from_explain.to_string(), from_check.to_string());
        assert!(from_check.to_string().contains("bad.yaml:"), "{from_check}");
        // On the command line: exit 2 for bad input, like check.
        let (code, _) = explain(&[bad.to_str().unwrap(), "--cilium", "1.19.6"]);
        assert_eq!(code, ExitCode::from(2));
        let (code, _) = explain(&[tmp.path().join("nope.yaml").to_str().unwrap()]);
        assert_eq!(code, ExitCode::FAILURE);
    }
}
