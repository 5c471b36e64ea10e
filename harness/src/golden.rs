//! Golden files for tests: rendered output compared with a committed file, a line diff on
//! mismatch, and `LAYOUT_GATE_BLESS=1` to rewrite the file when a change is intended. One
//! implementation for every golden test in the crate (config dumps, bootstraps, kind manifests,
//! the dry run, reports).

use std::fmt::Write;
use std::path::Path;

pub const BLESS_VAR: &str = "LAYOUT_GATE_BLESS";

/// Whether this test run rewrites goldens instead of checking them.
pub fn blessing() -> bool {
    std::env::var(BLESS_VAR).is_ok_and(|v| v == "1")
}

/// Compares `actual` with the file at `path` (or writes it when blessing). The error names the
/// file and carries a line diff, `-` golden and `+` actual, with line numbers and context.
pub fn check(path: &Path, actual: &str) -> Result<(), String> {
    if blessing() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        return std::fs::write(path, actual).map_err(|e| format!("writing {}: {e}", path.display()));
    }
    match std::fs::read_to_string(path) {
        Ok(expected) if expected == actual => Ok(()),
        Ok(expected) => Err(format!(
            "{} differs (- golden, + actual); if the change is intended, rerun with {BLESS_VAR}=1\n{}",
            path.display(),
            line_diff(&expected, actual)
        )),
        Err(e) => Err(format!("{}: cannot read ({e}); run with {BLESS_VAR}=1 to create it. Actual:\n{actual}", path.display())),
    }
}

/// [`check`], panicking with its message: for tests that compare one file.
pub fn assert(path: &Path, actual: &str) {
    if let Err(message) = check(path, actual) {
        panic!("{message}");
    }
}

/// A line diff by longest common subsequence (goldens are small), with two lines of context
/// around each change and `...` between distant hunks. Numbers are golden lines for ` ` and
/// `-`, actual lines for `+`.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut ops: Vec<(char, usize, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', i + 1, a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // Deletions first, so a changed line reads "- old" then "+ new".
            ops.push(('-', i + 1, a[i]));
            i += 1;
        } else {
            ops.push(('+', j + 1, b[j]));
            j += 1;
        }
    }
    let near_change = |k: usize| ops[k.saturating_sub(2)..(k + 3).min(ops.len())].iter().any(|(op, _, _)| *op != ' ');
    let mut out = String::new();
    let mut skipped = false;
    for (k, (op, n, line)) in ops.iter().enumerate() {
        if *op == ' ' && !near_change(k) {
            skipped = true;
            continue;
        }
        if skipped && !out.is_empty() {
            out.push_str("  ...\n");
        }
        skipped = false;
        let _ = writeln!(out, "{n:>5} {op} {line}");
    }
    if expected.ends_with('\n') != actual.ends_with('\n') {
        out.push_str("      (the files differ in their final newline)\n");
    }
    out
}

/// The first word said twice in a row in `line` ("listener listener", "the the"), if any:
/// words one space apart, compared without case and without the quotes, backticks and
/// punctuation around them. Table columns (two spaces or more apart) and shell command lines
/// (`$ helm upgrade --install cilium cilium ...`: a release and a chart of the same name) are
/// not phrases.
pub fn doubled_word(line: &str) -> Option<String> {
    if line.trim_start().starts_with("$ ") {
        return None;
    }
    let bare = |w: &str| w.trim_matches(|c: char| "\"'`*()[]{}.,;:!?<>".contains(c)).to_lowercase();
    let words: Vec<&str> = line.split(' ').collect();
    words.windows(2).find_map(|p| {
        // `namespace: '{namespace}'`: a key and its value; `a, A`: a list; not phrases.
        if p[0].ends_with(':') || p[0].ends_with(',') {
            return None;
        }
        let (a, b) = (bare(p[0]), bare(p[1]));
        (!a.is_empty() && a.chars().all(char::is_alphabetic) && a == b).then(|| format!("{} {}", p[0], p[1]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every golden file under `harness/tests/data` (anything under a `golden` folder, and the
    /// recorded outputs: `*.md`, `*.txt`, `*.html`, `*.svg`) reads naturally: no generated
    /// phrase says a word twice ("listener listener", "route route", "the the").
    #[test]
    fn no_golden_says_a_word_twice() {
        fn walk(dir: &Path, golden: bool, out: &mut Vec<String>) {
            let Ok(entries) = std::fs::read_dir(dir) else { return };
            for e in entries.flatten() {
                let p = e.path();
                let output = p.extension().and_then(|x| x.to_str()).is_some_and(|x| ["md", "txt", "html", "svg"].contains(&x));
                if p.is_dir() {
                    walk(&p, golden || p.file_name().is_some_and(|n| n == "golden"), out);
                } else if !(golden || output) {
                    continue;
                } else if let Ok(text) = std::fs::read_to_string(&p) {
                    for (i, line) in text.lines().enumerate() {
                        if let Some(w) = doubled_word(line) {
                            out.push(format!("{}:{}: {w:?}", p.display(), i + 1));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data"), false, &mut found);
        assert!(found.is_empty(), "doubled words:\n{}", found.join("\n"));
        assert_eq!(doubled_word("- `Envoy listener \"listener\"`: 5 filter chains").as_deref(), Some("listener \"listener\"`:"));
        assert_eq!(doubled_word("see the The end"), Some("the The".into()));
        assert_eq!(doubled_word("NAME      NAME.crt"), None);
        assert_eq!(doubled_word("tls        tls"), None);
        assert_eq!(doubled_word("$ helm upgrade --install cilium cilium"), None);
        assert_eq!(doubled_word("gateway gateway-certificate Accepted"), None);
    }

    #[test]
    fn diff_shows_changes_with_numbers_and_context() {
        let d = line_diff("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nX\ne\nf\ng\nh\n");
        assert_eq!(d, "    2   b\n    3   c\n    4 - d\n    4 + X\n    5   e\n    6   f\n");
        let d = line_diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "0\n2\n3\n4\n5\n6\n7\n8\nnine\n");
        assert!(d.contains("    1 - 1\n    1 + 0\n") && d.contains("  ...\n") && d.contains("    9 + nine\n"), "{d}");
    }

    #[test]
    fn check_reports_mismatch_and_missing_files() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("g.txt");
        assert!(check(&p, "x\n").unwrap_err().contains("cannot read"));
        std::fs::write(&p, "x\n").unwrap();
        assert!(check(&p, "x\n").is_ok());
        let e = check(&p, "y\n").unwrap_err();
        assert!(e.contains("differs") && e.contains("    1 - x\n    1 + y\n"), "{e}");
    }
}
