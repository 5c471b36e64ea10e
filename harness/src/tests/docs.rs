//! The docs stay true to the repository: the map of `harness/src/` in `docs/architecture.md`
//! names every module there and nothing else, with what each imports (and no two top modules
//! import each other), the counts README.md and docs/ quote are the
//! repository's own, and every relative link and anchor in them resolves.
//!
//! The e2e trial `docs::e2e_trial_count_adds_up` checks the one count only the e2e target can
//! compute (its own trial list).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// README.md and every Markdown file of docs/, as (path relative to the root, text).
pub(crate) fn documents() -> Vec<(String, String)> {
    let mut out = vec![("README.md".to_string(), read("README.md"))];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    for p in docs {
        let rel = p.strip_prefix(root()).expect("under the root").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
        out.push((rel, text));
    }
    out
}

/// Lines outside fenced code blocks, with their line numbers (from 1).
fn prose(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    text.lines().enumerate().filter_map(move |(i, l)| {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        (!fenced).then_some((i + 1, l))
    })
}

// --- the map -------------------------------------------------------------------------------

/// What is under `dir` (relative to harness/src/), as the map names it: `name/` for a folder,
/// `name.rs` for a module file (`mod.rs` is its folder's, and non-Rust files are data).
fn modules_under(dir: &str) -> BTreeSet<String> {
    let base = root().join("harness/src").join(dir);
    let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(&base).unwrap_or_else(|e| panic!("{}: {e}", base.display())) {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().expect("file type").is_dir() {
            out.insert(format!("{prefix}{name}/"));
        } else if name.ends_with(".rs") && name != "mod.rs" {
            out.insert(format!("{prefix}{name}"));
        }
    }
    out
}

/// The names in the first column of the tables in `## The map` (its `###` subsections
/// included): every `code` span of that cell.
fn named_in_map(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for (_, line) in prose(text) {
        if let Some(h) = line.strip_prefix("## ") {
            inside = h.trim() == "The map";
            continue;
        }
        if !inside || !line.starts_with('|') {
            continue;
        }
        let first = line.trim_start_matches('|').split('|').next().unwrap_or("");
        for (i, part) in first.split('`').enumerate() {
            if i % 2 == 1 {
                out.insert(part.trim().to_string());
            }
        }
    }
    out
}

/// The map's problems against the tree: each a sentence saying exactly what to change.
fn map_problems(named: &BTreeSet<String>, actual: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    for m in actual.difference(named) {
        let table = if m.starts_with("lanes/") { "\"### The lanes: `harness/src/lanes/`\"" } else { "\"## The map\"" };
        problems.push(format!(
            "harness/src/{m} exists, but docs/architecture.md does not name it: add the row \
             \"| `{m}` | what it owns | the top modules it imports |\" to the table under {table}"
        ));
    }
    for m in named.difference(actual) {
        if m == "lanes/mod.rs" {
            continue;
        }
        problems.push(format!(
            "docs/architecture.md names `{m}`, which is not under harness/src/: remove its row, or rename it to what took its place"
        ));
    }
    problems
}

#[test]
fn the_map_names_every_module() {
    let mut actual = modules_under("");
    actual.extend(modules_under("lanes"));
    let named = named_in_map(&read("docs/architecture.md"));
    let problems = map_problems(&named, &actual);
    assert!(problems.is_empty(), "the map of harness/src/ is out of date:\n{}", problems.join("\n"));
}

