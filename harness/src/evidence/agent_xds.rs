//! What the operator lane says of Cilium's own agent's part of a case, derived from what it
//! observed: each CiliumEnvoyConfig's row in the agent's tables ([`AgentCec`]) and the xDS
//! exchange the bridge logged (what the agent sent, what Envoy got, Envoy's ACKs and NACKs by
//! nonce). One rule, [`read`], used by the lane when it runs (its `said`) and by `report` and
//! `replay` on the recording ([`recheck`]), so a recording whose statements do not follow from
//! its own observations is found, and a lane that says more than it saw cannot be written.

use serde_json::Value;

use super::recording::{AgentCec, RecordedAgent};

/// The type of Envoy's listener resources in the exchange.
pub const LISTENER_TYPE: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

/// How Envoy answered one update (matched by the update's nonce on the same type's stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Ack,
    /// Envoy's `error_detail.message`.
    Nack(String),
    /// No request of Envoy's names the update's nonce within the recording.
    None,
}

/// One listener update Envoy got (after the bridge's rewrites) and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdsUpdate {
    pub version: String,
    pub nonce: String,
    /// The names of the listeners it carries (LDS is state of the world: every listener served).
    pub listeners: Vec<String>,
    /// Those listeners as Envoy got them, in the same order.
    pub resources: Vec<Value>,
    pub answer: Answer,
}

impl LdsUpdate {
    /// The listeners of CEC `cec` it carries, as Envoy got them.
    fn of(&self, cec: &str) -> Vec<&Value> {
        let prefix = format!("{cec}/");
        self.listeners.iter().zip(&self.resources).filter(|(n, _)| n.starts_with(&prefix)).map(|(_, r)| r).collect()
    }
}

/// Every listener update Envoy got in `xds` (the bridge's `to_envoy` lines), in order, each
/// with Envoy's answer: the first later `from_envoy` on the listener stream whose
/// `response_nonce` is the update's nonce, a NACK when it carries `nack`.
pub fn lds_updates(xds: &[Value]) -> Vec<LdsUpdate> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let on_lds = |v: &Value| v.get("type_url").and_then(Value::as_str) == Some(LISTENER_TYPE);
    let mut out = Vec::new();
    for (i, line) in xds.iter().enumerate() {
        if s(line, "event") != "to_envoy" || !on_lds(line) {
            continue;
        }
        let nonce = s(line, "nonce");
        let (listeners, resources) = line
            .get("resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| Some((r.get("name").and_then(Value::as_str)?.to_string(), r.clone())))
            .unzip();
        let answer = xds[i + 1..]
            .iter()
            .find(|a| s(a, "event") == "from_envoy" && on_lds(a) && !nonce.is_empty() && s(a, "response_nonce") == nonce)
            .map(|a| match a.get("nack").and_then(Value::as_str) {
                Some(n) => Answer::Nack(n.to_string()),
                None => Answer::Ack,
            })
            .unwrap_or(Answer::None);
        out.push(LdsUpdate { version: s(line, "version_info"), nonce, listeners, resources, answer });
    }
    out
}

/// What the exchange shows of one CEC's listeners (named `<namespace>/<name>/<listener>` by
/// the agent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CecExchange {
    /// Some update Envoy acknowledged carried a listener of the CEC.
    pub acked: bool,
    /// The first update carrying one of its listeners that Envoy refused: its nonce and Envoy's
    /// message.
    pub refused: Option<(String, String)>,
    /// After that refusal, the agent's revert: the first update whose listeners of the CEC are
    /// not the refused ones.
    pub reverted: Option<Revert>,
    /// After the revert, the first update that carries the refused listeners again (the
    /// agent's retry): its version and Envoy's answer.
    pub retried: Option<(String, Answer)>,
    /// Some update carried a listener of it.
    pub sent: bool,
}

/// What the agent's revert put in place of a refused update of one CEC's listeners
/// (cilium@v1.19.6:pkg/envoy/xds_server.go `UpdateEnvoyResources` reverts to what it held
/// before the update).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revert {
    /// The update's version.
    pub version: String,
    /// It carries none of the CEC's listeners: the CEC had none served before.
    pub withdrawn: bool,
    /// Envoy's answer to it.
    pub answer: Answer,
}

