//! The Cilium versions the model has been held to, each with what held it there. A pinned
//! version not listed here is never answered silently: `check`, `case new` and `run --lane
//! model` refuse it unless `--assume-like VERSION` names a listed version whose behaviour is
//! assumed, and every output says so. When a new Cilium is pinned, add it here only once
//! something checked the model at it (the lead extends this list).

use crate::case::CiliumVersion;

/// One version the model has been checked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    pub version: &'static str,
    /// What checked the model at this version.
    pub by: &'static str,
    /// Whether Cilium's own operator at this version (the operator lane) is what held it.
    pub operator: bool,
}

/// What held the model at each of these versions: Cilium's own operator at the tag (the
/// catalogue, every case passing on the operator lane, each group confirmed with `--record`),
/// else the catalogue restated from Cilium's source and fixtures. A 1.20 pin is listed as held
/// only once the whole catalogue passed on its operator, which builds with two substituted
/// dependencies (issue #24: `kind-config/control-plane/cilium-operator/v1.20.x/substitutions.json`).
pub const CHECKED: &[Checked] = &[
    Checked {
        version: "1.19.5",
        by: "Cilium's own operator at v1.19.5 (operator lane): every catalogue case it has expectations for (25) answered as the model predicts, each group confirmed (cases/*/case.yaml `confirmed:`); the catalogue's cases in e2e model::*",
        operator: true,
    },
    Checked {
        version: "1.19.6",
        by: "Cilium's own operator at v1.19.6 (operator lane): every catalogue case it has expectations for (27) answered as the model predicts, each group confirmed; the catalogue's cases in e2e model::*",
        operator: true,
    },
    Checked {
        version: "1.19.7",
        by: "Cilium's own operator at v1.19.7 (operator lane, `run --lane operator --record`); the catalogue's cases in e2e model::*",
        operator: true,
    },
    Checked {
        version: "1.20.0",
        by: "Cilium's own operator at v1.20.0 (operator lane, built with the two substitutions of kind-config/control-plane/cilium-operator/v1.20.0/substitutions.json): every catalogue case it has expectations for (38) answered as the model predicts, each group confirmed (`run --lane operator --cilium 1.20.0 --record`, 2026-12-04)",
        operator: true,
    },
    Checked {
        version: "1.20.1",
        by: "Cilium's own operator at v1.20.1 (operator lane, built with the two substitutions of kind-config/control-plane/cilium-operator/v1.20.1/substitutions.json): every catalogue case it has expectations for (38) answered as the model predicts, each group confirmed (`run --lane operator --cilium 1.20.1 --record`, 2026-12-04); before, the catalogue restated from Cilium's source and operator fixtures",
        operator: true,
    },
    Checked {
        version: "1.20.2",
        by: "Cilium's own operator at v1.20.2 (operator lane, built with the two substitutions of kind-config/control-plane/cilium-operator/v1.20.2/substitutions.json): every catalogue case it has expectations for (38) answered as the model predicts, each group confirmed (`run --lane operator --cilium 1.20.2 --record`, 2026-12-04)",
        operator: true,
    },
];

/// Whether the model has been checked at `v`.
pub fn is_checked(v: &CiliumVersion) -> bool {
    CHECKED.iter().any(|c| c.version == v.to_string())
}

/// Whether the model has been held to Cilium's own operator at `v` (the operator lane), and by
/// what otherwise: the line `check` prints for each version it answers with the model.
pub fn held_line(v: &CiliumVersion) -> String {
    let figure = super::differential_figures::line(v);
    match CHECKED.iter().find(|c| c.version == v.to_string()) {
        Some(c) if c.operator => {
            format!("{v}: the model has been held to Cilium's own operator at this version (the catalogue's cases); {figure}")
        }
        Some(_) => format!(
            "{v}: the model has NOT been held to Cilium's operator at this version; checked by the catalogue restated from Cilium's source; {figure}"
        ),
        None => format!("{v}: the model has NOT been checked at this version; {figure}"),
    }
}

/// The checked versions, in order.
pub fn versions() -> Vec<String> {
    CHECKED.iter().map(|c| c.version.to_string()).collect()
}