/// The check itself: a new folder is named, a removed one too, and `lanes/` has its own table.
#[test]
fn the_map_check_names_what_to_add() {
    let actual: BTreeSet<String> = ["case/", "live/", "lanes/model/", "lanes/live/"].iter().map(|s| s.to_string()).collect();
    let named: BTreeSet<String> = ["case/", "gone.rs", "lanes/model/"].iter().map(|s| s.to_string()).collect();
    let problems = map_problems(&named, &actual);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].starts_with("harness/src/lanes/live/ exists") && problems[0].contains("### The lanes"), "{}", problems[0]);
    assert!(problems[1].starts_with("harness/src/live/ exists") && problems[1].contains("\"| `live/` | what it owns"), "{}", problems[1]);
    assert!(problems[2].contains("names `gone.rs`, which is not under harness/src/"), "{}", problems[2]);
    let text = "## The map\n\n| Module | x |\n|---|---|\n| `a.rs`, `a/` | `b` is not named |\n\n## Next\n\n| `c/` | |\n";
    assert_eq!(named_in_map(text), ["a.rs", "a/"].iter().map(|s| s.to_string()).collect());
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = entry.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The files and folders that are compiled only for tests: those a parent declares as
/// `#[cfg(test)] mod NAME;`.
fn test_only(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("source");
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if *line != "#[cfg(test)]" {
                continue;
            }
            let Some(next) = lines[i + 1..].iter().find(|l| !l.starts_with("#[")) else { continue };
            let decl = next.trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) else { continue };
            let stem = file.file_stem().expect("a name");
            let base =
                if stem == "lib" || stem == "mod" { file.parent().expect("a parent").to_path_buf() } else { file.with_extension("") };
            out.push(base.join(format!("{name}.rs")));
            out.push(base.join(name));
        }
    }
    out
}

/// The top modules a source file names as `crate::X` outside comments and outside the
/// `#[cfg(test)]` items in it.
fn crate_refs(text: &str, into: &mut BTreeSet<String>) {
    let mut depth: i64 = 0;
    let mut skipping = false;
    let mut pending = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("//") {
            continue;
        }
        if t == "#[cfg(test)]" {
            pending = true;
            continue;
        }
        if pending && !t.starts_with("#[") {
            pending = false;
            if t.contains('{') {
                skipping = true;
                depth = 0;
            }
        }
        if skipping {
            depth += t.matches('{').count() as i64 - t.matches('}').count() as i64;
            if depth <= 0 && t.contains('}') {
                skipping = false;
            }
            continue;
        }
        for (at, _) in line.match_indices("crate::") {
            let name: String = line[at + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            if !name.is_empty() {
                into.insert(name);
            }
        }
    }
}

/// For each top module (`case`, `output`: a folder and its file are one module), the other top
/// modules its non-test code imports.
fn imports() -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let src = root().join("harness/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let tests = test_only(&files);
    let mut out: std::collections::BTreeMap<String, BTreeSet<String>> = std::collections::BTreeMap::new();
    for file in &files {
        if tests.iter().any(|t| file == t || file.starts_with(t)) {
            continue;
        }
        let rel = file.strip_prefix(&src).expect("under harness/src");
        let first = rel.components().next().expect("a component").as_os_str().to_string_lossy().into_owned();
        let top = first.trim_end_matches(".rs").to_string();
        let set = out.entry(top.clone()).or_default();
        crate_refs(&std::fs::read_to_string(file).expect("source"), set);
        set.remove(&top);
    }
    out
}

/// The Imports column of the map, per top module named in the first column (the test-only
/// rows, `(tests)`, left out).
fn imports_in_map(text: &str) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let mut out = std::collections::BTreeMap::new();
    let mut inside = false;
    for (_, line) in prose(text) {
        if let Some(h) = line.strip_prefix("## ") {
            inside = h.trim() == "The map";
            continue;
        }
        if line.starts_with("### ") {
            inside = false;
        }
        if !inside || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let (Some(first), Some(last)) = (cells.first(), cells.last()) else { continue };
        if cells.len() < 3 || *last == "(tests)" || *last == "Imports" || last.starts_with("---") {
            continue;
        }
        let names: BTreeSet<String> = if *last == "-" { BTreeSet::new() } else { last.split(',').map(|s| s.trim().to_string()).collect() };
        for (i, part) in first.split('`').enumerate() {
            if i % 2 == 1 {
                out.insert(part.trim_end_matches(".rs").trim_end_matches('/').to_string(), names.clone());
            }
        }
    }
    out
}

