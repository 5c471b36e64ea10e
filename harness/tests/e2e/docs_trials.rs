//! The docs' count of e2e trials is this target's own: `docs::e2e_trial_count_adds_up`. The
//! other counts (cases, pins, checked versions), the map of `harness/src/` and the docs' links
//! are checked by the unit tests in `harness/src/tests/docs.rs`.

use std::path::PathBuf;
use std::sync::OnceLock;

/// What `cargo test --test e2e -- --list` lists, set by `main` before any trial runs.
pub static LISTED: OnceLock<Listed> = OnceLock::new();

pub struct Listed {
    /// How many trials.
    count: usize,
    /// The trial that stands for a pin's whole operator lane when its control plane is not
    /// built here (`operator::<version>::control_plane`, or `::setup`): the list is then shorter
    /// than the one the docs quote, and that trial fails on its own, saying how to build it.
    unbuilt: Option<String>,
}

impl Listed {
    pub fn of<'a>(names: impl Iterator<Item = &'a str>) -> Listed {
        let mut count = 0;
        let mut unbuilt = None;
        for name in names {
            count += 1;
            if name.starts_with("operator::") && (name.ends_with("::control_plane") || name.ends_with("::setup")) {
                unbuilt.get_or_insert_with(|| name.to_string());
            }
        }
        Listed { count, unbuilt }
    }
}

const LABEL: &str = "e2e trials listed";

/// The variables that change how many trials are generated; docs/figures.md quotes the count
/// without them (and with the control plane built, as scripts/e2e.sh leaves it).
const COUNT_CHANGERS: [&str; 2] = ["LAYOUT_GATE_OPERATOR_CILIUM", "LAYOUT_GATE_CILIUM"];

/// Every number README.md or a docs/ file puts before "e2e trials listed", or in the table cell
/// after it, with where it was said.
fn quoted() -> Result<Vec<(String, usize)>, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map_err(|e| format!("docs/: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{rel}: {e}"))?;
        for (no, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices(LABEL) {
                let before = line[..at].trim_end();
                let digits: String = before.chars().rev().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
                let digits: String = digits.chars().rev().filter(char::is_ascii_digit).collect();
                if let Ok(n) = digits.parse() {
                    out.push((format!("{rel}:{}", no + 1), n));
                } else if before.ends_with('|') {
                    let cell = line[at + LABEL.len()..].trim_start().trim_start_matches('|').split('|').next().unwrap_or("").trim();
                    match cell.trim_matches('*').parse() {
                        Ok(n) => out.push((format!("{rel}:{} (table)", no + 1), n)),
                        Err(_) => out.push((format!("{rel}:{} (table: {cell:?} is not a number)", no + 1), usize::MAX)),
                    }
                }
            }
        }
    }
    Ok(out)
}

pub fn e2e_trial_count_adds_up() -> Result<(), String> {
    let listed = LISTED.get().ok_or("main did not record how many trials it listed")?;
    if let Some(stand_in) = &listed.unbuilt {
        eprintln!(
            "docs::e2e_trial_count_adds_up: {stand_in} stands for an operator lane not built here, so the list is shorter than the one the docs quote; not compared"
        );
        return Ok(());
    }
    let listed = listed.count;
    if let Some(var) = COUNT_CHANGERS.iter().find(|v| std::env::var_os(v).is_some()) {
        // The docs quote the default list; with another version selection there is nothing to
        // compare. Said, so a run with the variable set knows this trial checked nothing.
        eprintln!("docs::e2e_trial_count_adds_up: {var} is set, so the list is not the default one the docs quote; not compared");
        return Ok(());
    }
    let said = quoted()?;
    let mut problems = Vec::new();
    if !said.iter().any(|(w, _)| w.starts_with("docs/figures.md:") && w.ends_with("(table)")) {
        problems.push(format!("docs/figures.md has no row \"| {LABEL} | {listed} | ... |\" in its Counts table"));
    }
    for (where_, n) in said {
        if n != listed {
            problems.push(format!(
                "{where_}: says {} {LABEL}, but `cargo test --test e2e -- --list` lists {listed}: write {listed}",
                if n == usize::MAX { "a non-number of".to_string() } else { n.to_string() }
            ));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}
