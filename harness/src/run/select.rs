//! Which cases a run takes: a folder of cases, optionally filtered by name, optionally one shard
//! of them (`--shard 2/3`), so a CI matrix scales out by adding jobs, not by lengthening one.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::case::{self, Case};

/// Shard `index` of `count` (1-based, as people count jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("{s:?} is not a shard like 2/3"))?;
        let index: u32 = i.trim().parse().map_err(|_| format!("{s:?}: {i:?} is not a number"))?;
        let count: u32 = n.trim().parse().map_err(|_| format!("{s:?}: {n:?} is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("{s:?}: a shard is I/N with 1 <= I <= N"));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether the case at `position` (in name order) belongs to this shard. Round robin keeps
    /// shards even as cases are added.
    pub fn takes(&self, position: usize) -> bool {
        position as u64 % self.count as u64 == (self.index - 1) as u64
    }
}

/// Loads the cases below `dir`, keeps those named in `only` (all when empty) and those of the
/// shard. An unknown name in `only` is an error, not an empty run.
pub fn select(dir: &Path, only: &[String], shard: Option<Shard>) -> Result<Vec<Case>, String> {
    let cases = case::lint(dir).map_err(|problems| {
        let lines: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        format!("the cases do not lint:\n{}", lines.join("\n"))
    })?;
    for name in only {
        if !cases.iter().any(|c| &c.name == name) {
            let known: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
            return Err(format!("no case named {name:?} in {}; cases: {}", dir.display(), known.join(", ")));
        }
    }
    Ok(cases
        .into_iter()
        .filter(|c| only.is_empty() || only.contains(&c.name))
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| s.takes(*i)))
        .map(|(_, c)| c)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_cases() {
        let shards: Vec<Shard> = ["1/3", "2/3", "3/3"].iter().map(|s| s.parse().unwrap()).collect();
        for pos in 0..10 {
            assert_eq!(shards.iter().filter(|s| s.takes(pos)).count(), 1);
        }
        assert!("0/3".parse::<Shard>().is_err());
        assert!("4/3".parse::<Shard>().is_err());
        assert!("a/3".parse::<Shard>().is_err());
    }

    #[test]
    fn unknown_case_names_are_errors() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
        assert!(select(&root, &["nope".into()], None).unwrap_err().contains("no case named \"nope\""));
        assert!(!select(&root, &[], None).unwrap().is_empty());
    }
}
