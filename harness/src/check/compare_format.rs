//! `check --compare` as a plain table, Markdown or JSON (schema `layout-gate-check-compare`,
//! version [`SCHEMA_VERSION`]): per Gateway the side-by-side matrix (`= X` where both layouts
//! answer alike, `OLD -> NEW` where they differ) and, per group of versions that agree, what
//! the new layout gives and takes away. Every output says it is a model prediction.

use std::fmt::Write;

use serde_json::{Value, json};

use super::compare::{self, Compared, Pair};
use super::outcome::and_list;
use crate::markdown::cell;

pub const SCHEMA_VERSION: u32 = 2;

/// Everything one comparison found, ready to print.
pub struct CompareReport<'a> {
    pub compared: &'a Compared,
    /// The inputs as the user named them.
    pub old_label: String,
    pub new_label: String,
    /// The model-prediction banner of `check`.
    pub banner: String,
    pub extra: Vec<String>,
}

impl CompareReport<'_> {
    /// Whether the new layout takes a name away or answers one otherwise, on any version
    /// (what makes `check --compare` exit 1).
    pub fn differs(&self) -> bool {
        self.compared.pairs.iter().any(|p| compare::grouped_deltas(p).iter().any(|(_, d)| !d.takes.is_empty() || !d.changes.is_empty()))
    }

    /// Versions a side could not observe.
    pub fn errors(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.compared.pairs {
            for (side, c) in [("old", &p.old), ("new", &p.new)] {
                for v in c.iter().flat_map(|c| &c.versions) {
                    if let Some(e) = &v.error {
                        out.push(format!("{side} {}/{} on {}: {e}", p.namespace, p.name, v.version));
                    }
                }
            }
        }
        out
    }

    fn probed(&self) -> String {
        let extra = if self.extra.is_empty() { String::new() } else { format!(", plus --sni {}", self.extra.join(", ")) };
        format!("names probed on both: every name either layout claims{extra}")
    }
}

fn source(c: Option<&super::types::GatewayCheck>) -> String {
    c.map(|c| format!("{}:{}", c.derived.origin.file, c.derived.origin.line)).unwrap_or_else(|| "absent".into())
}

fn rows(p: &Pair) -> Vec<Vec<String>> {
    let versions = compare::versions(p);
    let mut rows = vec![[vec!["PORT".to_string(), "SNI".to_string()], versions.clone()].concat()];
    for k in &p.keys {
        let mut row = vec![k.port.to_string(), k.name()];
        row.extend(versions.iter().map(|v| compare::cell(p, v, k)));
        rows.push(row);
    }
    rows
}

/// The table output, fitted to [`crate::table::WIDTH`] columns.
pub fn table_text(r: &CompareReport) -> String {
    table_text_at(r, Some(crate::table::WIDTH))
}

/// The table output fitted to `width` columns (`None`: `--wide`, every cell whole).
pub fn table_text_at(r: &CompareReport, width: Option<usize>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", r.banner);
    let _ = writeln!(s, "COMPARE: old = {}; new = {} ({})", r.old_label, r.new_label, r.probed());
    for p in &r.compared.pairs {
        let _ = writeln!(s, "\nGateway {}/{} (old {}, new {})", p.namespace, p.name, source(p.old.as_ref()), source(p.new.as_ref()));
        let _ = writeln!(s, "\nAnswers, old -> new (= where both answer alike):");
        s.push_str(&crate::table::render_fit(&rows(p), width));
        let _ = writeln!(s, "\nWhat the new layout gives and takes away:");
        for (versions, d) in compare::grouped_deltas(p) {
            if d.is_empty() {
                let _ = writeln!(s, "  {}: nothing", and_list(&versions));
                continue;
            }
            let _ = writeln!(s, "  {}:", and_list(&versions));
            for l in d.lines() {
                let _ = writeln!(s, "    {l}");
            }
        }
    }
    s
}

pub fn markdown_text(r: &CompareReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### layout-gate check --compare\n\n> **{}**\n", cell(&r.banner));
    let _ = writeln!(s, "Old: `{}`; new: `{}` ({}).\n", r.old_label, r.new_label, cell(&r.probed()));
    for p in &r.compared.pairs {
        let _ = writeln!(s, "#### Gateway `{}/{}`\n", p.namespace, p.name);
        let _ = writeln!(s, "**What the new layout gives and takes away**\n");
        for (versions, d) in compare::grouped_deltas(p) {
            if d.is_empty() {
                let _ = writeln!(s, "- {}: nothing", and_list(&versions));
                continue;
            }
            let _ = writeln!(s, "- {}:", and_list(&versions));
            for l in d.lines() {
                let _ = writeln!(s, "  - {}", cell(&l));
            }
        }
        let _ = writeln!(s, "\nAnswers, old -> new (= where both answer alike):\n");
        for (i, row) in rows(p).iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
            let _ = writeln!(s, "| {} |", cells.join(" | "));
            if i == 0 {
                let _ = writeln!(s, "|{}", "---|".repeat(row.len()));
            }
        }
        s.push('\n');
    }
    s
}

pub fn json_value(r: &CompareReport) -> Value {
    let gateways: Vec<Value> = r
        .compared
        .pairs
        .iter()
        .map(|p| {
            let versions = compare::versions(p);
            let rows: Vec<Value> = p
                .keys
                .iter()
                .map(|k| {
                    let answers: Vec<Value> = versions
                        .iter()
                        .map(|v| {
                            let side = |c: Option<&super::types::GatewayCheck>| {
                                compare::answer(c, v, k).map(|(text, nothing)| json!({"answer": text, "nothing": nothing}))
                            };
                            json!({"version": v, "old": side(p.old.as_ref()), "new": side(p.new.as_ref())})
                        })
                        .collect();
                    let name = k.sni.as_ref().map(|s| s.as_str());
                    if k.plain {
                        json!({"port": k.port.get(), "plain": true, "host": name, "answers": answers})
                    } else {
                        json!({"port": k.port.get(), "sni": name, "answers": answers})
                    }
                })
                .collect();
            let deltas: Vec<Value> = compare::grouped_deltas(p)
                .into_iter()
                .map(|(vs, d)| {
                    json!({"versions": vs, "gives": d.gives, "takes": d.takes, "changes": d.changes,
                        "status_gone": d.status_gone, "status_new": d.status_new})
                })
                .collect();
            json!({"namespace": p.namespace, "name": p.name, "old": source(p.old.as_ref()), "new": source(p.new.as_ref()),
                "rows": rows, "deltas": deltas})
        })
        .collect();
    json!({
        "schema": "layout-gate-check-compare",
        "schema_version": SCHEMA_VERSION,
        "prediction": r.banner,
        "old": r.old_label,
        "new": r.new_label,
        "extra_sni": r.extra,
        "differs": r.differs(),
        "gateways": gateways,
    })
}
