//! Raw shapes to summaries: which shape the file is, which state each listener is in, and what
//! each chain does.

use super::error::DumpError;
use super::parse::{
    MaybeElided, ObjectOnly, RawAddress, RawCecObject, RawChain, RawConfig, RawDynamicListener, RawFilter, RawListener, RawRoot,
};
use super::{
    CertificateSource, ChainAction, ChainMatch, ChainSummary, DumpSummary, ListenerSource, ListenerState, ListenerSummary, TlsSummary,
    WeightedCluster,
};

const LISTENERS_DUMP: &str = "envoy.admin.v3.ListenersConfigDump";
const DYNAMIC_LISTENER: &str = "envoy.admin.v3.ListenersConfigDump.DynamicListener";
const STATIC_LISTENER: &str = "envoy.admin.v3.ListenersConfigDump.StaticListener";
const LISTENER_RESOURCE: &str = "envoy.config.listener.v3.Listener";

pub(super) fn summarize(root: RawRoot, origin: &str) -> Result<DumpSummary, DumpError> {
    let mut listeners = if let Some(configs) = root.configs {
        from_config_dump(configs, origin)?
    } else {
        match root.kind.as_deref() {
            Some(kind) if is_cec_kind(kind) => {
                from_cec(RawCecObject { kind: root.kind.clone(), metadata: root.metadata, spec: root.spec }, None, origin)?
            }
            Some(kind) if kind.ends_with("List") => {
                let mut out = Vec::new();
                for (i, item) in root.items.unwrap_or_default().into_iter().enumerate() {
                    out.extend(from_cec(item, Some(format!("items[{i}]")), origin)?);
                }
                out
            }
            Some(kind) => {
                return Err(DumpError::shape(
                    origin,
                    Some("kind".into()),
                    format!("{kind:?} is not a CiliumEnvoyConfig, CiliumClusterwideEnvoyConfig or List"),
                ));
            }
            None => {
                return Err(DumpError::shape(
                    origin,
                    None,
                    "neither an Envoy config dump (no top-level `configs` array) nor a \
                     CiliumEnvoyConfig (no `kind`)",
                ));
            }
        }
    };
    // Envoy does not promise an order in its dumps; sorting makes summaries of the same state
    // compare equal across runs. Stable, so equal names keep dump order.
    listeners.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(DumpSummary { listeners })
}

fn is_cec_kind(kind: &str) -> bool {
    kind == "CiliumEnvoyConfig" || kind == "CiliumClusterwideEnvoyConfig"
}

/// `@type` values are `type.googleapis.com/<full name>`; compare the full name only.
fn type_is(type_url: Option<&str>, full_name: &str) -> bool {
    type_url.is_some_and(|t| t.rsplit('/').next() == Some(full_name))
}

// ---- Envoy config dumps ----

/// A rejected update that Envoy 1.40 lists a second time as a nameless `DynamicListener`.
struct NamelessError {
    name: String,
    listener: ListenerSummary,
}

fn from_config_dump(configs: Vec<ObjectOnly<RawConfig>>, origin: &str) -> Result<Vec<ListenerSummary>, DumpError> {
    let mut out = Vec::new();
    let mut nameless = Vec::new();
    for (i, ObjectOnly(entry)) in configs.into_iter().enumerate() {
        let path = format!("configs[{i}]");
        match classify(&entry) {
            EntryKind::ListenersDump => {
                for (j, s) in entry.static_listeners.unwrap_or_default().into_iter().enumerate() {
                    let p = format!("{path}.static_listeners[{j}]");
                    out.push(static_listener(s.listener, &p, origin)?);
                }
                for (j, d) in entry.dynamic_listeners.unwrap_or_default().into_iter().enumerate() {
                    let p = format!("{path}.dynamic_listeners[{j}]");
                    dynamic_listener(d, &p, origin, &mut out, &mut nameless)?;
                }
            }
            EntryKind::Dynamic => {
                let d = RawDynamicListener {
                    name: entry.name,
                    active_state: entry.active_state,
                    warming_state: entry.warming_state,
                    draining_state: entry.draining_state,
                    error_state: entry.error_state,
                };
                dynamic_listener(d, &path, origin, &mut out, &mut nameless)?;
            }
            EntryKind::Static => out.push(static_listener(entry.listener, &path, origin)?),
            EntryKind::Other => {}
        }
    }
    fold_nameless(&mut out, nameless);
    Ok(out)
}