/// What `updates` show of CEC `ns/name`.
pub fn exchange_of(cec: &str, updates: &[LdsUpdate]) -> CecExchange {
    let mut out = CecExchange { acked: false, refused: None, reverted: None, retried: None, sent: false };
    let mut refused_form: Vec<&Value> = Vec::new();
    for u in updates {
        let mine = u.of(cec);
        let has = !mine.is_empty();
        out.sent |= has;
        match (&out.refused, &out.reverted, &out.retried) {
            (None, _, _) if has => match &u.answer {
                Answer::Ack => out.acked = true,
                Answer::Nack(m) => {
                    out.refused = Some((u.nonce.clone(), m.clone()));
                    refused_form = mine;
                }
                Answer::None => {}
            },
            (Some(_), None, _) if mine != refused_form => {
                out.reverted = Some(Revert { version: u.version.clone(), withdrawn: !has, answer: u.answer.clone() });
            }
            (Some(_), Some(_), None) if has && mine == refused_form => out.retried = Some((u.version.clone(), u.answer.clone())),
            _ => {}
        }
    }
    out
}

/// What the lane says of the agent's part of a case, and where its observations disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentReading {
    /// One statement per CEC, in the order of the agent's rows.
    pub said: Vec<String>,
    /// The listeners Envoy ended up serving: those of the last update it acknowledged (`None`
    /// when it acknowledged none in the case's exchange).
    pub served: Option<Vec<String>>,
    /// Where the agent's own rows and the xDS exchange contradict each other.
    pub conflicts: Vec<String>,
}

/// The prefix the agent's reconciler puts before Envoy's NACK message
/// (cilium@v1.19.6:pkg/envoy/xds/ack.go completes the update with it).
const NACK_PREFIX: &str = "NACK received: ";

