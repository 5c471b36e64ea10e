//! Envoy facts: filter-chain counts, the server_names of chains, listeners Envoy refused.

use serde::{Deserialize, Serialize};

use super::{Aspect, Outcome, Verdict, diff_lines};
use crate::case::{ChainKind, EnvoyListenerExpect};
use crate::observe::envoy_dump::{ChainAction, ChainSummary};

/// What the judge needs of one Envoy listener (a projection of the dump summary).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerFact {
    /// Short name (`listener`, `listener-443`); Cilium's `<ns>/<cec>/` prefix removed.
    pub name: String,
    /// The Gateway whose CiliumEnvoyConfig (`cilium-gateway-<name>`) the listener came from,
    /// when its full name says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// active, warming, draining or error.
    pub state: String,
    pub filter_chains: usize,
    /// Per chain, its server_names.
    pub server_names: Vec<Vec<String>>,
    /// Per chain (same order as `server_names`), what it does. Evidence written before this
    /// field existed has none, and cannot answer a `chains:` expectation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain_kinds: Vec<ChainKind>,
    /// Envoy's error text for a refused update or listener.
    pub error: Option<String>,
}

fn chain_line(names: &[String]) -> String {
    if names.is_empty() { "(no server_names)".into() } else { names.join(", ") }
}

/// Judges one expected Envoy listener against the listeners seen in the dump. `listeners` is
/// `None` when no dump could be taken at all; `Some(&[])` is a dump with no listeners.
pub fn judge_envoy_listener(name: &str, expect: &EnvoyListenerExpect, listeners: Option<&[ListenerFact]>) -> Vec<Verdict> {
    let v = |what: &str, expected: String, observed: String, ok: bool, detail: String| Verdict {
        aspect: Aspect::Envoy,
        subject: format!("envoy {name} {what}"),
        expected,
        observed,
        outcome: if ok { Outcome::Pass } else { Outcome::Fail },
        provenance: expect.provenance.clone(),
        detail,
    };
    let Some(listeners) = listeners else {
        return vec![v("dump", "a config dump".into(), "none".into(), false, "expected Envoy facts, but no config dump was taken".into())];
    };
    let found = listeners.iter().find(|l| l.answers_to(name));
    // A listener Envoy lists only as draining was removed by its last update: it finishes the
    // connections it has and takes no new one (Envoy's listener manager). Cilium's agent shows
    // it so: a CEC's valid listener accepted with the update Envoy refused in part, then
    // withdrawn by the agent's revert (docs/operator-lane.md, finding 1).
    let removed = found.filter(|l| l.state == "draining");
    if expect.absent {
        return vec![match found {
            None => v("absent", "absent".into(), "absent".into(), true, "absent, as expected".into()),
            Some(l) if removed.is_some() => v(
                "absent",
                "absent".into(),
                format!("removed (draining its {} chains' connections)", l.filter_chains),
                true,
                "removed by Envoy's last update, as expected: listed only as draining, it takes no new connection".into(),
            ),
            Some(l) => v(
                "absent",
                "absent".into(),
                format!("{} with {} chains", l.state, l.filter_chains),
                false,
                format!("expected no listener {name}, found it {} with {} filter chains", l.state, l.filter_chains),
            ),
        }];
    }
    if let Some(l) = removed {
        return vec![v(
            "present",
            "present".into(),
            format!("removed (draining its {} chains' connections)", l.filter_chains),
            false,
            format!("expected listener {name}, but Envoy's last update removed it: listed only as draining, it takes no new connection"),
        )];
    }
    let Some(l) = found else {
        let names: Vec<&str> = listeners.iter().map(|l| l.name.as_str()).collect();
        return vec![v(
            "present",
            "present".into(),
            "absent".into(),
            false,
            format!(
                "expected listener {name}, but the dump has {}",
                if names.is_empty() { "no listeners".into() } else { names.join(", ") }
            ),
        )];
    };
    let mut out = Vec::new();
    if let Some(n) = expect.filter_chains {
        let ok = l.filter_chains == n as usize && l.state != "error";
        let detail = if ok {
            format!("{n} filter chains as expected")
        } else if l.state == "error" {
            format!("expected {n} filter chains, but the listener exists only as an error: {}", l.error.as_deref().unwrap_or("(no text)"))
        } else {
            format!("expected {n} filter chains, got {}", l.filter_chains)
        };
        out.push(v("filter_chains", n.to_string(), l.filter_chains.to_string(), ok, detail));
    }
    if let Some(want) = &expect.server_names {
        let mut want_lines: Vec<String> = want.iter().map(|c| chain_line(&sorted(c))).collect();
        let mut got_lines: Vec<String> = l.server_names.iter().map(|c| chain_line(&sorted(c))).collect();
        want_lines.sort();
        got_lines.sort();
        let ok = want_lines == got_lines;
        let detail = if ok {
            format!("{} chains with the expected server_names", want_lines.len())
        } else {
            format!("server_names per chain differ (- expected, + observed):\n{}", diff_lines(&want_lines, &got_lines))
        };
        out.push(v("server_names", want_lines.join(" | "), got_lines.join(" | "), ok, detail));
    }
    if let Some(want) = &expect.chains {
        let mut want_lines: Vec<String> = want.iter().map(|c| kind_line(c.kind, &c.server_names)).collect();
        want_lines.sort();
        let recorded = l.chain_kinds.len() == l.server_names.len();
        let mut got_lines: Vec<String> =
            if recorded { l.chain_kinds.iter().zip(&l.server_names).map(|(k, n)| kind_line(*k, n)).collect() } else { Vec::new() };
        got_lines.sort();
        let ok = recorded && want_lines == got_lines && l.state != "error";
        let detail = if !recorded {
            "the observation records no chain kinds (evidence from before chain kinds were recorded); re-run the case".into()
        } else if ok {
            format!("{} chains of the expected kinds and server_names", want_lines.len())
        } else if l.state == "error" {
            format!("expected chains, but the listener exists only as an error: {}", l.error.as_deref().unwrap_or("(no text)"))
        } else {
            format!("chains (kind: server_names) differ (- expected, + observed):\n{}", diff_lines(&want_lines, &got_lines))
        };
        out.push(v("chains", want_lines.join(" | "), got_lines.join(" | "), ok, detail));
    }
    if let Some(text) = &expect.error_contains {
        let (ok, detail) = match &l.error {
            Some(e) if e.contains(text.as_str()) => (true, format!("Envoy refused it: {e}")),
            Some(e) => (false, format!("expected an error containing {text:?}, got {e:?}")),
            None => (false, format!("expected Envoy to refuse the listener with {text:?}, but it has no error")),
        };
        out.push(v("error", format!("contains {text:?}"), l.error.clone().unwrap_or_else(|| "none".into()), ok, detail));
    }
    out
}