enum EntryKind {
    ListenersDump,
    Dynamic,
    Static,
    Other,
}

fn classify(entry: &RawConfig) -> EntryKind {
    let t = entry.type_url.as_deref();
    if type_is(t, LISTENERS_DUMP) {
        EntryKind::ListenersDump
    } else if type_is(t, DYNAMIC_LISTENER) {
        EntryKind::Dynamic
    } else if type_is(t, STATIC_LISTENER) {
        EntryKind::Static
    } else if t.is_some() {
        EntryKind::Other
    } else if entry.static_listeners.is_some() || entry.dynamic_listeners.is_some() {
        // Hand-made or filtered dumps may drop `@type`; go by the fields instead.
        EntryKind::ListenersDump
    } else if entry.name.is_some()
        || entry.active_state.is_some()
        || entry.warming_state.is_some()
        || entry.draining_state.is_some()
        || entry.error_state.is_some()
    {
        EntryKind::Dynamic
    } else if entry.listener.is_some() {
        EntryKind::Static
    } else {
        EntryKind::Other
    }
}

fn static_listener(listener: Option<RawListener>, path: &str, origin: &str) -> Result<ListenerSummary, DumpError> {
    let listener = listener.ok_or_else(|| DumpError::shape(origin, Some(path.to_string()), "static listener without `listener`"))?;
    let name =
        listener.name.clone().ok_or_else(|| DumpError::shape(origin, Some(format!("{path}.listener")), "listener without `name`"))?;
    Ok(with_config(name, ListenerSource::Static, ListenerState::Active, None, listener))
}

fn dynamic_listener(
    raw: RawDynamicListener,
    path: &str,
    origin: &str,
    out: &mut Vec<ListenerSummary>,
    nameless: &mut Vec<NamelessError>,
) -> Result<(), DumpError> {
    let RawDynamicListener { name, active_state, warming_state, draining_state, error_state } = raw;
    let (error_text, failed_config) = match error_state {
        Some(e) => (Some(e.details.unwrap_or_else(|| "update rejected (no details)".to_string())), e.failed_configuration),
        None => (None, None),
    };
    let present: Vec<(ListenerState, &'static str, super::parse::RawListenerState)> = [
        (ListenerState::Active, "active_state", active_state),
        (ListenerState::Warming, "warming_state", warming_state),
        (ListenerState::Draining, "draining_state", draining_state),
    ]
    .into_iter()
    .filter_map(|(state, field, s)| s.map(|s| (state, field, s)))
    .collect();
    let is_nameless_error = name.is_none() && present.is_empty() && error_text.is_some();

    let mut states = present.into_iter();
    let summary = if let Some((state, field, primary)) = states.next() {
        let other_states = states.map(|(s, _, _)| s).collect();
        let listener =
            primary.listener.ok_or_else(|| DumpError::shape(origin, Some(format!("{path}.{field}")), "state without `listener`"))?;
        let name = name
            .or_else(|| listener.name.clone())
            .ok_or_else(|| DumpError::shape(origin, Some(path.to_string()), "dynamic listener without `name`"))?;
        let mut s = with_config(name, ListenerSource::Dynamic, state, primary.version_info, listener);
        s.other_states = other_states;
        s.error = error_text;
        s
    } else {
        let name = name.or_else(|| failed_config.as_ref().and_then(|l| l.name.clone())).ok_or_else(|| {
            DumpError::shape(
                origin,
                Some(path.to_string()),
                "dynamic listener without `name` and without \
                     `error_state.failed_configuration.name`",
            )
        })?;
        ListenerSummary {
            name,
            source: ListenerSource::Dynamic,
            state: ListenerState::Error,
            other_states: Vec::new(),
            version_info: None,
            // Where the rejected listener would have listened, which identifies it; its chains
            // are not reported because Envoy serves none of them.
            addresses: failed_config.as_ref().map(addresses).unwrap_or_default(),
            filter_chains: Vec::new(),
            default_filter_chain: None,
            error: Some(error_text.unwrap_or_else(|| "listed without active, warming, draining or error state".to_string())),
        }
    };
    if is_nameless_error {
        nameless.push(NamelessError { name: summary.name.clone(), listener: summary });
    } else {
        out.push(summary);
    }
    Ok(())
}