#[test]
fn the_map_says_what_each_module_imports() {
    let said = imports_in_map(&read("docs/architecture.md"));
    let mut problems = Vec::new();
    for (module, real) in imports() {
        let Some(claimed) = said.get(&module) else { continue };
        if *claimed != real {
            let list = |s: &BTreeSet<String>| if s.is_empty() { "-".to_string() } else { s.iter().cloned().collect::<Vec<_>>().join(", ") };
            problems.push(format!(
                "`{module}` imports {} (its non-test code's `crate::` paths), the map says {}: write \"{}\" in its Imports cell",
                list(&real),
                list(claimed),
                list(&real)
            ));
        }
    }
    assert!(!said.is_empty(), "no Imports column read from docs/architecture.md's map");
    assert!(problems.is_empty(), "docs/architecture.md's map is out of date:\n{}", problems.join("\n"));
    let cycles = cycles(&imports());
    assert!(cycles.is_empty(), "top modules that import each other (a lower stage imports a higher one):\n{}", cycles.join("\n"));
}

/// Each cycle between top modules, as `a -> b -> a`, found by a depth-first walk.
fn cycles(graph: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        node: &str,
        graph: &std::collections::BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            found.push(cycle.join(" -> "));
            return;
        }
        if !done.insert(node.to_string()) {
            return;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done, found);
        }
        path.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn a_cycle_is_found() {
    let graph: std::collections::BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
            .collect();
    assert_eq!(cycles(&graph), vec!["a -> b -> c -> a".to_string()]);
    let acyclic: std::collections::BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec![])].into_iter().map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect())).collect();
    assert!(cycles(&acyclic).is_empty());
}

#[test]
fn crate_refs_leave_out_tests_and_comments() {
    let mut found = BTreeSet::new();
    let src = "use crate::case::Case;\n// crate::report in a comment\nfn f() { crate::judge::x(); }\n#[cfg(test)]\nmod tests {\n    fn g() {\n        crate::check::y();\n    }\n}\nfn h() { crate::run::z(); }\n";
    crate_refs(src, &mut found);
    assert_eq!(found, ["case", "judge", "run"].iter().map(|s| s.to_string()).collect());
}

// --- counts --------------------------------------------------------------------------------

/// Case folders under `dir` (a folder holding `case.yaml`), counted as `lint` finds them.
fn cases_under(dir: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let entry = entry.expect("entry");
        if entry.file_type().expect("file type").is_dir() {
            let p = entry.path();
            if p.join("case.yaml").is_file() {
                n += 1;
            }
            n += cases_under(&p);
        }
    }
    n
}

/// Every number the documents put before `label` ("40 cases in the catalogue"), or in the cell
/// after it in a table row ("| cases in the catalogue | 40 |"), with where it was said.
pub(crate) fn quoted(docs: &[(String, String)], label: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (path, text) in docs {
        for (no, line) in prose(text) {
            for (at, _) in line.match_indices(label) {
                let before = line[..at].trim_end_matches(' ');
                let digits: String = before.chars().rev().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
                let digits: String = digits.chars().rev().filter(char::is_ascii_digit).collect();
                if !digits.is_empty() && before.len() < line[..at].len() {
                    out.push((format!("{path}:{no}"), digits.parse().expect("digits")));
                    continue;
                }
                let after = &line[at + label.len()..];
                if before.ends_with('|') && after.trim_start().starts_with('|') {
                    let cell = after.trim_start()[1..].split('|').next().unwrap_or("").trim();
                    if let Ok(n) = cell.trim_matches('*').parse() {
                        out.push((format!("{path}:{no} (table)"), n));
                    }
                }
            }
        }
    }
    out
}

