//! Who stands behind an expectation: `provenance:` with its `ref:` and `note:`, inherited by
//! a group's items unless they state their own; `observed:` (a kind-lane run) and `confirmed:`
//! (operator-lane runs). Each located where it was written.

use serde_saphyr::{Location, Spanned};

use super::model::*;
use super::problem::Ctx;
use super::raw::*;
use super::refs;
use super::version::VersionRange;

#[allow(clippy::too_many_arguments)]
pub(super) fn provenance(
    cx: &mut Ctx,
    field: &str,
    kind: Option<&Spanned<String>>,
    reference: &Option<Spanned<String>>,
    note: &Option<Spanned<String>>,
    observed: &Option<Spanned<RawObserved>>,
    inherit: Option<&Provenance>,
    range: Option<&VersionRange>,
) -> Option<Provenance> {
    let kind_given = kind.is_some();
    let kind_at = kind.map(|k| k.referenced);
    let kind = match (kind, inherit) {
        (Some(k), _) => match ProvenanceKind::parse(&k.value) {
            Some(p) => p,
            None => {
                cx.at(&k.referenced, field, format!("{:?} is not a provenance; use source, reported, inferred or observed", k.value));
                return None;
            }
        },
        (None, Some(parent)) => {
            if let Some(o) = observed {
                cx.at(&o.referenced, field.replace(".provenance", ".observed"), "`observed:` needs `provenance: observed` beside it");
                return None;
            }
            // An item that names only a ref or note still inherits its group's kind.
            if reference.is_none() && note.is_none() {
                return Some(parent.clone());
            }
            parent.kind
        }
        (None, None) => return None,
    };
    let stated = kind_at.filter(|_| kind == ProvenanceKind::Observed);
    let observed = observed_by(cx, field, kind, stated, observed, range);
    let observed = match observed {
        Ok(o) => o,
        Err(()) => return None,
    };
    // An item that inherits `observed` inherits the run that observed it.
    let observed = observed.or_else(|| if kind_given { None } else { inherit.and_then(|p| p.observed.clone()) });
    if let Some(r) = reference {
        check_ref(cx, &field.replace(".provenance", ".ref"), r);
    }
    // A ref is inherited only with the kind: an item that states its own provenance speaks for
    // itself, and the group's reference may not support it.
    let inherit_ref = if kind_given { None } else { inherit.and_then(|p| p.reference.clone()) };
    Some(Provenance {
        kind,
        reference: reference.as_ref().map(|r| r.value.clone()).or(inherit_ref),
        note: note.as_ref().map(|n| n.value.clone()),
        observed,
    })
}

/// `observed:` is required with a stated `provenance: observed`, refused with any other, and
/// must name lane `kind` (only the kind lane observes Cilium), a Cilium version, a date and a
/// run id.
fn observed_by(
    cx: &mut Ctx,
    field: &str,
    kind: ProvenanceKind,
    stated_observed: Option<Location>,
    observed: &Option<Spanned<RawObserved>>,
    range: Option<&VersionRange>,
) -> Result<Option<ObservedBy>, ()> {
    let ofield = field.replace(".provenance", ".observed");
    match (stated_observed, observed) {
        (None, None) => Ok(None),
        (None, Some(o)) => {
            cx.at(&o.referenced, &ofield, format!("`observed:` belongs to `provenance: observed`, not {}", kind.as_str()));
            Err(())
        }
        (Some(at), None) => {
            cx.at(
                &at,
                ofield,
                "provenance: observed needs `observed: {lane: kind, cilium: VERSION, date: YYYY-MM-DD, run: RUN_ID}` (only `run --lane kind --record` writes it)",
            );
            Err(())
        }
        (Some(_), Some(o)) => {
            let mut bad = false;
            let mut get = |v: &Option<Spanned<String>>, name: &str| -> String {
                match v {
                    Some(s) if !s.value.trim().is_empty() => s.value.clone(),
                    _ => {
                        cx.at(&o.referenced, format!("{ofield}.{name}"), format!("`observed:` must say {name}"));
                        bad = true;
                        String::new()
                    }
                }
            };
            let by = ObservedBy {
                lane: get(&o.value.lane, "lane"),
                cilium: get(&o.value.cilium, "cilium"),
                date: get(&o.value.date, "date"),
                run: get(&o.value.run, "run"),
            };
            if bad {
                return Err(());
            }
            if by.lane != "kind" {
                cx.at(
                    &o.referenced,
                    format!("{ofield}.lane"),
                    format!("{:?}: only the kind lane observes Cilium; a model run never makes an expectation observed", by.lane),
                );
                return Err(());
            }
            // Each part located at its own value (all four are present here).
            let loc = |v: &Option<Spanned<String>>| v.as_ref().map(|s| s.referenced).unwrap_or(o.referenced);
            let version = match crate::case::CiliumVersion::parse(&by.cilium) {
                Ok(v) => v,
                Err(_) => {
                    cx.at(&loc(&o.value.cilium), format!("{ofield}.cilium"), format!("{:?} is not a Cilium version", by.cilium));
                    return Err(());
                }
            };
            if let Some(r) = range
                && !r.matches(&version)
            {
                cx.at(
                    &loc(&o.value.cilium),
                    format!("{ofield}.cilium"),
                    format!("{version} is outside this group's range {r}: an observation of {version} says nothing about the versions this group speaks of"),
                );
                return Err(());
            }
            let day = time::macros::format_description!("[year]-[month]-[day]");
            if time::Date::parse(&by.date, day).is_err() {
                cx.at(&loc(&o.value.date), format!("{ofield}.date"), format!("{:?} is not a date (YYYY-MM-DD)", by.date));
                return Err(());
            }
            // The run ids the kind lane writes name the lane and the version.
            if !by.run.contains(&format!("-kind-{version}")) {
                cx.at(
                    &loc(&o.value.run),
                    format!("{ofield}.run"),
                    format!("{:?} is not a kind run of {version}: the kind lane's run ids read <time>-kind-{version}-...", by.run),
                );
                return Err(());
            }
            Ok(Some(by))
        }
    }
}

