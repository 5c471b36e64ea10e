//! Which cases a run takes: a folder of cases, optionally filtered by glob patterns over names, optionally one shard
//! of them (`--shard 2/3`), so a CI matrix scales out by adding jobs, not by lengthening one.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::case::{self, Case, CiliumVersion};

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

/// Which cases by name: glob patterns (`dns01-*`, `*passthrough*`, `http01-?`) to take (all when
/// none) and to skip. A pattern that matches no case is an error, not an empty run: a typo must
/// not pass as a green run of nothing.
///
/// Case names are paths under the cases folder (`cilium/gateway-invalid-route-kind`), and a
/// pattern is matched against the whole name with `*` and `?` crossing `/`: `*` is every case,
/// `*passthrough*` every passthrough case at any depth, `cilium/*` every case under `cilium/`.
/// (`*` once stayed inside one part, as in a shell; then `--skip '*'` left every `cilium/*`
/// case in, silently. A skip that leaves in what it seems to name is the worse surprise, so one
/// rule, the one a name reads by, holds for `--case` and `--skip` alike.)
#[derive(Debug, Clone, Default)]
pub struct Selection {
    only: Vec<Glob>,
    skip: Vec<Glob>,
}

#[derive(Debug, Clone)]
struct Glob {
    text: String,
    matcher: globset::GlobMatcher,
}

impl Glob {
    fn new(text: &str) -> Result<Glob, String> {
        let glob =
            globset::GlobBuilder::new(text).literal_separator(false).build().map_err(|e| format!("{text:?} is not a glob pattern: {e}"))?;
        Ok(Glob { text: text.to_string(), matcher: glob.compile_matcher() })
    }
    fn matches(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }
}

impl Selection {
    /// `only`: `--case` patterns; `skip`: `--skip` patterns.
    pub fn new(only: &[String], skip: &[String]) -> Result<Selection, String> {
        Ok(Selection {
            only: only.iter().map(|p| Glob::new(p)).collect::<Result<_, _>>()?,
            skip: skip.iter().map(|p| Glob::new(p)).collect::<Result<_, _>>()?,
        })
    }

    /// Every case.
    pub fn all() -> Selection {
        Selection::default()
    }

    pub fn takes(&self, name: &str) -> bool {
        (self.only.is_empty() || self.only.iter().any(|g| g.matches(name))) && !self.skip.iter().any(|g| g.matches(name))
    }

    /// The first pattern that matches none of `names`, as an error naming the known cases.
    fn check(&self, names: &[&str], dir: &Path) -> Result<(), String> {
        for (flag, globs) in [("--case", &self.only), ("--skip", &self.skip)] {
            for g in globs.iter() {
                if !names.iter().any(|n| g.matches(n)) {
                    let cases = crate::table::wrap(&names.join(", "), crate::table::WIDTH, "  ");
                    return Err(format!("{flag} {:?} matches no case in {}; cases:\n{cases}", g.text, dir.display()));
                }
            }
        }
        Ok(())
    }
}

/// Loads the cases below `dir`, keeps those `selection` takes and those of the shard (the
/// shard is taken after the selection, so `--case` and `--shard` compose).
pub fn select(dir: &Path, selection: &Selection, shard: Option<Shard>) -> Result<Vec<Case>, String> {
    let cases = case::lint(dir).map_err(|problems| {
        let lines: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        format!("the cases do not lint:\n{}", lines.join("\n"))
    })?;
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    selection.check(&names, dir)?;
    Ok(cases
        .into_iter()
        .filter(|c| selection.takes(&c.name))
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| s.takes(*i)))
        .map(|(_, c)| c)
        .collect())
}