/// Each quoted count against the repository's; every label must be quoted in figures.md's
/// table at least, so deleting the table is a failure too.
pub(crate) fn count_problems(docs: &[(String, String)], counts: &[(&str, u64, &str)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (label, want, how) in counts {
        let said = quoted(docs, label);
        if !said.iter().any(|(w, _)| w.starts_with("docs/figures.md:") && w.ends_with("(table)")) {
            problems.push(format!("docs/figures.md has no row \"| {label} | {want} | ... |\" in its Counts table"));
        }
        for (where_, n) in said {
            if n != *want {
                problems.push(format!("{where_}: \"{n} {label}\", but there are {want} ({how})"));
            }
        }
    }
    problems
}

#[test]
fn the_counts_add_up() {
    let root = root();
    let pins = crate::versions::Pins::load(&root.join(crate::versions::VERSIONS_FILE)).expect("the pins load");
    let counts: Vec<(&str, u64, &str)> = vec![
        ("cases in the catalogue", cases_under(&root.join("cases")) as u64, "folders under cases/ holding a case.yaml"),
        ("restated Cilium fixtures", cases_under(&root.join("cases/cilium")) as u64, "folders under cases/cilium/ holding a case.yaml"),
        ("pinned Cilium versions", pins.cilium.len() as u64, "the cilium: list of kind-config/versions.yaml"),
        ("versions the model is checked at", crate::lanes::model::checked::CHECKED.len() as u64, "harness/src/lanes/model/checked.rs"),
    ];
    let problems = count_problems(&documents(), &counts);
    assert!(problems.is_empty(), "the docs' counts are not the repository's:\n{}", problems.join("\n"));
}

/// The count check reads both forms and fails on a wrong number, and on a missing table row.
#[test]
fn the_count_check_can_fail() {
    let docs = vec![
        ("README.md".to_string(), "It holds 41 cases in the catalogue.\n```\n7 cases in the catalogue\n```\n".to_string()),
        ("docs/figures.md".to_string(), "| cases in the catalogue | 40 | `find` |\n".to_string()),
    ];
    let counts = [("cases in the catalogue", 40, "find"), ("pinned Cilium versions", 6, "pins")];
    let problems = count_problems(&docs, &counts);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].starts_with("README.md:1: \"41 cases in the catalogue\", but there are 40"), "{}", problems[0]);
    assert!(problems[1].contains("no row \"| pinned Cilium versions | 6 | ... |\""), "{}", problems[1]);
}

// --- links ---------------------------------------------------------------------------------

/// The targets of the Markdown links `[text](target)` on a line, outside `code` spans.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 1 {
            continue;
        }
        let mut rest = part;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(&after[..end]);
            rest = &after[end..];
        }
    }
    out
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .filter_map(|(_, l)| {
            let t = l.trim_start();
            let hashes = t.bytes().take_while(|b| *b == b'#').count();
            ((1..=6).contains(&hashes) && t[hashes..].starts_with(' ')).then(|| crate::case::refs::slug(t[hashes..].trim()))
        })
        .collect()
}

#[test]
fn every_link_resolves() {
    let root = root();
    let mut problems = Vec::new();
    for (path, text) in documents() {
        let dir = root.join(&path).parent().expect("a parent").to_path_buf();
        for (no, line) in prose(&text) {
            for target in link_targets(line) {
                if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = target.split_once('#').map_or((target, None), |(f, a)| (f, Some(a)));
                let resolved = if file.is_empty() { root.join(&path) } else { dir.join(file) };
                if !resolved.exists() {
                    problems.push(format!("{path}:{no}: link to {target}: no such file"));
                    continue;
                }
                if let Some(anchor) = anchor.filter(|_| resolved.extension().is_some_and(|x| x == "md")) {
                    let heads = anchors(&std::fs::read_to_string(&resolved).unwrap_or_default());
                    if !heads.contains(anchor) {
                        problems.push(format!("{path}:{no}: link to {target}: no heading with the anchor #{anchor}"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "links in README.md and docs/ that lead nowhere:\n{}", problems.join("\n"));
}
