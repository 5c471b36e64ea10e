//! `layout-gate versions --upstream`: the Cilium releases the Go module proxy serves that are
//! not pinned yet, so the nightly can say when a new Cilium is out.
//!
//! The proxy's version list (`go list -m -versions github.com/cilium/cilium`) is incomplete
//! here (it names only a few tags), so the list is completed by asking the proxy for the tags
//! that would come next: each pinned line's following patch releases, the next minor's
//! `.0` and its pre-releases (`-pre.N`, `-rc.N`). A tag the proxy refuses is named with the
//! proxy's answer, so "not served" is never mistaken for "not released".

use std::process::Command;

use crate::case::CiliumVersion;

pub const MODULE: &str = "github.com/cilium/cilium";

/// `go ARGS` outside any module (so no go.mod of the current folder is read or changed).
fn go(args: &[&str]) -> Result<std::process::Output, String> {
    Command::new("go")
        .args(args)
        .current_dir(std::env::temp_dir())
        .env("GOFLAGS", "-mod=mod")
        .output()
        .map_err(|e| format!("running go: {e}; install Go >= 1.26 (https://go.dev/dl/)"))
}

/// What the proxy said about one tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Served {
    Yes,
    /// Refused or unknown: the proxy's message.
    No(String),
}

/// Asks the proxy about `module@version` (`go mod download -json`, which prints `Error` for a
/// version it does not serve). `Err`: Go itself could not run.
pub fn ask(version: &str) -> Result<Served, String> {
    let out = go(&["mod", "download", "-json", &format!("{MODULE}@{version}")])?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    Ok(match v.get("Error").and_then(|e| e.as_str()) {
        None if v.get("Version").is_some() => Served::Yes,
        None => Served::No(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        // `MODULE@v: reading URL: 403 Forbidden` then `server response: ...`: the status and
        // the proxy's words, without the URL.
        Some(e) => {
            let status = e.lines().next().and_then(|l| l.rsplit(": ").next()).unwrap_or_default().trim();
            let said = e.lines().nth(1).map(|l| l.trim().trim_start_matches("server response:").trim()).unwrap_or_default();
            Served::No(if said.is_empty() { status.to_string() } else { format!("{status} ({said})") })
        }
    })
}

/// The proxy's own list of tags (may be partial).
pub fn listed() -> Result<Vec<String>, String> {
    let out = go(&["list", "-m", "-versions", MODULE])?;
    Ok(String::from_utf8_lossy(&out.stdout).split_whitespace().skip(1).map(str::to_string).collect())
}

/// The tags worth asking about beyond the pins: for each pinned line, the next `lookahead`
/// patch releases after its newest pin; the next minor's `.0` and its first pre-releases.
pub fn candidates(pinned: &[CiliumVersion], lookahead: u64) -> Vec<String> {
    let mut lines: std::collections::BTreeMap<(u64, u64), u64> = std::collections::BTreeMap::new();
    for v in pinned {
        let (maj, min, patch) = v.parts();
        let e = lines.entry((maj, min)).or_insert(patch);
        *e = (*e).max(patch);
    }
    let mut out = Vec::new();
    for ((maj, min), newest) in &lines {
        for p in newest + 1..=newest + lookahead {
            out.push(format!("v{maj}.{min}.{p}"));
        }
    }
    if let Some(((maj, min), _)) = lines.iter().next_back() {
        let next = format!("v{maj}.{}", min + 1);
        out.push(format!("{next}.0"));
        for n in 0..3 {
            out.push(format!("{next}.0-pre.{n}"));
            out.push(format!("{next}.0-rc.{n}"));
        }
    }
    out
}

/// One tag found upstream and not pinned, or asked about and refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub version: String,
    pub served: Served,
}

/// Every candidate and listed tag that is not pinned, with what the proxy says about it.
pub fn find(pinned: &[CiliumVersion]) -> Result<Vec<Finding>, String> {
    let pinned_tags: Vec<String> = pinned.iter().map(|v| format!("v{v}")).collect();
    let newest_line = pinned.iter().map(|v| (v.parts().0, v.parts().1)).max();
    let mut tags: Vec<String> = listed()?
        .into_iter()
        // Older lines than the pins' are not news.
        .filter(|t| {
            CiliumVersion::parse(t.trim_start_matches('v'))
                .is_ok_and(|v| newest_line.is_some_and(|n| (v.parts().0, v.parts().1) >= (n.0, n.1.saturating_sub(1))))
        })
        .collect();
    tags.extend(candidates(pinned, 2));
    tags.sort();
    tags.dedup();
    let mut out = Vec::new();
    for t in tags.into_iter().filter(|t| !pinned_tags.contains(t)) {
        out.push(Finding { served: ask(&t)?, version: t });
    }
    Ok(out)
}

/// The text `versions --upstream` prints.
pub fn text(findings: &[Finding]) -> String {
    let mut s = String::new();
    let served: Vec<&Finding> = findings.iter().filter(|f| f.served == Served::Yes).collect();
    if served.is_empty() {
        s.push_str("no Cilium release the Go module proxy serves is missing from the pins\n");
    } else {
        s.push_str("served by the Go module proxy, not pinned:\n");
        for f in &served {
            s.push_str(&format!("  {}\n", f.version));
        }
    }
    let refused: Vec<&Finding> = findings.iter().filter(|f| f.served != Served::Yes).collect();
    if !refused.is_empty() {
        s.push_str("asked, not served (unreleased, or refused by the proxy):\n");
        for f in refused {
            if let Served::No(why) = &f.served {
                s.push_str(&format!("  {}: {}\n", f.version, crate::term::line(why)));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_follow_each_line_and_the_next_minor() {
        let v = |s: &str| CiliumVersion::parse(s).unwrap();
        let c = candidates(&[v("1.19.5"), v("1.19.7"), v("1.20.2")], 2);
        assert_eq!(
            c,
            [
                "v1.19.8",
                "v1.19.9",
                "v1.20.3",
                "v1.20.4",
                "v1.21.0",
                "v1.21.0-pre.0",
                "v1.21.0-rc.0",
                "v1.21.0-pre.1",
                "v1.21.0-rc.1",
                "v1.21.0-pre.2",
                "v1.21.0-rc.2"
            ]
        );
    }

    #[test]
    fn the_text_separates_served_from_refused() {
        let f = vec![
            Finding { version: "v1.20.3".into(), served: Served::Yes },
            Finding { version: "v1.19.8".into(), served: Served::No("403 Forbidden".into()) },
        ];
        let t = text(&f);
        assert!(t.contains("not pinned:\n  v1.20.3\n"), "{t}");
        assert!(t.contains("  v1.19.8: 403 Forbidden"), "{t}");
        assert!(text(&f[1..]).starts_with("no Cilium release"), "{}", text(&f[1..]));
    }
}
