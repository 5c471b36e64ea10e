//! `layout-gate check --live`: the user's own cluster, read with their credentials and never
//! written, as `check`'s input. The running Cilium version is the baseline; the cluster's
//! statuses are compared with the prediction at it; every pinned version is predicted against
//! it exactly as `check` predicts manifests.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

use super::check::{CheckArgs, CheckLane, Format, bad};
use crate::check::format::{self, Report};
use crate::check::outcome::FailOn;
use crate::check::{self, read};
use crate::live::{client, drift, fetch};

/// The API request wait: the cluster lanes' `api_request` wait (docs/waits.md), read the same
/// way (`LAYOUT_GATE_API_REQUEST_TIMEOUT`, `30`, `30s`, `1m`; default 30 s). Only that variable
/// is read: another cluster wait set wrong is no business of `check --live`.
fn request_wait() -> Result<Duration, String> {
    use crate::lanes::cluster::timeouts::ClusterTimeouts;
    let var = ClusterTimeouts::default().api_request.var;
    ClusterTimeouts::from_lookup(|k| if k == var { std::env::var(k).ok() } else { None })
        .map(|t| t.api_request.limit)
        .map_err(|e| e.to_string())
}

pub fn run(args: CheckArgs) -> ExitCode {
    let fail_on: BTreeSet<FailOn> = match &args.fail_on {
        None => FailOn::ALL.into_iter().collect(),
        Some(list) => match list.split(',').map(|s| FailOn::parse(s.trim())).collect::<Result<_, _>>() {
            Ok(s) => s,
            Err(e) => return bad("check", &e),
        },
    };
    let bounds = match (request_wait(), client::response_limit()) {
        (Ok(request), Ok(response)) => client::Bounds { request, response },
        (Err(e), _) | (_, Err(e)) => return bad("check", &e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return bad("check", &format!("starting the async runtime: {e}")),
    };
    let l = &args.live;
    let started_at = crate::evidence::now_rfc3339();
    let snapshot = runtime.block_on(async {
        let c = client::ReadOnly::connect(l.kubeconfig.as_deref(), l.context.as_deref(), bounds).await?;
        fetch::read(&c, &l.namespace).await
    });
    let snapshot = match snapshot {
        Ok(s) => s,
        Err(e) => return bad("check --live", &e.to_string()),
    };
    for n in &snapshot.notes {
        eprintln!("layout-gate check --live: note: {}", crate::term::line(n));
    }
    let prepared = match args.lane {
        CheckLane::Model => super::check::prepare(
            "check",
            // The cluster is the whole input: a referenced Secret or Service it lacks is missing.
            &super::check::PredictArgs { complete: true, ..args.predict.clone() },
        ),
        CheckLane::Operator => super::check::prepare_operator(&args),
    };
    let mut prepared = match prepared {
        Ok(p) => p,
        Err(code) => return code,
    };
    prepared.opts.complete = true;
    let running = match (&l.running, &snapshot.running) {
        (Some(v), _) => match prepared.pins.pick(v) {
            Ok(p) => (p.version.clone(), "--running".to_string()),
            Err(e) => return bad("check", &format!("--running: {e}")),
        },
        (None, Ok(r)) => (r.version.clone(), r.source.clone()),
        (None, Err(why)) => {
            return bad("check --live", &format!("cannot tell which Cilium the cluster runs ({why}); give --running VERSION"));
        }
    };
    let assumed = match baseline_behaviour(&args, &mut prepared, &running.0, &running.1) {
        Ok(a) => a,
        Err(e) => return bad("check --live", &e),
    };
    if !prepared.opts.versions.iter().any(|(v, _)| *v == running.0) {
        prepared.opts.versions.push((running.0.clone(), "running on the cluster".into()));
        prepared.opts.versions.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let inputs = read::Inputs { objects: snapshot.objects.clone(), sources: 1, ..read::Inputs::default() };
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!(
            "check --live: predicting {} version(s) for {} Gateway(s) of context {}",
            prepared.opts.versions.len(),
            snapshot.gateways.len(),
            crate::term::line(&snapshot.id.context)
        );
    }
    let out = runtime.block_on(check::check_inputs(inputs, &prepared.opts));
    drop(runtime);
    let (inputs, checks) = match out {
        Ok(r) => r,
        Err(e) => return bad("check --live", &e.to_string()),
    };
    let running_s = running.0.to_string();
    let mut disagree = drift::all_statuses(&checks, &running_s, &snapshot.gateways);
    if !l.no_probe {
        let (d, notes) = probe_all(&checks, &running_s, &snapshot);
        for n in notes {
            eprintln!("layout-gate check --live: note: {}", crate::term::line(&n));
        }
        disagree.extend(d);
    }
    let report = Report {
        checks: &checks,
        skipped: inputs.skipped_line(),
        skipped_counts: inputs.skipped.clone(),
        envoy: !args.predict.no_envoy,
        envoy_version: prepared.envoy_version.clone(),
        fail_on,
        baseline: Some((running_s.clone(), format!("running on the cluster ({})", running.1))),
    };
    let live_json = serde_json::json!({
        "lane": crate::live::LANE,
        "context": snapshot.id.context,
        "cluster": snapshot.id.cluster,
        "server_digest": snapshot.id.server_digest,
        "running": {"version": running_s, "source": running.1},
        "namespaces": l.namespace,
        "gateways": snapshot.gateways.iter().map(|g| serde_json::json!({"gateway": format!("{}/{}", g.namespace, g.name), "addresses": g.addresses()})).collect::<Vec<_>>(),
        "disagreements": disagree,
        "notes": snapshot.notes,
    });
    if let Some(dir) = &l.evidence_dir {
        let doc = reading(&live_json, &report, &started_at);
        let id = crate::evidence::run_id_named(crate::live::LANE, Some(&running_s), None);
        match crate::evidence::live::write(dir, &id, &doc) {
            Ok(at) => {
                eprintln!(
                    "layout-gate check --live: the reading is in {}",
                    crate::term::line(&at.join(crate::evidence::live::FILE).display().to_string())
                )
            }
            Err(e) => return bad("check --live", &format!("--evidence-dir: {e}")),
        }
    }
    let header = live_header(&snapshot.id, &running_s, &running.1, assumed.as_ref(), &disagree);
    // The table and Markdown carry names the cluster chose (a Gateway's, a listener's): escaped
    // whole, so no control character of theirs reaches the terminal. (JSON escapes its own.)
    let text = match args.format {
        Format::Table => {
            crate::term::text(&format!("{header}\n{}", format::table_text_at(&report, crate::table::width(args.wide)))).into_owned()
        }
        Format::Markdown => crate::term::text(&format!("{}\n{}", markdown_header(&header), format::markdown_text(&report))).into_owned(),
        Format::Json => {
            let mut v = format::json_value(&report);
            if let Some(m) = v.as_object_mut() {
                m.insert("live".into(), live_json);
            }
            format!("{v:#}\n")
        }
    };
    super::check::finish(&report, &text, !disagree.is_empty())
}

/// The document `--evidence-dir` keeps: the `live` block of `--format json`, who wrote it and
/// when, and `check`'s own JSON (the per-version predictions and verdicts).
fn reading(live: &serde_json::Value, report: &Report<'_>, started_at: &str) -> serde_json::Value {
    let mut doc = serde_json::json!({
        "schema_version": crate::evidence::live::SCHEMA_VERSION,
        "tool": crate::evidence::ToolInfo::current(),
        "gate_evidence": false,
        "started_at": started_at,
        "finished_at": crate::evidence::now_rfc3339(),
    });
    if let (Some(m), Some(l)) = (doc.as_object_mut(), live.as_object()) {
        for (k, v) in l {
            m.insert(k.clone(), v.clone());
        }
        m.insert("check".into(), format::json_value(report));
    }
    doc
}

/// Every live Gateway's addresses probed with the prediction at `running` (see
/// `live::answers`), on a runtime of its own.
fn probe_all(checks: &[check::GatewayCheck], running: &str, s: &fetch::Snapshot) -> (Vec<drift::Disagreement>, Vec<String>) {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() else {
        return (Vec::new(), vec!["the probes could not start an async runtime: not probed".into()]);
    };
    let options = crate::observe::probe::ProbeOptions::default();
    rt.block_on(async {
        let mut out = (Vec::new(), Vec::new());
        for c in checks {
            let Some(live) = s.gateways.iter().find(|g| g.namespace == c.derived.namespace && g.name == c.derived.gateway) else {
                continue;
            };
            let Some(r) = c.versions.iter().find(|r| r.version == running && r.error.is_none()) else { continue };
            let (d, n) = crate::live::answers::probe_gateway(c, r, live, &s.certs, &options).await;
            out.0.extend(d);
            out.1.extend(n);
        }
        out
    })
}

/// Whether the model may stand behind the running version as the baseline, as `check` decides
/// for a pinned version: a version the model has been checked at, yes; another only with
/// `--assume-like` (then added to the versions assumed, so every output says so: the returned
/// checked version); else refused. With `--lane operator`, the running version must be pinned:
/// its own operator answers it, and an unpinned one has none here.
fn baseline_behaviour(
    args: &CheckArgs,
    prepared: &mut super::check::Prepared,
    running: &crate::case::CiliumVersion,
    source: &str,
) -> Result<Option<crate::case::CiliumVersion>, String> {
    use crate::lanes::model::checked;
    let pin = prepared.pins.pick(&running.to_string()).map(|_| ());
    if args.lane == CheckLane::Operator {
        return pin.map(|()| None).map_err(|e| {
            format!(
                "the cluster runs Cilium {running} ({source}), which is not pinned: --lane operator has no operator of it to answer with, so it is no baseline. {e}"
            )
        });
    }
    let pinned = pin.is_ok();
    if checked::is_checked(running) {
        return Ok(None);
    }
    let Some(like) = args.predict.assume_like.as_deref() else {
        return Err(format!(
            "the cluster runs Cilium {running} ({source}), {}which the model has not been checked at (checked: {}): its answers would be another version's, so it is no baseline. Pass --assume-like VERSION to predict it with a checked version's behaviour, said in every output",
            if pinned { "" } else { "not pinned, " },
            checked::versions().join(", ")
        ));
    };
    let assumed = checked::assumptions(std::slice::from_ref(running), Some(like))?;
    let Some((v, like)) = assumed.into_iter().next() else { return Ok(None) };
    if !prepared.opts.assume.contains_key(&v) {
        eprintln!("layout-gate check --live: {}", checked::assumed_line(&v, &like));
    }
    prepared.opts.assume.insert(v, like.clone());
    Ok(Some(like))
}

/// What `--live` read and where the cluster differs from the prediction today, as lines. Every
/// word the cluster or the kubeconfig chose (names, an image, a status's reason) is escaped
/// ([`crate::term::line`]): what the cluster says cannot drive the terminal.
fn live_header(
    id: &client::ClusterId,
    running: &str,
    source: &str,
    assumed: Option<&crate::case::CiliumVersion>,
    disagree: &[drift::Disagreement],
) -> String {
    use crate::term::line;
    let like = assumed.map(|l| format!(", predicted with {l}'s behaviour (--assume-like {l})")).unwrap_or_default();
    let mut out = format!(
        "live: context {} (cluster {}, API server {}), read-only; not gate evidence\nrunning: Cilium {running} ({}){like}; every verdict below is against it\n",
        line(&id.context),
        line(&id.cluster),
        id.server_digest,
        line(source)
    );
    if disagree.is_empty() {
        out.push_str("today: the cluster's statuses are the prediction's at the running version\n");
    }
    for d in disagree {
        out.push_str(&format!("today: {}\n", line(&d.to_string())));
    }
    out
}

fn markdown_header(h: &str) -> String {
    h.lines().map(|l| format!("- {l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_says_the_cluster_and_each_disagreement() {
        let id = client::ClusterId { context: "prod".into(), cluster: "c".into(), server_digest: "sha256:ab".into() };
        let d = drift::Disagreement {
            gateway: "ns/gw".into(),
            field: "status.conditions[Programmed]".into(),
            predicted_by: "model".into(),
            predicted: "True/Programmed".into(),
            cluster: "False/AddressNotAssigned".into(),
        };
        let h = live_header(&id, "1.19.6", "DaemonSet kube-system/cilium", None, std::slice::from_ref(&d));
        assert!(h.contains("context prod (cluster c, API server sha256:ab)"), "{h}");
        assert!(h.contains("today: the model and your cluster disagree: Gateway ns/gw status.conditions[Programmed]"), "{h}");
        assert!(!live_header(&id, "1.19.6", "x", None, &[]).contains("disagree"));
    }
}
