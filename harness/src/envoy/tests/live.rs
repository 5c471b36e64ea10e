//! Starting a real Envoy: readiness, the admin interface, LDS pushes, refusals, and cleanup.

use std::time::Duration;

use super::*;

fn opts() -> StartOptions {
    StartOptions { binary: Some(envoy()), ..StartOptions::default() }
}

/// Whether `pid` is (still) an Envoy. After a reap the pid is gone; if the kernel already
/// reused it, the new owner is not Envoy.
fn is_envoy_process(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == "envoy")
}

#[test]
fn static_duplicate_refuses_to_start_with_envoys_words() {
    let tmp = tempfile::tempdir().unwrap();
    let held = HeldAddrs::reserve([()]).unwrap();
    let addr = held[&()];
    let boot = Bootstrap::static_listeners(AdminSpec::default(), vec![duplicate_listener(addr)], representative_clusters(&Ports::free()));
    let cfg = write_bootstrap(tmp.path(), &boot);
    let err = EnvoyProcess::start(&cfg, &tmp.path().join("run"), opts()).expect_err("Envoy must refuse");
    let msg = err.to_string();
    assert!(matches!(err, EnvoyError::Exited { .. }), "{msg}");
    assert!(msg.contains(&format!("error adding listener '{addr}'")), "{msg}");
    assert!(msg.contains("filter chain '' has the same matching rules defined as ''"), "{msg}");
    assert!(msg.contains("--disable-hot-restart"), "the command line is in the error: {msg}");
}

