//! One route on the API server: created, then watched, every version recorded, with the
//! stand-in ([`super::writer`]) writing its entry through the status subresource whenever a
//! version it sees lacks it or has it changed. Each write carries the resourceVersion of the
//! version it was computed from, so a write against a route that moved meanwhile is refused
//! (409) and the stand-in decides again on the next version the watch brings, as a controller
//! does. Every wait is bounded: Cilium's first entry by the entry wait, the writing by the
//! window.

use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, PostParams, WatchEvent, WatchParams};
use serde_json::Value;
use tokio::time::Instant;

use super::judge::{Manager, Record, Seen, Write, WriteOutcome};
use super::writer;

/// Who writes its entry first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The route is created under a Gateway Cilium already accepted; the stand-in starts once
    /// Cilium's entry is there.
    CiliumFirst,
    /// The stand-in writes its entry at once, before the route's Gateway exists; the Gateway
    /// is created after that write, so Cilium first meets the route with the stand-in's entry
    /// already in it.
    StandInFirst,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::CiliumFirst => "cilium-first",
            Order::StandInFirst => "stand-in-first",
        }
    }
}

/// What to do with one route.
pub struct Plan {
    pub resource: ApiResource,
    pub namespace: String,
    pub object: Value,
    pub order: Order,
    pub cilium_controller: String,
    /// How long the stand-in writes, from its start.
    pub window: Duration,
    /// A move this close to the window's end means the route was still moving.
    pub quiet: Duration,
    /// How long to wait for Cilium's first entry (cilium-first).
    pub entry_wait: Duration,
    /// Each API request's bound.
    pub request: Duration,
}

fn name_of(v: &Value) -> String {
    v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string()
}

fn seen(v: &Value, event: &str, at: Duration) -> Seen {
    let status_managers = v
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .filter(|m| m.get("subresource").and_then(Value::as_str) == Some("status"))
                .map(|m| Manager {
                    manager: m.get("manager").and_then(Value::as_str).unwrap_or_default().to_string(),
                    operation: m.get("operation").and_then(Value::as_str).unwrap_or_default().to_string(),
                    time: m.get("time").and_then(Value::as_str).unwrap_or_default().to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    Seen {
        at_ms: at.as_millis() as u64,
        event: event.into(),
        resource_version: v.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default().to_string(),
        generation: v.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or_default(),
        parents: writer::parents_of(v),
        status_managers,
    }
}

fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    now.format(&fmt).unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

async fn bounded<T>(
    request: Duration,
    what: &str,
    f: impl std::future::Future<Output = kube::Result<T>>,
) -> Result<kube::Result<T>, String> {
    tokio::time::timeout(request, f)
        .await
        .map_err(|_| format!("{what}: no answer within {}s (LAYOUT_GATE_API_REQUEST_TIMEOUT)", request.as_secs()))
}

struct Run<'a> {
    api: Api<DynamicObject>,
    plan: &'a Plan,
    started: Instant,
    record: Record,
    /// Said once, after the stand-in's first stored write (stand-in-first: the Gateway waits).
    wrote: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Run<'_> {
    /// The stand-in's turn on version `v` of the route: a write when its entry is missing or
    /// changed, carrying `v`'s resourceVersion.
    async fn maybe_write(&mut self, v: &Value) -> Result<(), String> {
        let parent_ref = v.pointer("/spec/parentRefs/0").cloned().unwrap_or(Value::Null);
        let generation = v.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or_default();
        let Some(parents) = writer::rewrite(&writer::parents_of(v), &parent_ref, generation, &now_rfc3339()) else {
            return Ok(());
        };
        let mut body = v.clone();
        if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            // Omitted, the API server keeps the route's managedFields as they are.
            meta.remove("managedFields");
        }
        body["status"] = serde_json::json!({"parents": writer::to_json(&parents)});
        let from = v.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default().to_string();
        let obj: DynamicObject = serde_json::from_value(body).map_err(|e| format!("the route's status as an object: {e}"))?;
        let pp = PostParams { field_manager: Some(writer::MANAGER.into()), ..PostParams::default() };
        let name = name_of(v);
        let answer = bounded(self.plan.request, "writing the stand-in's status entry", self.api.replace_status(&name, &pp, &obj)).await?;
        let outcome = match answer {
            Ok(stored) => WriteOutcome::Written { resource_version: stored.metadata.resource_version.unwrap_or_default() },
            Err(kube::Error::Api(s)) if s.code == 409 => WriteOutcome::Conflict,
            Err(e) => WriteOutcome::Failed { error: e.to_string() },
        };
        let written = matches!(outcome, WriteOutcome::Written { .. });
        self.record.writes.push(Write { at_ms: self.started.elapsed().as_millis() as u64, from_resource_version: from, outcome });
        if written && let Some(tx) = self.wrote.take() {
            let _ = tx.send(());
        }
        Ok(())
    }

    fn begin_window(&mut self) -> Instant {
        self.record.window_start_ms = Some(self.started.elapsed().as_millis() as u64);
        self.record.window_from = self.record.seen.len() - 1;
        Instant::now() + self.plan.window
    }
}

