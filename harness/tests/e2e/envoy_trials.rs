//! Trials against a real Envoy with Cilium-shaped listeners. Each starts its own Envoy on free
//! ports with in-process backends, and checks certificates by name (fingerprint → the run's
//! certificate name), never just "some certificate".

use std::time::Duration;

use layout_gate::envoy::{AdminSpec, Bootstrap, EnvoyError, LdsDir, LdsOutcome, lds_counters, wait_for_lds_update};
use layout_gate::observe::envoy_dump::{ChainAction as DumpAction, DumpSummary, ListenerSource, ListenerState, summarize_bytes};
use layout_gate::observe::probe::Outcome;

use crate::envoy_rig::*;

/// The exact `api.example.test` passthrough chain wins over the `*.example.test` terminate
/// chain: the client completes its handshake with the backend itself.
pub fn sni_exact_beats_wildcard() -> Result<(), String> {
    run_async(|| async {
        let rig = Rig::new("exact-beats-wildcard")?;
        let (addr, _port) = free_addr()?;
        let envoy = rig.start(&rig.static_bootstrap(vec![rig.listener(addr, false)?])).await?;

        let api = probe(addr, Some("api.example.test"), true).await?;
        rig.expect_cert(&api, API_CERT)?;
        let answer = http_answer(&api)?;
        if answer.served_by.as_deref() != Some(API_BACKEND) {
            return Err(format!("api.example.test was served by {:?}, expected {API_BACKEND}", answer.served_by));
        }
        // Passthrough: the backend saw the client's own SNI.
        if !rig.api.snis_seen().contains(&Some("api.example.test".to_string())) {
            return Err(format!("backend saw SNIs {:?}, not api.example.test", rig.api.snis_seen()));
        }
        // And the wildcard chain is really there: a sibling name gets Envoy's certificate.
        let sibling = probe(addr, Some("foo.example.test"), false).await?;
        rig.expect_cert(&sibling, WILDCARD_CERT)?;
        drop(envoy);
        Ok(())
    })
}

/// `www.example.test` is terminated by Envoy with the Gateway's wildcard certificate and
/// routed to the web backend; another name under the wildcard gets Envoy's direct response.
pub fn sni_wildcard_terminated_by_envoy() -> Result<(), String> {
    run_async(|| async {
        let rig = Rig::new("wildcard-terminated")?;
        let (addr, _port) = free_addr()?;
        let _envoy = rig.start(&rig.static_bootstrap(vec![rig.listener(addr, false)?])).await?;

        let www = probe(addr, Some("www.example.test"), true).await?;
        rig.expect_cert(&www, WILDCARD_CERT)?;
        let answer = http_answer(&www)?;
        if answer.status != 200 || answer.served_by.as_deref() != Some(WEB_BACKEND) {
            return Err(format!(
                "www.example.test: expected 200 from backend {WEB_BACKEND}, got {} served by {:?}: {:?}",
                answer.status, answer.served_by, answer.body
            ));
        }
        if rig.api.handshakes() != 0 {
            return Err("the passthrough backend saw a handshake meant for the wildcard chain".into());
        }

        let other = probe(addr, Some("foo.example.test"), true).await?;
        rig.expect_cert(&other, WILDCARD_CERT)?;
        let answer = http_answer(&other)?;
        if answer.status != 200 || answer.body != WILDCARD_BODY {
            return Err(format!("foo.example.test: expected Envoy's direct response, got {} {:?}", answer.status, answer.body));
        }
        Ok(())
    })
}