/// `confirmed:` entries: each names lane `operator`, a Cilium version inside the group's range
/// (once), the operator module's sum (`h1:...`), a date and an operator run of that version.
pub(super) fn confirmed_by(cx: &mut Ctx, gf: &str, raw: &[Spanned<RawConfirmed>], range: Option<&VersionRange>) -> Vec<ConfirmedBy> {
    let mut out: Vec<ConfirmedBy> = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let field = format!("{gf}.confirmed[{i}]");
        let at = |v: &Option<Spanned<String>>| v.as_ref().map(|s| s.referenced).unwrap_or(c.referenced);
        let mut missing = false;
        let mut get = |v: &Option<Spanned<String>>, name: &str| match v {
            Some(s) if !s.value.trim().is_empty() => s.value.trim().to_string(),
            _ => {
                cx.at(&c.referenced, format!("{field}.{name}"), format!("`confirmed:` must say {name}"));
                missing = true;
                String::new()
            }
        };
        let by = ConfirmedBy {
            lane: get(&c.value.lane, "lane"),
            cilium: get(&c.value.cilium, "cilium"),
            module: get(&c.value.module, "module"),
            date: get(&c.value.date, "date"),
            run: get(&c.value.run, "run"),
        };
        if missing {
            continue;
        }
        if by.lane != "operator" {
            cx.at(
                &at(&c.value.lane),
                format!("{field}.lane"),
                format!("{:?}: only the operator lane confirms (the kind lane observes: `observed:`)", by.lane),
            );
            continue;
        }
        let Ok(version) = crate::case::CiliumVersion::parse(&by.cilium) else {
            cx.at(&at(&c.value.cilium), format!("{field}.cilium"), format!("{:?} is not a Cilium version", by.cilium));
            continue;
        };
        if let Some(r) = range
            && !r.matches(&version)
        {
            cx.at(&at(&c.value.cilium), format!("{field}.cilium"), format!("{version} is outside this group's range {r}"));
            continue;
        }
        if out.iter().any(|o| o.cilium == by.cilium) {
            cx.at(&at(&c.value.cilium), format!("{field}.cilium"), format!("{version} is confirmed twice in this group"));
            continue;
        }
        if !by.module.starts_with("h1:") {
            cx.at(&at(&c.value.module), format!("{field}.module"), format!("{:?} is not a Go module sum (h1:...)", by.module));
            continue;
        }
        let day = time::macros::format_description!("[year]-[month]-[day]");
        if time::Date::parse(&by.date, day).is_err() {
            cx.at(&at(&c.value.date), format!("{field}.date"), format!("{:?} is not a date (YYYY-MM-DD)", by.date));
            continue;
        }
        if !by.run.contains(&format!("-operator-{version}")) {
            cx.at(
                &at(&c.value.run),
                format!("{field}.run"),
                format!("{:?} is not an operator run of {version}: its run ids read <time>-operator-{version}-...", by.run),
            );
            continue;
        }
        out.push(by);
    }
    out
}

/// A `ref` (or `refs` entry) must classify (see [`refs`]); the problem points at the value.
pub(super) fn check_ref(cx: &mut Ctx, field: &str, r: &Spanned<String>) {
    if let Err(e) = refs::classify_all(&r.value, cx.repo_root.as_deref()) {
        cx.at(&r.referenced, field, e);
    }
}