#[tokio::test]
async fn start_ready_and_config_dump_has_the_listener() {
    let certs = certs();
    let tmp = tempfile::tempdir().unwrap();
    let ports = Ports::free();
    let boot = Bootstrap::static_listeners(
        AdminSpec::default(),
        vec![representative_listener(&ports, &CertPaths::Real(&certs), true)],
        representative_clusters(&ports),
    );
    let cfg = write_bootstrap(tmp.path(), &boot);
    let envoy = EnvoyProcess::start_async(&cfg, &tmp.path().join("run"), opts()).await.unwrap_or_else(|e| panic!("{e}"));
    let admin = envoy.admin();
    assert!(admin.ready().await.unwrap());
    assert!(admin.addr().ip().is_loopback());

    let dump = admin.config_dump_json(None).await.unwrap();
    let listeners = dump["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["@type"] == "type.googleapis.com/envoy.admin.v3.ListenersConfigDump")
        .expect("a ListenersConfigDump");
    let listener = &listeners["static_listeners"][0]["listener"];
    assert_eq!(listener["name"], "listener");
    let chains = listener["filter_chains"].as_array().unwrap();
    assert_eq!(chains.len(), 3);
    assert_eq!(chains[0]["filter_chain_match"]["server_names"][0], "api.example.test");
    assert_eq!(chains[1]["filter_chain_match"]["server_names"][0], "*.example.test");
    assert_eq!(listener["default_filter_chain"]["name"], "default");

    let stats = admin.stats(r"^server\.state$").await.unwrap();
    assert_eq!(stats.number("server.state"), Some(0), "0 = LIVE: {stats:?}");
    let stopped = envoy.stop();
    assert!(stopped.log.contains("starting main dispatch loop"), "{}", stopped.log);
}

#[tokio::test]
async fn lds_good_then_duplicate_is_rejected_and_keeps_v1() {
    let certs = certs();
    let tmp = tempfile::tempdir().unwrap();
    let ports = Ports::free();
    let lds = LdsDir::create(&tmp.path().join("lds")).unwrap();
    let good = representative_listener(&ports, &CertPaths::Real(&certs), false);
    lds.push("1", std::slice::from_ref(&good)).unwrap();
    let boot = Bootstrap::file_lds(AdminSpec::default(), lds.path(), representative_clusters(&ports));
    let cfg = write_bootstrap(tmp.path(), &boot);
    let envoy = EnvoyProcess::start_async(&cfg, &tmp.path().join("run"), opts()).await.unwrap_or_else(|e| panic!("{e}"));
    let admin = envoy.admin();

    let before = lds_counters(&admin).await.unwrap();
    assert_eq!(before, LdsCounters { update_success: 1, update_rejected: 0 }, "v1 loaded at start");

    let mut bad = duplicate_listener(ports.https);
    bad.name = good.name.clone();
    lds.push("2", &[bad]).unwrap();
    let update = wait_for_lds_update(&admin, before, Duration::from_secs(10)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(update.outcome, LdsOutcome::Rejected, "{:?}", update.stats);
    assert_eq!(update.stats.text("listener_manager.lds.version_text"), Some("1"));

    let dump = admin.config_dump_json(Some("resource=dynamic_listeners")).await.unwrap();
    let entry =
        dump["configs"].as_array().unwrap().iter().find(|c| c["name"] == "listener").unwrap_or_else(|| panic!("listener in {dump:#}"));
    assert_eq!(entry["active_state"]["version_info"], "1");
    let details = entry["error_state"]["details"].as_str().unwrap_or_default();
    assert!(details.contains("filter chain '' has the same matching rules defined as ''"), "{details}");
    assert!(envoy.is_running());

    // v3 good again: accepted, error_state cleared.
    let since = update.counters;
    lds.push("3", &[good]).unwrap();
    let update = wait_for_lds_update(&admin, since, Duration::from_secs(10)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(update.outcome, LdsOutcome::Accepted, "{:?}", update.stats);
}

#[test]
fn drop_kills_and_reaps_envoy() {
    let tmp = tempfile::tempdir().unwrap();
    let ports = Ports::free();
    let boot = Bootstrap::static_listeners(
        AdminSpec::default(),
        vec![ListenerSpec::new("listener", ports.https).chain(ChainSpec::passthrough(&["api.example.test"], "default:api:443"))],
        representative_clusters(&ports),
    );
    let cfg = write_bootstrap(tmp.path(), &boot);
    let envoy = EnvoyProcess::start(&cfg, &tmp.path().join("run"), opts()).unwrap_or_else(|e| panic!("{e}"));
    let pid = envoy.pid();
    assert!(is_envoy_process(pid), "pid {pid} is a running envoy before drop");
    drop(envoy);
    // Reaped, not a zombie: /proc/<pid> is gone right away, no sleep needed.
    assert!(!is_envoy_process(pid), "envoy pid {pid} outlived its owner");
}

#[test]
fn start_times_out_with_last_seen_state() {
    // An Envoy that cannot become ready within 1 ms must be reported (and still reaped).
    let tmp = tempfile::tempdir().unwrap();
    let ports = Ports::free();
    let boot = Bootstrap::static_listeners(AdminSpec::default(), vec![], representative_clusters(&ports));
    let cfg = write_bootstrap(tmp.path(), &boot);
    let err = EnvoyProcess::start(&cfg, &tmp.path().join("run"), StartOptions { ready_timeout: Duration::from_millis(1), ..opts() })
        .expect_err("1 ms is too short");
    let msg = err.to_string();
    assert!(msg.contains("wait `envoy-ready` timed out"), "{msg}");
}

#[test]
fn installed_envoy_reports_its_version() {
    let v = envoy().version().unwrap_or_else(|e| panic!("{e}"));
    assert!(v.version.major >= 1 && v.version.minor >= 30, "{v:?}");
    assert!(v.raw.contains(&v.version.to_string()), "{v:?}");
}

/// cilium-envoy's bootstrap in each of the agent's xDS modes is one upstream Envoy accepts, and
/// asks for what the agent serves in it: in split mode LDS and CDS each on its own gRPC stream,
/// in ADS mode one aggregated stream that LDS and CDS are read from (an Envoy asking the other
/// way finds the bridge refusing the service, so the shape is what decides the mode).
#[test]
fn cilium_xds_bootstraps_ask_as_the_agents_mode_serves() {
    let tmp = tempfile::tempdir().unwrap();
    let sock = tmp.path().join("bridge.sock");
    for mode in [CiliumXdsMode::Split, CiliumXdsMode::Ads] {
        let boot = Bootstrap::cilium_xds(AdminSpec::default(), &sock, mode);
        let json = boot.to_json();
        let dynamic = &json["dynamic_resources"];
        let grpc_cluster = "/api_config_source/grpc_services/0/envoy_grpc/cluster_name";
        match mode {
            CiliumXdsMode::Split => {
                assert!(dynamic.get("ads_config").is_none(), "{dynamic:#}");
                for t in ["lds_config", "cds_config"] {
                    assert_eq!(
                        dynamic[t].pointer(grpc_cluster).and_then(|v| v.as_str()),
                        Some(bootstrap::CILIUM_XDS_CLUSTER),
                        "{dynamic:#}"
                    );
                    assert!(dynamic[t].get("ads").is_none(), "{dynamic:#}");
                }
            }
            CiliumXdsMode::Ads => {
                assert_eq!(
                    dynamic["ads_config"].pointer("/grpc_services/0/envoy_grpc/cluster_name").and_then(|v| v.as_str()),
                    Some(bootstrap::CILIUM_XDS_CLUSTER),
                    "{dynamic:#}"
                );
                assert_eq!(dynamic["ads_config"]["set_node_on_first_message_only"], true);
                for t in ["lds_config", "cds_config"] {
                    assert_eq!(dynamic[t]["ads"], serde_json::json!({}), "{dynamic:#}");
                    assert!(dynamic[t].get("api_config_source").is_none(), "{dynamic:#}");
                    assert_eq!(dynamic[t]["initial_fetch_timeout"], "30s");
                }
            }
        }
        assert_eq!(json["node"]["id"], bootstrap::CILIUM_ENVOY_NODE_ID);
        let cfg = tmp.path().join(format!("{}.json", mode.as_str()));
        boot.write(&cfg).unwrap();
        validate_with(&envoy(), &cfg).unwrap_or_else(|e| panic!("{mode:?}: {e}"));
    }
}

/// cilium-config's `envoy-xds-mode` as cilium-agent reads it: absent or `split` is split,
/// `ads` and `strict-ads` serve ADS; anything else is refused, named.
#[test]
fn the_agents_xds_mode_is_read_from_its_config() {
    assert_eq!(CiliumXdsMode::from_config(None), Ok(CiliumXdsMode::Split));
    assert_eq!(CiliumXdsMode::from_config(Some("split\n")), Ok(CiliumXdsMode::Split));
    assert_eq!(CiliumXdsMode::from_config(Some("ads")), Ok(CiliumXdsMode::Ads));
    assert_eq!(CiliumXdsMode::from_config(Some("strict-ads")), Ok(CiliumXdsMode::Ads));
    let e = CiliumXdsMode::from_config(Some("delta")).unwrap_err();
    assert!(e.contains("\"delta\"") && e.contains("split, ads, strict-ads"), "{e}");
}