/// Why the selection leaves nothing to run at the chosen versions, or `None` when every
/// chosen version has a case to judge. A case expects nothing at a version no group of it
/// covers (a Cilium fixture of another release line): run there, it would be left out, and a
/// run of nothing would print "0 passed, 0 failed" and exit 0. `explicit`: the versions were
/// asked for by name (`--cilium`), so one without any case is a mistake too; every pinned
/// version by default may leave some versions empty (each case speaks for its own).
/// `pinned`: the versions named when saying where each case has expectations.
pub fn nothing_to_run(cases: &[Case], chosen: &[CiliumVersion], explicit: bool, pinned: &[CiliumVersion]) -> Option<String> {
    let empty: Vec<&CiliumVersion> = chosen.iter().filter(|v| !cases.iter().any(|c| c.expects_at(v))).collect();
    if empty.is_empty() || (!explicit && empty.len() < chosen.len()) {
        return None;
    }
    let versions: Vec<String> = empty.iter().map(ToString::to_string).collect();
    let mut why = Vec::new();
    for c in cases.iter().take(8) {
        let has: Vec<String> = pinned.iter().filter(|v| c.expects_at(v)).map(ToString::to_string).collect();
        let ranges: Vec<&str> = c.groups.iter().map(|g| g.range.as_str()).collect();
        let has = if has.is_empty() { "no pinned version".to_string() } else { has.join(", ") };
        why.push(format!("{} has no expectation at {} (its groups cover {}: {has})", c.name, versions.join(", "), ranges.join("; ")));
    }
    if cases.len() > 8 {
        why.push(format!("and {} more case(s) alike", cases.len() - 8));
    }
    Some(format!("nothing to run at Cilium {}: {}", versions.join(", "), why.join("; ")))
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

    fn sel(only: &[&str], skip: &[&str]) -> Selection {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Selection::new(&v(only), &v(skip)).unwrap()
    }

    #[test]
    fn patterns_that_match_nothing_are_errors() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
        let e = select(&root, &sel(&["nope*"], &[]), None).unwrap_err();
        assert!(e.contains("--case \"nope*\" matches no case"), "{e}");
        let e = select(&root, &sel(&[], &["nope"]), None).unwrap_err();
        assert!(e.contains("--skip \"nope\" matches no case"), "{e}");
        assert!(!select(&root, &Selection::all(), None).unwrap().is_empty());
        assert!(Selection::new(&["[".into()], &[]).unwrap_err().contains("not a glob pattern"));
    }

    #[test]
    fn globs_take_and_skip() {
        let s = sel(&["dns01-*", "edge-mode"], &["*option1*"]);
        assert!(s.takes("dns01-default"));
        assert!(s.takes("edge-mode"));
        assert!(!s.takes("dns01-recommended-option1"));
        assert!(!s.takes("http01-default"));
        assert!(sel(&[], &[]).takes("anything"));
        assert!(!sel(&[], &["*"]).takes("anything"));
        // An exact name is a pattern that matches itself only.
        assert!(!sel(&["dns01"], &[]).takes("dns01-default"));
    }

    /// Names are paths, and `*` crosses `/` in both flags: issue 36 found `--skip '*'` leaving
    /// every `cilium/*` case in, silently.
    #[test]
    fn a_star_crosses_slashes_in_case_and_skip_alike() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
        let all = select(&root, &Selection::all(), None).unwrap();
        assert!(all.iter().any(|c| c.name.starts_with("cilium/")) && all.iter().any(|c| !c.name.contains('/')));
        // `--skip '*'` (and `--skip '**'`) leave nothing; `--case '*'` takes every case.
        for skip in ["*", "**"] {
            assert!(select(&root, &sel(&[], &[skip]), None).unwrap().is_empty(), "--skip {skip:?}");
        }
        assert_eq!(select(&root, &sel(&["*"], &[]), None).unwrap().len(), all.len());
        let under = select(&root, &sel(&["cilium/*"], &[]), None).unwrap();
        assert!(under.len() > 1 && under.iter().all(|c| c.name.starts_with("cilium/")));
        assert_eq!(select(&root, &sel(&["cilium/**"], &[]), None).unwrap().len(), under.len());
        // At any depth, with or without `**/`.
        let any_depth = select(&root, &sel(&["*invalid-route-kind"], &[]), None).unwrap();
        assert!(any_depth.iter().any(|c| c.name == "cilium/gateway-invalid-route-kind"));
        let dns01 = select(&root, &sel(&["**/dns01*"], &[]), None).unwrap();
        assert!(dns01.iter().any(|c| c.name == "dns01-default"));
        // A pattern matching nothing still says so, with the catalogue's names wrapped at the
        // table width with an indent, not one long line.
        let e = select(&root, &sel(&["*no-such-case"], &[]), None).unwrap_err();
        assert!(e.contains("--case \"*no-such-case\" matches no case"), "{e}");
        let listed: Vec<&str> = e.lines().skip(1).collect();
        assert!(listed.len() > 1 && listed.iter().all(|l| l.starts_with("  ") && l.chars().count() <= crate::table::WIDTH), "{e}");
    }

    #[test]
    fn the_shard_is_taken_after_the_selection() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
        let all = select(&root, &sel(&["*passthrough*"], &[]), None).unwrap();
        let one: Shard = "1/2".parse().unwrap();
        let two: Shard = "2/2".parse().unwrap();
        let a = select(&root, &sel(&["*passthrough*"], &[]), Some(one)).unwrap();
        let b = select(&root, &sel(&["*passthrough*"], &[]), Some(two)).unwrap();
        assert_eq!(a.len() + b.len(), all.len());
        assert!(a.iter().chain(&b).all(|c| c.name.contains("passthrough")));
    }

    fn v(s: &str) -> CiliumVersion {
        CiliumVersion::parse(s).unwrap()
    }

    /// `run --lane model --case cilium/gateway-multi-port-tls-passthrough --cilium 1.19.5`: the
    /// fixture speaks only for 1.20, so 1.19.5 leaves nothing to run; that is an error saying
    /// why, never "0 passed, 0 failed" and exit 0.
    #[test]
    fn a_selection_with_nothing_at_the_chosen_version_is_an_error_naming_why() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
        let cases = select(&root, &sel(&["cilium/gateway-multi-port-tls-passthrough"], &[]), None).unwrap();
        let pinned = [v("1.19.5"), v("1.19.6"), v("1.19.7"), v("1.20.1")];
        let e = nothing_to_run(&cases, &[v("1.19.5")], true, &pinned).expect("1.19.5 has nothing to run");
        assert_eq!(
            e,
            "nothing to run at Cilium 1.19.5: cilium/gateway-multi-port-tls-passthrough has no expectation at 1.19.5 \
             (its groups cover >=1.20.0; >=1.20.0: 1.20.1)"
        );
        // Asked by name, a version without a case is a mistake even beside one with a case.
        let e = nothing_to_run(&cases, &[v("1.19.5"), v("1.20.1")], true, &pinned).unwrap();
        assert!(e.starts_with("nothing to run at Cilium 1.19.5: "), "{e}");
        // Every pinned version by default: the versions the case speaks for run.
        assert_eq!(nothing_to_run(&cases, &pinned, false, &pinned), None);
        assert_eq!(nothing_to_run(&cases, &[v("1.20.1")], true, &pinned), None);
        // By default too, nothing at all is an error.
        assert!(nothing_to_run(&cases, &[v("1.19.5"), v("1.19.6")], false, &pinned).is_some());
    }
}