fn kind_line(kind: ChainKind, names: &[String]) -> String {
    format!("{}: {}", kind.as_str(), chain_line(&sorted(names)))
}

/// What a summarized chain does: a TLS-terminating HCM, a plain HCM, a passthrough tcp_proxy.
pub fn chain_kind(c: &ChainSummary) -> ChainKind {
    match (&c.action, &c.tls) {
        (ChainAction::Http { .. }, None) => ChainKind::Http,
        (ChainAction::Http { .. }, Some(_)) => ChainKind::Https,
        (ChainAction::TcpProxy { .. }, None) => ChainKind::TcpProxy,
        // A tcp_proxy behind a terminating socket (TLS terminate to a TCP backend) or any
        // other filter is none of the kinds a case names.
        (ChainAction::TcpProxy { .. }, Some(_)) | (ChainAction::Other { .. }, _) => ChainKind::Other,
    }
}

fn sorted(names: &[String]) -> Vec<String> {
    let mut n = names.to_vec();
    n.sort();
    n
}

impl ListenerFact {
    /// Whether `recorded` (as evidence keeps it) says what `derived` (re-read from the dump)
    /// says. Evidence written before `chain_kinds` and `gateway` existed records neither; it
    /// claimed nothing there, so those are compared only where recorded. Everything else must
    /// be equal.
    pub fn all_agree(recorded: &[ListenerFact], derived: &[ListenerFact]) -> bool {
        recorded.len() == derived.len()
            && recorded.iter().zip(derived).all(|(r, d)| {
                let mut d = d.clone();
                if r.chain_kinds.is_empty() {
                    d.chain_kinds.clear();
                }
                if r.gateway.is_none() {
                    d.gateway = None;
                }
                *r == d
            })
    }