/// Like Cilium's Gateway listeners, no default chain: an SNI no chain matches, and a
/// ClientHello without SNI, are reset.
pub fn sni_no_matching_chain_resets() -> Result<(), String> {
    run_async(|| async {
        let rig = Rig::new("no-match-resets")?;
        let (addr, _port) = free_addr()?;
        let envoy = rig.start(&rig.static_bootstrap(vec![rig.listener(addr, false)?])).await?;

        for sni in [Some("other.invalid"), None] {
            let obs = probe(addr, sni, false).await?;
            if obs.outcome != Outcome::Reset {
                return Err(format!("SNI {}: expected a reset, got {}", sni_label(&obs), describe(&obs)));
            }
        }
        // Envoy counts both as unmatched (stat named after the listener's address).
        let stat = format!("listener.{}_{}.no_filter_chain_match", addr.ip(), addr.port());
        let stats = envoy.admin().stats(&format!("^{}$", stat.replace('.', "\\."))).await.map_err(|e| e.to_string())?;
        match stats.number(&stat) {
            Some(n) if n >= 2 => Ok(()),
            other => Err(format!("{stat} = {other:?}, expected >= 2; stats: {stats:?}")),
        }
    })
}

/// With a default chain, unknown SNI and no SNI are answered by it, with its certificate.
pub fn sni_default_chain_answers_unknown_sni() -> Result<(), String> {
    run_async(|| async {
        let rig = Rig::new("default-chain")?;
        let (addr, _port) = free_addr()?;
        let _envoy = rig.start(&rig.static_bootstrap(vec![rig.listener(addr, true)?])).await?;

        for sni in [Some("other.invalid"), None] {
            let obs = probe(addr, sni, true).await?;
            rig.expect_cert(&obs, DEFAULT_CERT)?;
            let answer = http_answer(&obs)?;
            if answer.status != 404 || answer.body != DEFAULT_BODY {
                return Err(format!("SNI {}: expected the default chain's 404, got {} {:?}", sni_label(&obs), answer.status, answer.body));
            }
        }
        // The named chains still win over the default one.
        let api = probe(addr, Some("api.example.test"), false).await?;
        rig.expect_cert(&api, API_CERT)?;
        Ok(())
    })
}

/// The live `/config_dump`, read by the summarizer, shows the two chains with their matches.
pub fn dump_static_chains_summarized() -> Result<(), String> {
    run_async(|| async {
        let rig = Rig::new("dump-static")?;
        let (addr, _port) = free_addr()?;
        let envoy = rig.start(&rig.static_bootstrap(vec![rig.listener(addr, false)?])).await?;
        let dump = envoy.admin().config_dump().await.map_err(|e| e.to_string())?;
        let summary = summarize_bytes(&dump, "live /config_dump", false).map_err(|e| e.to_string())?;
        let l = listener(&summary)?;
        if l.source != ListenerSource::Static || l.state != ListenerState::Active {
            return Err(format!("expected a static active listener, got {:?} {:?}", l.source, l.state));
        }
        if l.addresses != vec![addr.to_string()] {
            return Err(format!("addresses {:?}, expected [{addr}]", l.addresses));
        }
        if l.filter_chain_count() != 2 || l.default_filter_chain.is_some() {
            return Err(format!("expected 2 chains and no default chain, got {l:#?}"));
        }
        let (a, b) = (&l.filter_chains[0], &l.filter_chains[1]);
        let ok = a.name.is_none()
            && a.filter_chain_match.server_names == ["api.example.test"]
            && a.filter_chain_match.transport_protocol.as_deref() == Some("tls")
            && matches!(&a.action, DumpAction::TcpProxy { cluster: Some(c), .. } if c == API_CLUSTER)
            && a.tls.is_none()
            && b.filter_chain_match.server_names == ["*.example.test"]
            && matches!(&b.action, DumpAction::Http { route_config: Some(r), rds: false } if r == "listener-secure")
            && b.tls.as_ref().is_some_and(|t| t.alpn == ["h2", "http/1.1"]);
        if ok { Ok(()) } else { Err(format!("chains do not match the rendered layout: {:#?}", l.filter_chains)) }
    })
}

