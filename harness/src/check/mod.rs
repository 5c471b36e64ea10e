//! `check`: the model lane without a case. Rendered manifests in; a case derived from them in
//! memory ([`derive`], as the text [`casefile`] writes, loaded by the case loader); the same model,
//! local Envoy, probe and dump summary as `run --lane model`, one Envoy per distinct
//! configuration, probed once it listens ([`observe`]); out the answer
//! matrix per pinned version and the sentences of what changes between versions ([`outcome`]),
//! as a table, JSON or Markdown ([`format`]). Everything it prints is a model prediction.
//!
//! A thin room over what exists: it imports the case, the model lane, the run glue, the judge
//! and the evidence types; nothing lower imports it. Inside, the floors run one way: `check`'s
//! types ([`types`]: options, results, errors) at the bottom, one Gateway's prediction
//! (`predict.rs`) and the operator's answers ([`operator`]) above them, and this file's
//! orchestration (derive every Gateway, predict, observe, the groups `case new` writes) on top;
//! the rooms that read results (`outcome`, `verdict`, `format`, ...) take them from [`types`].

pub mod answer;
pub mod casefile;
pub mod compare;
pub mod compare_format;
pub mod derive;
pub mod format;
pub mod http_port;
pub mod matrix;
pub mod observe;
pub mod operator;
pub mod outcome;
mod predict;
pub mod read;
pub mod record;
pub mod types;
pub mod verdict;
pub mod why;

#[cfg(test)]
mod tests;

use crate::case::{Case, CiliumVersion};
use crate::lanes::model::{explain, translate};

use casefile::Group;
use derive::Derived;
pub use observe::EnvoyPlan;
pub use predict::CASE_NAME;
use predict::{Prepared, group_of, model_gateway, observe_into, prepare, probe_case, unmap};
pub use types::{
    ChainRow, CheckError, EnvoyRow, GatewayCheck, Options, VersionResult, check_defaults, refused_line, same_answer, timeouts,
};

/// `explain FILE...`: every Gateway of rendered manifests, read and derived exactly as `check`
/// reads them (the same reader, the same errors), explained on each of `versions`, in the input's own names, tables fitted to `width`.
pub fn explain_paths(
    paths: &[std::path::PathBuf],
    versions: &[CiliumVersion],
    complete: bool,
    width: Option<usize>,
) -> Result<(read::Inputs, Vec<String>), CheckError> {
    let inputs = read::read(paths)?;
    let derived = derive::derive_with(&inputs.objects, derive::DeriveOptions { complete, each_file: false })?;
    let mut out = Vec::new();
    for d in derived {
        let (_, gw) = model_gateway(&d)?;
        let sources: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let gateway = format!("{}/{} ({}:{})", d.namespace, d.gateway, d.origin.file, d.origin.line);
        for v in versions {
            let p = translate::predict(&gw, v);
            let mut text = explain::render_at(&format!("manifests {}", sources.join(" ")), &gateway, &gw, &p, width, &|c| unmap(&d, c));
            for n in &d.notes {
                text.push_str(&format!("note: {n}\n"));
            }
            out.push(unmap(&d, &text));
        }
    }
    Ok((inputs, out))
}

/// Checks one Gateway on every version of `opts`. Must run inside a tokio runtime.
pub async fn check_gateway(d: Derived, opts: &Options) -> Result<GatewayCheck, CheckError> {
    let p = prepare(d, opts)?;
    finish(vec![p], opts).await?.pop().ok_or_else(|| CheckError::Io("no Gateway was checked (a layout-gate bug)".into()))
}

/// Observes every prepared Gateway on real Envoys, shared between the Gateways
/// ([`observe::observe_all`]), when `opts` asks for Envoy; each Gateway's answers are what an
/// Envoy of its own would have given.
async fn finish(prepared: Vec<Prepared>, opts: &Options) -> Result<Vec<GatewayCheck>, CheckError> {
    let mut prepared = prepared;
    if let Some(op) = &opts.operator {
        operator::observe(&mut prepared, opts, op).await?;
    } else if opts.envoy {
        let cases = prepared.iter().map(|p| probe_case(&p.case, &p.computed)).collect::<Result<Vec<Case>, CheckError>>()?;
        // Observed with the behaviour each version is predicted with.
        let versions: Vec<CiliumVersion> = opts.versions.iter().map(|(v, _)| opts.behaviour(v).clone()).collect();
        let refs: Vec<&Case> = cases.iter().collect();
        let observed = observe::observe_all(&refs, &versions, &opts.timeouts, opts.plan).await;
        for (p, o) in prepared.iter_mut().zip(observed) {
            match o {
                Ok(o) => {
                    for (r, v) in p.results.iter_mut().zip(&o.versions) {
                        observe_into(r, &p.derived, v, &o.names);
                    }
                }
                Err(e) => {
                    for r in &mut p.results {
                        r.error = Some(unmap(&p.derived, &e));
                        r.answers.clear();
                    }
                }
            }
        }
    }
    Ok(prepared.into_iter().map(|p| GatewayCheck { derived: p.derived, versions: p.results }).collect())
}