    /// The judge's view of a summarized listener: short name, chains by server_names.
    pub fn from_summary(l: &crate::observe::envoy_dump::ListenerSummary) -> ListenerFact {
        ListenerFact {
            name: l.short_name().to_string(),
            gateway: l.name.split('/').nth(1).and_then(|c| c.strip_prefix(CILIUM_GATEWAY_PREFIX)).map(str::to_string),
            state: l.state.as_str().to_string(),
            filter_chains: l.filter_chain_count(),
            server_names: l.filter_chains.iter().map(|c| c.filter_chain_match.server_names.clone()).collect(),
            chain_kinds: l.filter_chains.iter().map(chain_kind).collect(),
            error: l.error.clone(),
        }
    }

    /// Every listener of a dump.
    /// Every listener of a dump, by short name, each with the Gateway it belongs to.
    pub fn all(summary: &crate::observe::envoy_dump::DumpSummary) -> Vec<ListenerFact> {
        summary.listeners.iter().map(ListenerFact::from_summary).collect()
    }

    /// Whether an `envoy:` key names this listener: its short name, or `<gateway>/<short>` (the
    /// key a case with several Gateways uses; one Envoy carries every Gateway's listeners).
    ///
    /// The Gateway part of a listener's name is its CiliumEnvoyConfig's name less
    /// `cilium-gateway-`; Cilium shortens that name past 63 characters, so a key's Gateway is
    /// compared in the form Cilium gives it ([`cilium_gateway_resource`]).
    pub fn answers_to(&self, key: &str) -> bool {
        if self.name == key {
            return true;
        }
        let (Some(g), Some((gw, listener))) = (self.gateway.as_deref(), key.split_once('/')) else { return false };
        listener == self.name && (g == gw || cilium_gateway_resource(gw).strip_prefix(CILIUM_GATEWAY_PREFIX) == Some(g))
    }
}

/// What Cilium prefixes a Gateway's name with for the resources it makes for it (the
/// CiliumEnvoyConfig, the Service).
pub const CILIUM_GATEWAY_PREFIX: &str = "cilium-gateway-";