/// The behaviour to predict for each of `versions`: a checked version's own; an unchecked one's
/// only with `assume` (a checked version), else an error naming the checked versions and the
/// flag. Returns (version, the checked version whose behaviour is assumed) for each assumed one.
pub fn assumptions(versions: &[CiliumVersion], assume: Option<&str>) -> Result<Vec<(CiliumVersion, CiliumVersion)>, String> {
    let assume = match assume {
        None => None,
        Some(a) => {
            let v = CiliumVersion::parse(a).map_err(|e| format!("--assume-like: {}", e.0))?;
            if !is_checked(&v) {
                return Err(format!("--assume-like {v}: the model has not been checked at {v} either; checked: {}", versions_text()));
            }
            Some(v)
        }
    };
    let mut out = Vec::new();
    for v in versions.iter().filter(|v| !is_checked(v)) {
        match &assume {
            Some(a) => out.push((v.clone(), a.clone())),
            None => {
                return Err(format!(
                    "Cilium {v} is pinned, but the model has not been checked at it (checked: {}): its answers would be another version's. Pass --assume-like VERSION to predict it with a checked version's behaviour, said in every output",
                    versions_text()
                ));
            }
        }
    }
    Ok(out)
}

/// The default selection (every pin, no `--cilium`, no `--assume-like`) leaves the versions the
/// model has not been checked at out instead of refusing the whole command: returns the kept
/// versions and, when some were left out, the line that says which and how to ask for them.
/// Asked for by name, or with `--assume-like`, nothing is left out ([`assumptions`] decides).
pub fn default_selection<T>(
    versions: Vec<(CiliumVersion, T)>,
    asked: bool,
    assume: Option<&str>,
) -> (Vec<(CiliumVersion, T)>, Option<String>) {
    if asked || assume.is_some() {
        return (versions, None);
    }
    let (kept, out): (Vec<_>, Vec<_>) = versions.into_iter().partition(|(v, _)| is_checked(v));
    if out.is_empty() {
        return (kept, None);
    }
    let names: Vec<String> = out.iter().map(|(v, _)| v.to_string()).collect();
    let line = format!(
        "left out: Cilium {} (pinned, but the model has not been checked at {}; checked: {}); `--cilium {} --assume-like VERSION` predicts with a checked version's behaviour, said in every output",
        names.join(", "),
        if names.len() == 1 { "it" } else { "them" },
        versions_text(),
        names[0]
    );
    (kept, Some(line))
}

fn versions_text() -> String {
    versions().join(", ")
}

/// The line every output carries for an assumed version.
pub fn assumed_line(v: &CiliumVersion, like: &CiliumVersion) -> String {
    format!("Cilium {v}: the model has not been checked at it; predicted with {like}'s behaviour (--assume-like {like})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_selection_leaves_unchecked_versions_out_and_says_so() {
        let all: Vec<(CiliumVersion, ())> = ["1.19.5", "1.21.0", "1.20.1", "1.21.1"].iter().map(|s| (v(s), ())).collect();
        let (kept, line) = default_selection(all.clone(), false, None);
        assert_eq!(kept.iter().map(|(v, _)| v.to_string()).collect::<Vec<_>>(), ["1.19.5", "1.20.1"]);
        let line = line.unwrap();
        assert!(line.contains("Cilium 1.21.0, 1.21.1") && line.contains("--assume-like"), "{line}");
        // Asked by name or with an assumption: nothing is dropped here.
        assert_eq!(default_selection(all.clone(), true, None).0.len(), 4);
        assert_eq!(default_selection(all, false, Some("1.20.1")).0.len(), 4);
    }

    fn v(s: &str) -> CiliumVersion {
        CiliumVersion::parse(s).unwrap()
    }

    #[test]
    fn every_listed_version_parses_and_is_listed_once() {
        let mut seen = Vec::new();
        for c in CHECKED {
            let parsed = v(c.version);
            assert!(!seen.contains(&parsed), "{} twice", c.version);
            assert!(!c.by.is_empty());
            seen.push(parsed);
        }
    }

    #[test]
    fn an_unchecked_version_is_refused_unless_a_checked_behaviour_is_assumed() {
        let e = assumptions(&[v("1.19.5"), v("1.21.0")], None).unwrap_err();
        assert!(e.contains("Cilium 1.21.0 is pinned, but the model has not been checked at it") && e.contains("--assume-like"), "{e}");
        assert_eq!(assumptions(&[v("1.19.5"), v("1.21.0")], Some("1.20.1")).unwrap(), [(v("1.21.0"), v("1.20.1"))]);
        assert!(assumptions(&[v("1.21.0")], Some("1.21.3")).unwrap_err().contains("not been checked at 1.21.3 either"));
        assert!(assumptions(&[v("1.19.5")], None).unwrap().is_empty());
    }
}
