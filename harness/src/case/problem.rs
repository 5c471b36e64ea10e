//! What every checker of a case returns: a [`Problem`] located by file, line, column and field,
//! and the collector the loader's sections push them into. Below every checker, so each may
//! report without knowing who calls it.

use std::fmt;
use std::path::PathBuf;

use serde_saphyr::Location;

/// One problem in a case, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    pub field: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}: {}", self.file.display(), self.line, self.column, self.field, self.message)
    }
}

/// serde-saphyr's message without its source snippet and location prefix (we print our own).
pub fn short_yaml_message(e: &serde_saphyr::Error) -> String {
    let full = e.to_string();
    let first = full.lines().next().unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "line 7 column 5: unknown field ..." -> "unknown field ..."
    match first.split_once(": ") {
        Some((loc, rest)) if loc.starts_with("line ") => rest.to_string(),
        _ => first.to_string(),
    }
}

/// The YAML key written on `line` of `text`, to name the field of a syntax or type error.
pub(super) fn key_on_line(text: &str, line: u64) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)? as usize)?;
    let t = l.trim_start().trim_start_matches("- ").trim_start();
    let (key, _) = t.split_once(':')?;
    let key = key.trim().trim_matches('"');
    (!key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')).then(|| key.to_string())
}

/// Problems of one file, collected in the order they are found (lint reports every one rather
/// than stopping at the first).
pub(super) struct Ctx {
    pub(super) file: PathBuf,
    pub(super) problems: Vec<Problem>,
    /// Where document references resolve (the repository holding the case).
    pub(super) repo_root: Option<PathBuf>,
}

impl Ctx {
    pub(super) fn at(&mut self, loc: &Location, field: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.file.clone(),
            line: loc.line(),
            column: loc.column(),
            field: field.into(),
            message: message.into(),
        });
    }
}

/// Where `needle` first appears at or after `line` (1-based) of `text`: the real line and column
/// of a manifest value, since objects carry only the line of their document.
pub(super) fn locate(text: &str, line: u64, needle: &str) -> (u64, u64) {
    for (i, l) in text.lines().enumerate().skip(line.saturating_sub(1) as usize) {
        if let Some(c) = l.find(needle) {
            return (i as u64 + 1, l[..c].chars().count() as u64 + 1);
        }
    }
    (line, 1)
}