/// The name Cilium gives the CiliumEnvoyConfig (and Service) of Gateway `gw`:
/// `cilium-gateway-<gw>`, shortened past 63 characters to its first 52, a `-` and 10
/// characters of its SHA-256, as
/// `cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:pkg/shortener/shortener.go:ShortenK8sResourceName`
/// does (the Gateway reconciler names them through it).
pub fn cilium_gateway_resource(gw: &str) -> String {
    const MAX: usize = 63;
    let s = format!("{CILIUM_GATEWAY_PREFIX}{gw}");
    if s.len() <= MAX {
        return s;
    }
    let hex = crate::types::sha256_hex(s.as_bytes());
    // encodeHash: the first 10 hex digits, with 0, 1, 3, a and e spelled g, h, k, m and t.
    let enc: String = hex
        .chars()
        .take(10)
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            c => c,
        })
        .collect();
    let mut cut = MAX - 10 - 1;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{enc}", &s[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Provenance, ProvenanceKind};

    fn expect() -> EnvoyListenerExpect {
        EnvoyListenerExpect {
            filter_chains: None,
            server_names: None,
            chains: None,
            error_contains: None,
            absent: false,
            provenance: Provenance { kind: ProvenanceKind::Inferred, reference: None, note: None, observed: None },
            line: 1,
        }
    }
    fn fact(names: &[&[&str]]) -> ListenerFact {
        ListenerFact {
            name: "listener".into(),
            gateway: None,
            state: "active".into(),
            filter_chains: names.len(),
            server_names: names.iter().map(|c| c.iter().map(|s| s.to_string()).collect()).collect(),
            chain_kinds: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn counts_chains() {
        let mut e = expect();
        e.filter_chains = Some(3);
        let l = [fact(&[&[], &["*.example.test"], &["api.example.test"]])];
        assert!(judge_envoy_listener("listener", &e, Some(&l))[0].passed());
        e.filter_chains = Some(2);
        let v = &judge_envoy_listener("listener", &e, Some(&l))[0];
        assert!(!v.passed());
        assert_eq!(v.detail, "expected 2 filter chains, got 3");
        assert!(v.contradicts_inference());
    }

    #[test]
    fn server_names_compare_as_multiset_with_diff() {
        let mut e = expect();
        e.server_names = Some(vec![vec!["api.example.test".into()], vec![]]);
        let l = [fact(&[&[], &["api.example.test"]])];
        assert!(judge_envoy_listener("listener", &e, Some(&l))[0].passed());
        let l = [fact(&[&[], &["*.example.test"]])];
        let v = &judge_envoy_listener("listener", &e, Some(&l))[0];
        assert!(!v.passed());
        assert!(v.detail.contains("- api.example.test\n") && v.detail.contains("+ *.example.test\n"), "{}", v.detail);
    }

    #[test]
    fn chain_kinds_compare_as_multiset_with_diff() {
        use crate::case::ChainExpect;
        let mut e = expect();
        let c = |kind, names: &[&str]| ChainExpect { kind, server_names: names.iter().map(|s| s.to_string()).collect() };
        e.chains =
            Some(vec![c(ChainKind::TcpProxy, &["api.example.test"]), c(ChainKind::Http, &[]), c(ChainKind::Https, &["*.example.test"])]);
        let mut l = fact(&[&[], &["*.example.test"], &["api.example.test"]]);
        l.chain_kinds = vec![ChainKind::Http, ChainKind::Https, ChainKind::TcpProxy];
        let v = judge_envoy_listener("listener", &e, Some(&[l.clone()]));
        assert!(v[0].passed(), "{}", v[0].detail);
        // The passthrough name terminated instead: same server_names, wrong kind.
        l.chain_kinds = vec![ChainKind::Http, ChainKind::Https, ChainKind::Https];
        let v = &judge_envoy_listener("listener", &e, Some(&[l.clone()]))[0];
        assert!(!v.passed());
        assert!(v.detail.contains("- tcp_proxy: api.example.test\n") && v.detail.contains("+ https: api.example.test\n"), "{}", v.detail);
        // Evidence without kinds cannot pass a chains expectation.
        l.chain_kinds.clear();
        let v = &judge_envoy_listener("listener", &e, Some(&[l]))[0];
        assert!(!v.passed() && v.detail.contains("no chain kinds"), "{}", v.detail);
    }

    #[test]
    fn kinds_from_the_dump_summary() {
        use crate::observe::envoy_dump::{ChainMatch, TlsSummary};
        let chain = |action, tls| ChainSummary { name: None, filter_chain_match: ChainMatch::default(), action, tls };
        let hcm = || ChainAction::Http { route_config: Some("listener-secure".into()), rds: true };
        let tcp = || ChainAction::TcpProxy { cluster: Some("ns:api:443".into()), weighted_clusters: vec![] };
        assert_eq!(chain_kind(&chain(hcm(), None)), ChainKind::Http);
        assert_eq!(chain_kind(&chain(hcm(), Some(TlsSummary::default()))), ChainKind::Https);
        assert_eq!(chain_kind(&chain(tcp(), None)), ChainKind::TcpProxy);
        assert_eq!(chain_kind(&chain(tcp(), Some(TlsSummary::default()))), ChainKind::Other);
        assert_eq!(chain_kind(&chain(ChainAction::Other { filters: vec![] }, None)), ChainKind::Other);
    }

    #[test]
    fn absent_missing_and_errors() {
        let mut e = expect();
        e.absent = true;
        assert!(judge_envoy_listener("listener-443", &e, Some(&[fact(&[])]))[0].passed());
        assert!(!judge_envoy_listener("listener", &e, Some(&[fact(&[])]))[0].passed());
        let mut e = expect();
        e.error_contains = Some("same matching rules".into());
        let mut l = fact(&[&["a.test"]]);
        assert!(!judge_envoy_listener("listener", &e, Some(&[l.clone()]))[0].passed());
        // Some other refusal is not the refusal the case expects.
        l.error = Some("error adding listener '127.0.0.1:1': invalid path: /nope".into());
        let v = &judge_envoy_listener("listener", &e, Some(&[l.clone()]))[0];
        assert!(!v.passed(), "{v:?}");
        assert!(v.detail.contains("expected an error containing \"same matching rules\""), "{}", v.detail);
        l.error = Some("error adding listener '127.0.0.1:1': filter chain '' has the same matching rules defined as ''".into());
        assert!(judge_envoy_listener("listener", &e, Some(&[l]))[0].passed());
        let mut e = expect();
        e.filter_chains = Some(1);
        assert!(!judge_envoy_listener("listener-443", &e, Some(&[fact(&[])]))[0].passed());
        assert!(!judge_envoy_listener("listener", &e, None)[0].passed());
    }

    /// Found through Cilium's agent at 1.19.7 (tlsroute-same-hostname-twice): Envoy took the
    /// CEC's valid listener with the update it refused in part, the agent's revert removed it,
    /// and the dump listed it only as draining. Removed is absent; it is never present.
    #[test]
    fn a_listener_listed_only_as_draining_is_removed() {
        let draining = ListenerFact { state: "draining".into(), ..fact(&[&["www.example.test"]]) };
        let mut e = expect();
        e.absent = true;
        let v = &judge_envoy_listener("listener", &e, Some(std::slice::from_ref(&draining)))[0];
        assert!(v.passed(), "{v:?}");
        assert!(v.observed.starts_with("removed (draining"), "{}", v.observed);
        let active = ListenerFact { state: "active".into(), ..draining.clone() };
        assert!(!judge_envoy_listener("listener", &e, Some(&[active]))[0].passed());
        let mut e = expect();
        e.filter_chains = Some(1);
        let v = &judge_envoy_listener("listener", &e, Some(&[draining]))[0];
        assert!(!v.passed() && v.detail.contains("removed it"), "{v:?}");
    }

    #[test]
    fn a_gateway_qualified_key_finds_that_gateways_listener_only() {
        // Two Gateways on one Envoy: both have a `listener`; `b/listener` is b's, never a's.
        let a = ListenerFact { gateway: Some("a".into()), ..fact(&[&[]]) };
        let b = ListenerFact { gateway: Some("b".into()), ..fact(&[&[], &["x.example.test"]]) };
        assert!(b.answers_to("b/listener") && b.answers_to("listener"));
        assert!(!a.answers_to("b/listener") && !a.answers_to("ab/listener") && !a.answers_to("a/listener-443"));
        let expect = EnvoyListenerExpect {
            filter_chains: Some(2),
            server_names: None,
            chains: None,
            error_contains: None,
            absent: false,
            provenance: Provenance { kind: ProvenanceKind::Source, reference: Some("cilium#1".into()), note: None, observed: None },
            line: 1,
        };
        let vs = judge_envoy_listener("b/listener", &expect, Some(&[a.clone(), b.clone()]));
        assert!(vs.iter().all(|v| v.passed()), "{vs:#?}");
        let vs = judge_envoy_listener("a/listener", &expect, Some(&[a, b]));
        assert!(vs.iter().any(|v| !v.passed()), "{vs:#?}");
    }

    /// Cilium's name for a long Gateway's CEC, computed by hand from shortener.go (first 52
    /// characters, `-`, 10 hex digits of SHA-256 with 0/1/3/a/e spelled g/h/k/m/t): the listener
    /// of such a Gateway still answers to `<gateway>/<listener>`.
    #[test]
    fn a_long_gateway_name_is_shortened_as_cilium_shortens_it() {
        let gw = "tenant-gateway-with-a-name-long-enough-to-be-shortened-by-cilium";
        let cec = cilium_gateway_resource(gw);
        assert_eq!(cec, "cilium-gateway-tenant-gateway-with-a-name-long-enoug-9hk4bg7hdd");
        assert_eq!(cec.len(), 63);
        let exact = "x".repeat(48);
        assert_eq!(cilium_gateway_resource(&exact), format!("cilium-gateway-{exact}"), "63 characters stay as they are");
        let l = ListenerFact { gateway: cec.strip_prefix(CILIUM_GATEWAY_PREFIX).map(str::to_string), ..fact(&[&[]]) };
        assert!(l.answers_to(&format!("{gw}/listener")), "{l:?}");
        assert!(!l.answers_to("tenant-gateway/listener"));
    }
}