/// The rule: from each CEC's row in the agent (`cecs`) and the exchange (`xds`), what the lane
/// says of each CEC (taken and served; refused by Envoy with the NACK's message, reverted and
/// retried as the exchange shows; an older generation kept; not taken or not answered within
/// `limit`), the listeners Envoy ended up serving, and every contradiction between the two.
pub fn read(cecs: &[AgentCec], xds: &[Value], limit: std::time::Duration) -> AgentReading {
    let updates = lds_updates(xds);
    let mut said = Vec::new();
    let mut conflicts = Vec::new();
    for s in cecs {
        let x = exchange_of(&s.name, &updates);
        let name = &s.name;
        let agent_nack = s.error.as_deref().and_then(|e| e.strip_prefix(NACK_PREFIX));
        said.push(match (s.taken, s.status.as_deref()) {
            (true, Some("Done")) => {
                if let Some((nonce, m)) = x.refused.as_ref().filter(|_| !x.retried.as_ref().is_some_and(|(_, a)| *a == Answer::Ack)) {
                    conflicts.push(format!(
                        "CiliumEnvoyConfig {name}: the agent says Done, but Envoy refused the update carrying its listeners (nonce {nonce}: {m:?}) and acknowledged none after"
                    ));
                } else if x.sent && !x.acked && x.retried.is_none() {
                    conflicts.push(format!(
                        "CiliumEnvoyConfig {name}: the agent says Done, but Envoy acknowledged no update carrying its listeners"
                    ));
                }
                format!("agent step: Cilium's agent took CiliumEnvoyConfig {name} and Envoy accepted it")
            }
            (true, Some("Error")) if agent_nack.is_some() => {
                let error = s.error.as_deref().unwrap_or_default();
                match &x.refused {
                    // Nothing of it exchanged in this slice (a case's later step whose change the
                    // agent had no update to send for): its status is an earlier exchange's, and
                    // nothing here contradicts it.
                    None if !x.sent => {}
                    None => conflicts.push(format!(
                        "CiliumEnvoyConfig {name}: the agent says Envoy refused it ({error:?}), but Envoy refused no update carrying its listeners"
                    )),
                    Some((nonce, m)) if Some(m.as_str()) != agent_nack => conflicts.push(format!(
                        "CiliumEnvoyConfig {name}: the agent's error {error:?} is not Envoy's NACK of nonce {nonce} ({m:?})"
                    )),
                    Some(_) => {}
                }
                let refused = format!("agent step: CiliumEnvoyConfig {name}: refused by Envoy ({error})");
                let answered = |a: &Answer| match a {
                    Answer::Ack => "accepted".to_string(),
                    Answer::Nack(m) => format!("refused: {m}"),
                    Answer::None => "not answered within the case's wait".to_string(),
                };
                match (&x.reverted, &x.retried) {
                    (None, _) if !x.sent => format!(
                        "{refused}: the agent's status from an earlier exchange; it sent Envoy no update for it in this one"
                    ),
                    (None, _) => format!("{refused}; the exchange shows no revert within the case's wait"),
                    (Some(r), None) if r.withdrawn => format!(
                        "{refused}, reverted by Cilium's agent (every resource of the CEC), retried after envoy-config-retry-interval"
                    ),
                    (Some(r), None) => format!(
                        "{refused}, reverted by Cilium's agent to the form of its listeners it held before (LDS version {}, {} by Envoy): that older form stays served; retried after envoy-config-retry-interval",
                        r.version,
                        answered(&r.answer)
                    ),
                    (Some(r), Some((v, a))) => format!(
                        "{refused}, reverted by Cilium's agent ({}LDS version {}), retried (LDS version {v}: {})",
                        if r.withdrawn { "every resource of the CEC, " } else { "to the form it held before, " },
                        r.version,
                        answered(a)
                    ),
                }
            }
            (true, Some(st)) => format!(
                "agent step: CiliumEnvoyConfig {name}: the agent's reconciler says {st}{}",
                s.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
            ),
            (true, None) => {
                format!("agent step: CiliumEnvoyConfig {name}: taken by Cilium's agent, not answered by Envoy within {limit:?}")
            }
            (false, _) if s.older_held => format!(
                "agent step: CiliumEnvoyConfig {name}: Cilium's agent did not take this generation and keeps serving the one before it (pkg/ciliumenvoyconfig/k8s_reflector.go)"
            ),
            (false, _) => {
                if x.sent {
                    conflicts.push(format!(
                        "CiliumEnvoyConfig {name}: the agent holds no generation of it, yet it sent Envoy listeners of it"
                    ));
                }
                format!(
                    "agent step: CiliumEnvoyConfig {name}: not taken by Cilium's agent within {limit:?} (refused when parsed: see the agent's log)"
                )
            }
        });
    }
    let served = updates.iter().rev().find(|u| u.answer == Answer::Ack).map(|u| u.listeners.clone());
    AgentReading { said, served, conflicts }
}

/// The agent's part of a recorded case judged again with [`read`]: every way its statements
/// and served listeners differ from what its rows and exchange give (a diff, expected against
/// recorded, `-` only expected, `+` only recorded), and every contradiction between the two.
pub fn recheck(rec: &RecordedAgent) -> Vec<String> {
    let r = read(&rec.cecs, &rec.xds, rec.limit());
    let mut out = Vec::new();
    if r.said != rec.said {
        out.push(format!(
            "agent: what the recording says of each CiliumEnvoyConfig does not follow from the agent's rows and the recorded xDS exchange (- expected, + recorded):\n{}",
            crate::judge::diff_lines(&r.said, &rec.said).trim_end()
        ));
    }
    if let Some(recorded) = &rec.served
        && Some(recorded) != r.served.as_ref()
    {
        let expected = r.served.clone().unwrap_or_default();
        out.push(format!(
            "agent: the listeners the recording says Envoy served do not follow from the recorded xDS exchange (- expected, + recorded):\n{}",
            crate::judge::diff_lines(&expected, recorded).trim_end()
        ));
    }
    out.extend(r.conflicts.into_iter().map(|c| format!("agent: the recording contradicts itself: {c}")));
    out
}

#[cfg(test)]
mod tests;