/// The nameless entry repeats a rejection already shown on the named entry (if any): merge it
/// there so it is neither listed twice nor counted as a live listener.
fn fold_nameless(out: &mut Vec<ListenerSummary>, nameless: Vec<NamelessError>) {
    for n in nameless {
        match out.iter_mut().find(|l| l.source == ListenerSource::Dynamic && l.name == n.name) {
            Some(named) => {
                if named.error.is_none() {
                    named.error = n.listener.error;
                }
            }
            None => out.push(n.listener),
        }
    }
}

// ---- CiliumEnvoyConfig ----

fn from_cec(cec: RawCecObject, path: Option<String>, origin: &str) -> Result<Vec<ListenerSummary>, DumpError> {
    let at = |field: &str| match &path {
        Some(p) => format!("{p}.{field}"),
        None => field.to_string(),
    };
    match cec.kind.as_deref() {
        Some(kind) if is_cec_kind(kind) => {}
        other => {
            return Err(DumpError::shape(
                origin,
                Some(at("kind")),
                format!(
                    "expected CiliumEnvoyConfig or CiliumClusterwideEnvoyConfig, found {}",
                    other.map_or("nothing".to_string(), |k| format!("{k:?}"))
                ),
            ));
        }
    }
    // Envoy knows CEC listeners as `<namespace>/<cec>/<listener>` (cluster-wide ones without
    // the namespace); naming them the same way lets a lane compare intent with Envoy's dump.
    let prefix = cec.metadata.as_ref().and_then(|m| {
        let name = m.name.as_deref()?;
        Some(match m.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => format!("{ns}/{name}/"),
            _ => format!("{name}/"),
        })
    });
    let resources = cec.spec.and_then(|s| s.resources).unwrap_or_default();
    let mut out = Vec::new();
    for (i, resource) in resources.into_iter().enumerate() {
        if !type_is(resource.type_url.as_deref(), LISTENER_RESOURCE) {
            continue;
        }
        let name = resource
            .name
            .clone()
            .ok_or_else(|| DumpError::shape(origin, Some(at(&format!("spec.resources[{i}]"))), "listener resource without `name`"))?;
        let full = match &prefix {
            Some(p) if !name.contains('/') => format!("{p}{name}"),
            _ => name,
        };
        out.push(with_config(full, ListenerSource::Cec, ListenerState::Active, None, resource));
    }
    Ok(out)
}

// ---- listener config ----

fn with_config(
    name: String,
    source: ListenerSource,
    state: ListenerState,
    version_info: Option<String>,
    listener: RawListener,
) -> ListenerSummary {
    let addresses = addresses(&listener);
    let filter_chains = listener.filter_chains.unwrap_or_default().into_iter().map(chain).collect();
    let default_filter_chain = listener.default_filter_chain.map(|d| match d {
        MaybeElided::Present(c) => chain(c),
        MaybeElided::Elided => elided_chain(),
    });
    ListenerSummary {
        name,
        source,
        state,
        other_states: Vec::new(),
        version_info,
        addresses,
        filter_chains,
        default_filter_chain,
        error: None,
    }
}

fn addresses(listener: &RawListener) -> Vec<String> {
    let main = listener.address.as_ref().and_then(address);
    let additional = listener.additional_addresses.iter().flatten().filter_map(|a| a.address.as_ref().and_then(address));
    main.into_iter().chain(additional).collect()
}

fn address(a: &RawAddress) -> Option<String> {
    if let Some(s) = &a.socket_address {
        let ip = s.address.as_deref().unwrap_or("");
        // No port_value at all is protobuf's default, 0 (a listener Envoy binds anywhere).
        let port = s.port_value.map_or(0, |p| p.0);
        return Some(if ip.contains(':') { format!("[{ip}]:{port}") } else { format!("{ip}:{port}") });
    }
    if let Some(p) = &a.pipe {
        return Some(format!("pipe:{}", p.path.as_deref().unwrap_or("")));
    }
    a.envoy_internal_address.as_ref().map(|i| format!("internal:{}", i.server_listener_name.as_deref().unwrap_or("")))
}