/// The expectation groups `case new` writes: each version's observed (or computed) result,
/// versions that agree merged into one range between the pinned neighbours.
pub fn expectation_groups(check: &GatewayCheck, pinned: &[CiliumVersion]) -> Vec<Group> {
    let per_version: Vec<(String, Group)> = check.versions.iter().map(|r| (r.version.clone(), group_of(r))).collect();
    let mut out: Vec<(usize, usize, Group)> = Vec::new();
    for (v, g) in per_version {
        let Some(i) = pinned.iter().position(|p| p.to_string() == v) else { continue };
        match out.last_mut() {
            Some((_, end, last)) if *end + 1 == i && last.same_as(&g) => *end = i,
            _ => out.push((i, i, g)),
        }
    }
    out.into_iter()
        .map(|(a, b, mut g)| {
            let lower = (a > 0).then(|| format!(">={}", pinned[a]));
            let upper = pinned.get(b + 1).map(|n| format!("<{n}"));
            g.range = match (lower, upper) {
                (None, None) => "*".into(),
                (Some(l), None) => l,
                (None, Some(u)) => u,
                (Some(l), Some(u)) => format!("{l}, {u}"),
            };
            g
        })
        .collect()
}

/// Reads `paths`, derives a case per Gateway and checks each. Must run inside a tokio runtime.
pub async fn check_paths(paths: &[std::path::PathBuf], opts: &Options) -> Result<(read::Inputs, Vec<GatewayCheck>), CheckError> {
    check_inputs(read::read(paths)?, opts).await
}

/// Derives a case per Gateway of objects already read (from files, or from a cluster by
/// `check --live`) and checks each. Must run inside a tokio runtime.
pub async fn check_inputs(inputs: read::Inputs, opts: &Options) -> Result<(read::Inputs, Vec<GatewayCheck>), CheckError> {
    let started = std::time::Instant::now();
    let derived = derive::derive_with(&inputs.objects, derive::DeriveOptions { complete: opts.complete, each_file: opts.each_file })?;
    tracing::debug!(gateways = derived.len(), elapsed_ms = started.elapsed().as_millis() as u64, "check: derived");
    // Every Gateway predicted first (a refusal stops the check before any Envoy starts), then
    // all observed together; `--sni` names are probed on each.
    let started = std::time::Instant::now();
    let prepared = derived
        .into_iter()
        .map(|mut d| {
            matrix::add_names(&mut d, &opts.extra_sni);
            prepare(d, opts)
        })
        .collect::<Result<Vec<_>, _>>()?;
    tracing::debug!(
        gateways = prepared.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "check: derived cases loaded and predicted"
    );
    Ok((inputs, finish(prepared, opts).await?))
}

/// The `case.yaml` text `case new` writes for `check`: derivation plus the model's prediction
/// per version (observed on Envoy when the check ran one), each group `provenance: inferred`.
pub fn case_text(check: &GatewayCheck, sources: &[std::path::PathBuf], pinned: &[CiliumVersion]) -> String {
    let d = &check.derived;
    let groups = expectation_groups(check, pinned);
    let date = crate::evidence::now_rfc3339();
    let date = date.split('T').next().unwrap_or(&date);
    let from: Vec<String> = sources.iter().map(|p| p.display().to_string()).collect();
    let mut header = format!(
        "Written by `layout-gate case new` (layout-gate {}) from {} on {date}.\nEvery expectation is the model's prediction (provenance: inferred): confirm it on a cluster\n(`layout-gate run --lane kind --record`) and edit freely.",
        env!("CARGO_PKG_VERSION"),
        from.join(", ")
    );
    for n in &d.notes {
        header.push_str(&format!("\n{n}"));
    }
    for r in &check.versions {
        if let Some(like) = &r.assumed_like {
            header.push_str(&format!(
                "\nCilium {}: the model has not been checked at it; its expectations are {like}'s behaviour (--assume-like {like})",
                r.version
            ));
        }
    }
    let note = format!(
        "{} (check, layout-gate {}) on {date}; not observed on a cluster",
        crate::case::MODEL_INFERENCE_NOTE,
        env!("CARGO_PKG_VERSION")
    );
    casefile::case_yaml(d, &header, &format!("Gateway {}/{} as rendered in {}", d.namespace, d.gateway, from.join(", ")), &groups, &note)
}
