//! `check --compare OLD... -- NEW...`: two layouts side by side at every version. Each input
//! is read and derived on its own (two objects of one kind, namespace and name are expected
//! across the two, never within one); Gateways are paired by namespace and name; both sides
//! are probed on the union of the names either claims, plus `--sni` extras, so what the new
//! layout gives and takes away shows up even for a name only one of them claims (an unclaimed
//! name under the old wildcard that now resets).

use std::path::PathBuf;

use super::derive::{self, Derived, MatrixKey};
use super::matrix::{matrix, names, plain_ports, ports};
use super::outcome::reply_text;
use super::types::{CheckError, GatewayCheck, Options};
use super::verdict::{NameChange, grouped_sentences};
use super::{check_gateway, read};
use crate::types::{Port, Sni};

/// The keys both sides are shown on: the union of both sides' ports and names (the old
/// layout's first), plus `extra`; likewise for plain HTTP. A side is probed only on its own
/// ports; on another it has no listener at all.
pub fn union(old: Option<&Derived>, new: Option<&Derived>, extra: &[Sni]) -> Vec<MatrixKey> {
    let sides: Vec<&Derived> = [old, new].into_iter().flatten().collect();
    let all_ports = |f: fn(&Derived) -> Vec<Port>| {
        let mut ps: Vec<Port> = sides.iter().flat_map(|d| f(d)).collect();
        ps.sort();
        ps.dedup();
        ps
    };
    let all_names = |plain: bool| -> Vec<Sni> { sides.iter().flat_map(|d| names(d, plain)).chain(extra.iter().cloned()).collect() };
    matrix(&all_ports(ports), &all_names(false), &all_ports(plain_ports), &all_names(true))
}

/// One Gateway of either layout, and what each side makes of it.
#[derive(Debug, Clone)]
pub struct Pair {
    pub namespace: String,
    pub name: String,
    pub old: Option<GatewayCheck>,
    pub new: Option<GatewayCheck>,
    /// The rows both sides are shown on.
    pub keys: Vec<MatrixKey>,
}

/// Both layouts, read, derived and checked.
pub struct Compared {
    pub old: read::Inputs,
    pub new: read::Inputs,
    pub pairs: Vec<Pair>,
}

/// Reads, derives and checks both layouts. Must run inside a tokio runtime.
pub async fn compare_paths(old: &[PathBuf], new: &[PathBuf], opts: &Options) -> Result<Compared, CheckError> {
    let old_inputs = read::read(old)?;
    let new_inputs = read::read(new)?;
    let dopts = derive::DeriveOptions { complete: opts.complete, each_file: false };
    let old_d = derive::derive_with(&old_inputs.objects, dopts)?;
    let new_d = derive::derive_with(&new_inputs.objects, dopts)?;
    let mut pairs: Vec<(String, String, Option<Derived>, Option<Derived>)> = Vec::new();
    for d in old_d {
        pairs.push((d.namespace.clone(), d.gateway.clone(), Some(d), None));
    }
    for d in new_d {
        match pairs.iter_mut().find(|(ns, n, _, new)| *ns == d.namespace && *n == d.gateway && new.is_none()) {
            Some(p) => p.3 = Some(d),
            None => pairs.push((d.namespace.clone(), d.gateway.clone(), None, Some(d))),
        }
    }
    let mut out = Vec::new();
    for (namespace, name, o, n) in pairs {
        let keys = union(o.as_ref(), n.as_ref(), &opts.extra_sni);
        let run = |d: Option<Derived>| {
            let keys = keys.clone();
            async move {
                match d {
                    None => Ok(None),
                    Some(mut d) => {
                        let (own, own_plain) = (ports(&d), plain_ports(&d));
                        d.matrix = keys.into_iter().filter(|k| if k.plain { &own_plain } else { &own }.contains(&k.port)).collect();
                        check_gateway(d, opts).await.map(Some)
                    }
                }
            }
        };
        let old = run(o).await?;
        let new = run(n).await?;
        out.push(Pair { namespace, name, old, new, keys });
    }
    Ok(Compared { old: old_inputs, new: new_inputs, pairs: out })
}

/// What one side answers on one row at one version: the text and whether it is nothing.
/// `None`: that side did not observe the version (its error says why).
pub fn answer(side: Option<&GatewayCheck>, version: &str, key: &MatrixKey) -> Option<(String, bool)> {
    let Some(c) = side else { return Some(("nothing (no such Gateway)".into(), true)) };
    if !c.derived.matrix.iter().any(|k| k.port == key.port && k.plain == key.plain) {
        let what = if key.plain { "no HTTP listener" } else { "no listener" };
        return Some((format!("nothing ({what} on this port)"), true));
    }
    let v = c.versions.iter().find(|v| v.version == version)?;
    v.answers.iter().find(|(k, _)| k == key).map(|(_, r)| (reply_text(c, r), r.is_nothing()))
}