/// A default chain that a trimmed dump replaced with `"..."`: present, contents unknown.
fn elided_chain() -> ChainSummary {
    ChainSummary { name: None, filter_chain_match: ChainMatch::default(), action: ChainAction::Other { filters: Vec::new() }, tls: None }
}

fn chain(raw: RawChain) -> ChainSummary {
    let filter_chain_match = raw
        .filter_chain_match
        .map(|m| ChainMatch {
            server_names: m.server_names.unwrap_or_default(),
            transport_protocol: m.transport_protocol,
            destination_port: m.destination_port.map(|p| u32::from(p.0)),
        })
        .unwrap_or_default();
    let action = action(raw.filters.unwrap_or_default());
    let tls = raw.transport_socket.and_then(|ts| {
        let config = ts.typed_config.unwrap_or_default();
        let type_url = config.type_url.0.as_deref();
        let is_tls = matches!(ts.name.as_deref(), Some("envoy.transport_sockets.tls" | "tls"))
            || type_is(type_url, "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext");
        // An UpstreamTlsContext here would be a misconfiguration, not termination.
        if !is_tls || type_url.is_some_and(|t| t.ends_with("UpstreamTlsContext")) {
            return None;
        }
        let common = config.common_tls_context.0;
        let mut certificates = Vec::new();
        let mut alpn = Vec::new();
        if let Some(common) = common {
            for cert in common.tls_certificates.unwrap_or_default() {
                certificates.push(match cert.certificate_chain.and_then(|c| c.filename) {
                    Some(path) => CertificateSource::File { path },
                    None => CertificateSource::Inline,
                });
            }
            for sds in common.tls_certificate_sds_secret_configs.unwrap_or_default() {
                certificates.push(CertificateSource::Sds { name: sds.name.unwrap_or_default() });
            }
            alpn = common.alpn_protocols.unwrap_or_default();
        }
        Some(TlsSummary { certificates, alpn })
    });
    ChainSummary { name: raw.name, filter_chain_match, action, tls }
}

fn is_cilium_filter(f: &RawFilter) -> bool {
    f.name.as_deref().is_some_and(|n| n.starts_with("cilium."))
}

/// Envoy runs network filters in order and the last one terminates; Cilium prepends its own
/// (`cilium.network`), which never decide where traffic goes.
fn action(filters: Vec<RawFilter>) -> ChainAction {
    let mut filters: Vec<RawFilter> = filters.into_iter().filter(|f| !is_cilium_filter(f)).collect();
    let Some(last) = filters.pop() else {
        return ChainAction::Other { filters: Vec::new() };
    };
    let name = last.name.as_deref().unwrap_or("");
    let config = last.typed_config.unwrap_or_default();
    let type_url = config.type_url.0.as_deref();
    if matches!(name, "envoy.filters.network.tcp_proxy" | "envoy.tcp_proxy")
        || type_is(type_url, "envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy")
    {
        let weighted_clusters = config
            .weighted_clusters
            .0
            .and_then(|w| w.clusters)
            .unwrap_or_default()
            .into_iter()
            .map(|c| WeightedCluster { name: c.name.unwrap_or_default(), weight: c.weight })
            .collect();
        return ChainAction::TcpProxy { cluster: config.cluster.0, weighted_clusters };
    }
    if matches!(name, "envoy.filters.network.http_connection_manager" | "envoy.http_connection_manager")
        || type_is(type_url, "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager")
    {
        let rds = config.rds.0.map(|r| r.route_config_name);
        return match rds {
            Some(route_config) => ChainAction::Http { route_config, rds: true },
            None => ChainAction::Http { route_config: config.route_config.0.and_then(|r| r.name), rds: false },
        };
    }
    let mut names: Vec<String> = filters.into_iter().map(|f| f.name.unwrap_or_else(|| "(unnamed)".to_string())).collect();
    names.push(if name.is_empty() { "(unnamed)".to_string() } else { name.to_string() });
    ChainAction::Other { filters: names }
}