/// Identical matchers in a static config: Envoy refuses to start, in its own words, with
/// Cilium's unnamed-chain wording.
pub fn reject_static_duplicate_refuses_to_start() -> Result<(), String> {
    run_async(|| async {
        let rig = Rig::new("static-duplicate")?;
        let (addr, _port) = free_addr()?;
        let err = match rig.start_raw(&rig.static_bootstrap(vec![rig.duplicate_listener(addr)?])).await? {
            Ok(_) => return Err("Envoy started with duplicate filter chain matchers".into()),
            Err(e) => e,
        };
        let EnvoyError::Exited { envoy_error, .. } = &err else {
            return Err(format!("expected Envoy to exit, got: {err}"));
        };
        let want = format!(
            "error adding listener '{addr}': filter chain '' has the same matching rules defined as ''. duplicate matcher is: {{\"transport_protocol\":\"tls\",\"server_names\":[\"api.example.test\"]}}"
        );
        if envoy_error.contains(&want) { Ok(()) } else { Err(format!("Envoy's text lacks {want:?}:\n{err}")) }
    })
}

/// v1 good, v2 with duplicate matchers over file LDS: v2 is rejected (stats and `error_state`
/// with Envoy's text, via the summarizer), and v1 keeps serving the same certificates.
pub fn reject_lds_duplicate_error_state_keeps_serving() -> Result<(), String> {
    run_async(|| async {
        let rig = Rig::new("lds-duplicate")?;
        let (addr, _port) = free_addr()?;
        let lds = LdsDir::create(&rig.tmp.path().join("lds")).map_err(|e| e.to_string())?;
        lds.push("1", &[rig.listener(addr, false)?]).map_err(|e| e.to_string())?;
        let envoy = rig.start(&Bootstrap::file_lds(AdminSpec::default(), lds.path(), rig.clusters())).await?;
        let admin = envoy.admin();

        rig.expect_cert(&probe(addr, Some("api.example.test"), false).await?, API_CERT)?;
        let before = lds_counters(&admin).await.map_err(|e| e.to_string())?;
        lds.push("2", &[rig.duplicate_listener(addr)?]).map_err(|e| e.to_string())?;
        let update = wait_for_lds_update(&admin, before, Duration::from_secs(10)).await.map_err(|e| e.to_string())?;
        if update.outcome != LdsOutcome::Rejected {
            return Err(format!("v2 was {:?}, expected Rejected; stats {:?}", update.outcome, update.stats));
        }

        let dump = admin.dynamic_listeners_dump().await.map_err(|e| e.to_string())?;
        let summary = summarize_bytes(&dump, "live /config_dump?resource=dynamic_listeners", false).map_err(|e| e.to_string())?;
        let l = listener(&summary)?;
        let want = format!("error adding listener '{addr}': filter chain '' has the same matching rules defined as ''");
        if !l.error.as_deref().is_some_and(|e| e.contains(&want)) {
            return Err(format!("expected error_state containing {want:?}, got {:?}", l.error));
        }
        if l.state != ListenerState::Active || l.version_info.as_deref() != Some("1") || l.filter_chain_count() != 2 {
            return Err(format!("expected v1 still active with 2 chains, got {l:#?}"));
        }

        // Still serving v1: exact passthrough and the wildcard both answer as before.
        rig.expect_cert(&probe(addr, Some("api.example.test"), false).await?, API_CERT)?;
        rig.expect_cert(&probe(addr, Some("www.example.test"), false).await?, WILDCARD_CERT)?;
        if !envoy.is_running() {
            return Err(format!("Envoy exited after the rejected update; log:\n{}", envoy.log()));
        }
        Ok(())
    })
}

fn listener(summary: &DumpSummary) -> Result<&layout_gate::observe::envoy_dump::ListenerSummary, String> {
    summary.listener(LISTENER).ok_or_else(|| {
        format!("no listener {LISTENER:?} in the dump; found {:?}", summary.listeners.iter().map(|l| &l.name).collect::<Vec<_>>())
    })
}