/// Creates the route, records every version of it and lets the stand-in write, until the window
/// closes (or Cilium wrote no entry within the entry wait, cilium-first). `wrote` is told after
/// the stand-in's first stored write.
pub async fn run(client: kube::Client, plan: &Plan, wrote: Option<tokio::sync::oneshot::Sender<()>>) -> Result<Record, String> {
    let api: Api<DynamicObject> = Api::namespaced_with(client, &plan.namespace, &plan.resource);
    let kind = plan.resource.kind.clone();
    let name = name_of(&plan.object);
    let what = format!("{kind} {}/{name}", plan.namespace);
    let obj: DynamicObject = serde_json::from_value(plan.object.clone()).map_err(|e| format!("{what}: {e}"))?;
    let started = Instant::now();
    let pp = PostParams { field_manager: Some(crate::lanes::cluster::names::FIELD_MANAGER.into()), ..PostParams::default() };
    let created =
        bounded(plan.request, &format!("creating {what}"), api.create(&pp, &obj)).await?.map_err(|e| format!("creating {what}: {e}"))?;
    let created = serde_json::to_value(&created).map_err(|e| format!("{what}: {e}"))?;
    let record = Record {
        kind,
        name: name.clone(),
        order: plan.order.as_str().into(),
        cilium_controller: plan.cilium_controller.clone(),
        stand_in_controller: writer::CONTROLLER.into(),
        stand_in_manager: writer::MANAGER.into(),
        window_start_ms: None,
        window_from: 0,
        window_ms: plan.window.as_millis() as u64,
        quiet_ms: plan.quiet.as_millis() as u64,
        seen: vec![seen(&created, "CREATED", started.elapsed())],
        writes: Vec::new(),
    };
    let mut r = Run { api: api.clone(), plan, started, record, wrote };
    let mut writing = plan.order == Order::StandInFirst;
    let mut deadline = if writing {
        let d = r.begin_window();
        r.maybe_write(&created).await.map_err(|e| format!("{what}: {e}"))?;
        d
    } else {
        Instant::now() + plan.entry_wait
    };
    let mut last_rv = r.record.seen[0].resource_version.clone();
    // The server ends a watch after its timeout; it is opened again from the last version seen,
    // until the deadline.
    let bound = (plan.entry_wait + plan.window).as_secs().clamp(10, 280) as u32;
    'watch: loop {
        let wp = WatchParams::default().fields(&format!("metadata.name={name}")).timeout(bound);
        let stream = bounded(plan.request, &format!("watching {what}"), api.watch(&wp, &last_rv))
            .await?
            .map_err(|e| format!("watching {what}: {e}"))?;
        let mut stream = std::pin::pin!(stream);
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                _ = tokio::time::sleep_until(deadline) => break 'watch,
            };
            let obj = match next {
                None => continue 'watch,
                Some(Err(e)) => return Err(format!("watching {what}: {e}")),
                Some(Ok(WatchEvent::Bookmark(_))) => continue,
                Some(Ok(WatchEvent::Error(e))) => return Err(format!("watching {what}: {} ({})", e.message, e.code)),
                Some(Ok(WatchEvent::Added(o))) => ("ADDED", o),
                Some(Ok(WatchEvent::Modified(o))) => ("MODIFIED", o),
                Some(Ok(WatchEvent::Deleted(o))) => ("DELETED", o),
            };
            let (event, o) = obj;
            let v = serde_json::to_value(&o).map_err(|e| format!("{what}: {e}"))?;
            let s = seen(&v, event, started.elapsed());
            last_rv = s.resource_version.clone();
            let cilium_there = s.parents.iter().any(|e| e.controller == plan.cilium_controller);
            r.record.seen.push(s);
            if event == "DELETED" {
                return Err(format!("{what} was deleted during the window"));
            }
            if !writing && cilium_there {
                writing = true;
                deadline = r.begin_window();
                eprintln!(
                    "layout-gate {}: {what}: Cilium's entry is there after {:.1}s; the stand-in begins, {}s",
                    super::WHO,
                    started.elapsed().as_secs_f64(),
                    plan.window.as_secs()
                );
            }
            if writing {
                r.maybe_write(&v).await.map_err(|e| format!("{what}: {e}"))?;
            }
        }
    }
    let stored = r.record.writes.iter().filter(|w| matches!(w.outcome, WriteOutcome::Written { .. })).count();
    eprintln!(
        "layout-gate {}: {what}: {} versions seen, {stored} of the stand-in's {} writes stored{}",
        super::WHO,
        r.record.seen.len(),
        r.record.writes.len(),
        if writing { "" } else { "; Cilium wrote no entry within the wait, so the stand-in never began" }
    );
    Ok(r.record)
}