/// What the new layout gives and takes away on one version, against the old one.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Delta {
    /// Names that answered nothing and now answer.
    pub gives: Vec<String>,
    /// Names that answered and now answer nothing.
    pub takes: Vec<String>,
    /// Names answered by something else now.
    pub changes: Vec<String>,
    /// Conflicts and refusals only the old layout has (headlines of its "why").
    pub status_gone: Vec<String>,
    /// Conflicts and refusals only the new layout has.
    pub status_new: Vec<String>,
}

impl Delta {
    pub fn is_empty(&self) -> bool {
        self == &Delta::default()
    }

    /// The lines of the delta, each with its label.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (label, items) in [
            ("takes away", &self.takes),
            ("gives", &self.gives),
            ("changes", &self.changes),
            ("no longer", &self.status_gone),
            ("newly", &self.status_new),
        ] {
            out.extend(items.iter().map(|i| format!("{label}: {i}")));
        }
        out
    }
}

/// The headlines of a side's conflicts and refusals on `version`.
fn why_heads(side: Option<&GatewayCheck>, version: &str) -> Vec<String> {
    side.and_then(|c| c.versions.iter().find(|v| v.version == version))
        .map(|v| v.why.iter().filter_map(|w| w.lines.first().cloned()).collect())
        .unwrap_or_default()
}

/// The new layout against the old on `version`.
pub fn delta(p: &Pair, version: &str) -> Delta {
    let (mut gives, mut takes, mut changes) = (Vec::new(), Vec::new(), Vec::new());
    for k in &p.keys {
        let (Some((was, was_nothing)), Some((now, now_nothing))) = (answer(p.old.as_ref(), version, k), answer(p.new.as_ref(), version, k))
        else {
            continue;
        };
        // Two ways of answering nothing are the same to a client.
        if was == now || (was_nothing && now_nothing) {
            continue;
        }
        let name = k.name();
        let port = k.port.get();
        match (was_nothing, now_nothing) {
            (false, true) => {
                takes.push(NameChange { port, now: format!("stop answering ({})", strip_nothing(&now)), was: Some(was), name })
            }
            (true, false) => gives.push(NameChange { port, now: format!("answer with {now}"), was: None, name }),
            _ => changes.push(NameChange { port, now: format!("answer with {now}"), was: Some(was), name }),
        }
    }
    let (old_why, new_why) = (why_heads(p.old.as_ref(), version), why_heads(p.new.as_ref(), version));
    Delta {
        gives: grouped_sentences(&gives),
        takes: grouped_sentences(&takes),
        changes: grouped_sentences(&changes),
        status_gone: old_why.iter().filter(|h| !new_why.contains(h)).cloned().collect(),
        status_new: new_why.iter().filter(|h| !old_why.contains(h)).cloned().collect(),
    }
}

/// `nothing (reset)` -> `reset`.
fn strip_nothing(s: &str) -> &str {
    s.strip_prefix("nothing (").and_then(|r| r.strip_suffix(')')).unwrap_or(s)
}

/// The versions of the comparison, in order: every version either side checked.
pub fn versions(p: &Pair) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in [p.old.as_ref(), p.new.as_ref()].into_iter().flatten() {
        for v in &c.versions {
            if !out.contains(&v.version) {
                out.push(v.version.clone());
            }
        }
    }
    out
}

/// Versions whose deltas are the same, said once: `(versions, delta)`.
pub fn grouped_deltas(p: &Pair) -> Vec<(Vec<String>, Delta)> {
    let mut out: Vec<(Vec<String>, Delta)> = Vec::new();
    for v in versions(p) {
        let d = delta(p, &v);
        match out.iter_mut().find(|(_, x)| *x == d) {
            Some((vs, _)) => vs.push(v),
            None => out.push((vec![v], d)),
        }
    }
    out
}

/// One cell of the side-by-side matrix: `= X` when both answer alike, else `OLD -> NEW`.
pub fn cell(p: &Pair, version: &str, key: &MatrixKey) -> String {
    let show = |a: Option<(String, bool)>| a.map(|(t, _)| t).unwrap_or_else(|| "-".into());
    let (o, n) = (answer(p.old.as_ref(), version, key), answer(p.new.as_ref(), version, key));
    let same = match (&o, &n) {
        (Some((a, an)), Some((b, bn))) => a == b || (*an && *bn),
        _ => false,
    };
    if same { format!("= {}", show(o)) } else { format!("{} -> {}", show(o), show(n)) }
}
