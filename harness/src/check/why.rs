//! Why listeners are conflicted or refused, as `check` shows it: the model's [`why`] per
//! version, in the input's own names, and grouped so a cause several versions share is said
//! once under all of them.
//!
//! [`why`]: crate::lanes::model::why

use super::outcome::and_list;
use super::types::{GatewayCheck, VersionResult};
pub use super::types::{Meets, WhyRow};
use crate::lanes::model::input::GatewayInput;
use crate::lanes::model::rules;
use crate::lanes::model::why::{Why, WhyKind};

/// The rows of `whys`, with namespaces put back into the input's by `unmap`.
pub fn rows(gw: &GatewayInput, whys: &[Why], unmap: &dyn Fn(&str) -> String) -> Vec<WhyRow> {
    whys.iter()
        .map(|w| {
            let (kind, reason, meets) = match &w.kind {
                WhyKind::Conflict { reason, others, .. } => (
                    "conflict",
                    reason.clone(),
                    others.iter().map(|m| Meets { listener: m.other.clone(), hostname: m.hostname.clone() }).collect(),
                ),
                WhyKind::Refused { conditions, .. } => ("refused", conditions.join(", "), Vec::new()),
            };
            WhyRow {
                listeners: w.listeners.clone(),
                kind,
                reason,
                meets,
                messages: w.messages.iter().map(|m| unmap(m)).collect(),
                rule: w.rule.id,
                rule_versions: w.rule.versions,
                upstream: w.upstream.map(|u| u.text()).unwrap_or_else(|| w.rule.source.to_string()),
                without: w.without.iter().map(|c| format!("cases/{c}")).collect(),
                lines: w.lines(gw).iter().map(|l| unmap(l)).collect(),
            }
        })
        .collect()
}

/// Versions that share the very same causes, in the check's version order: `(versions, rows)`;
/// versions without any cause are left out.
pub fn grouped(c: &GatewayCheck) -> Vec<(Vec<String>, &[WhyRow])> {
    let mut out: Vec<(Vec<String>, &[WhyRow])> = Vec::new();
    for v in c.versions.iter().filter(|v| !v.why.is_empty()) {
        match out.iter_mut().find(|(_, rows)| *rows == v.why.as_slice()) {
            Some((vs, _)) => vs.push(v.version.clone()),
            None => out.push((vec![v.version.clone()], v.why.as_slice())),
        }
    }
    out
}

/// The text block `check`'s table prints under the listener conditions.
pub fn table_block(c: &GatewayCheck) -> String {
    let mut s = String::new();
    let groups = grouped(c);
    if groups.is_empty() {
        return s;
    }
    s.push_str("\nWhy (the model's rule for each conflicted or refused listener, and the upstream code it mirrors):\n");
    for (versions, rows) in groups {
        s.push_str(&format!("  {}:\n", and_list(&versions)));
        for r in rows {
            for l in &r.lines {
                s.push_str(&format!("    {l}\n"));
            }
        }
    }
    s
}

/// The same in Markdown: one list per group of versions, details nested.
pub fn markdown_block(c: &GatewayCheck) -> String {
    use crate::markdown::cell;
    let mut s = String::new();
    let groups = grouped(c);
    if groups.is_empty() {
        return s;
    }
    s.push_str("\n**Why listeners are conflicted or refused** (the model's rules, and the upstream code each mirrors)\n");
    for (versions, rows) in groups {
        s.push_str(&format!("\n{}:\n\n", and_list(&versions)));
        for r in rows {
            let mut lines = r.lines.iter();
            if let Some(head) = lines.next() {
                s.push_str(&format!("- {}\n", cell(head)));
            }
            for l in lines {
                s.push_str(&format!("  - {}\n", cell(l.trim_start())));
            }
        }
    }
    s
}

/// What a verdict against the baseline names as the causes of its changes, each once: the
/// headline of every conflict or refusal `r` has and `base` has not, then every Gateway-level
/// rule of the model that holds on `r` and did not shape `base` (conflicted listeners dropped,
/// or still translated), with what it says.
pub fn new_causes(base: &VersionResult, r: &VersionResult) -> Vec<String> {
    let head = |w: &WhyRow| w.lines.first().cloned().unwrap_or_default();
    let before: Vec<String> = base.why.iter().map(head).collect();
    let mut out: Vec<String> = Vec::new();
    let mut cited: Vec<&str> = Vec::new();
    for w in &r.why {
        let h = head(w);
        if !before.contains(&h) && !out.contains(&h) {
            out.push(h);
            cited.push(w.rule);
        }
    }
    // A rule already cited by a cause above is not said twice; the two one-listener rules
    // describe the same layout on either side of 1.19.6 and are no cause of anything.
    let same_layout = [rules::SINGLE_LISTENER.id, rules::NO_SPLIT.id];
    for id in r.rules.iter().filter(|id| !base.rules.contains(id) && !cited.contains(&id.as_str()) && !same_layout.contains(&id.as_str())) {
        if let Some(rule) = rules::ALL.iter().find(|x| x.id == id) {
            let line = format!("rule {} [{}]: {}", rule.id, rule.versions, rule.says);
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}
