//! The seeded generator of Gateway layouts of the shapes platforms render: 1-64 listeners over a
//! few ports; HTTP, HTTPS terminate and TLS passthrough; exact, wildcard and absent hostnames
//! drawn from one small pool per layout so they overlap on purpose; HTTPRoutes and TLSRoutes
//! with and without hostnames and sectionNames; Secrets and Services present or missing;
//! routes and Secrets in other namespaces, with and without the ReferenceGrant that lets them
//! be used; one to three Gateways; ListenerSets only where the pin has them (1.20+).
//!
//! Pure: layout `i` of seed `s` depends on `(s, i)` alone ([`Rng::for_item`]). Each layout lives
//! in namespaces of its own (`d<i>`, `d<i>-app`), so any number of them is one valid input.

use serde_json::{Value, json};

use super::prng::Rng;

/// What the generated layouts may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenOptions {
    /// The TLSRoute apiVersion the pin's CRD bundle serves (`v1alpha2`, `v1`).
    pub tlsroute_version: String,
    /// Whether the pin has ListenerSets (Cilium 1.20+).
    pub listener_sets: bool,
}

/// One generated layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub seed: u64,
    pub index: usize,
    /// The Gateway API, Secret, Service, ReferenceGrant and Namespace objects, in apply order.
    pub objects: Vec<Value>,
}

impl Layout {
    /// The file name the layout is written under.
    pub fn file_name(&self) -> String {
        format!("layout-s{}-{:04}.json", self.seed, self.index)
    }

    /// The layout as one `kind: List` JSON document (which `check` reads).
    pub fn text(&self) -> String {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": self.objects});
        format!("{list:#}\n")
    }

    /// The namespace of its Gateways.
    pub fn namespace(&self) -> String {
        format!("d{}", self.index)
    }
}

/// The ports listeners spread over.
const PORTS: &[u16] = &[80, 443, 8443];

/// Layouts `0..count` of `seed`.
/// The most Gateways a generated layout has (the LB IPAM pool is sized with it).
pub const MAX_GATEWAYS: usize = 3;

pub fn generate(seed: u64, count: usize, opts: &GenOptions) -> Vec<Layout> {
    (0..count).map(|i| layout(seed, i, opts)).collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Proto {
    Http,
    Https,
    Tls,
}

struct Listener {
    name: String,
    port: u16,
    proto: Proto,
    hostname: Option<String>,
}

/// Layout `index` of `seed`.
pub fn layout(seed: u64, index: usize, opts: &GenOptions) -> Layout {
    let mut r = Rng::for_item(seed, index as u64);
    let ns = format!("d{index}");
    let app = format!("d{index}-app");
    let apex = format!("l{index}.example.test");
    // Hostnames overlap on purpose: a wildcard and the exact names under it, the apex, and a
    // nested wildcard.
    let pool: Vec<String> =
        vec![format!("*.{apex}"), apex.clone(), format!("api.{apex}"), format!("www.{apex}"), format!("*.a.{apex}"), format!("x.a.{apex}")];
    let mut objects: Vec<Value> = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"layout": "gen"}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": app, "labels": {"layout": "gen"}}}),
    ];
    let secrets = ["cert-a", "cert-b"];
    // Distinct names per namespace and per kind of backend (plain HTTP behind HTTPRoutes, TLS
    // behind TLSRoutes): check stands up one backend per Service name.
    let services = ["web-a", "web-b", "tls-a", "tls-b"];
    // Which Secrets and Services exist: each one may be missing.
    let secret_present: Vec<bool> = secrets.iter().map(|_| r.chance(80)).collect();
    let cross_secret = r.chance(20);
    let cross_secret_grant = r.chance(50);
    let service_present: Vec<bool> = services.iter().map(|_| r.chance(85)).collect();
    let app_service_grant = r.chance(50);

    let gateways = match r.below(10) {
        0..=6 => 1,
        7..=8 => 2,
        _ => MAX_GATEWAYS,
    };
    let mut all_listeners: Vec<(String, Vec<Listener>)> = Vec::new();
    for g in 0..gateways {
        let gw = format!("gw{g}");
        // Mostly small, sometimes up to 64 listeners.
        let n = match r.below(20) {
            0 => r.range(17, 64),
            1..=3 => r.range(7, 16),
            _ => r.range(1, 6),
        };
        let mut listeners: Vec<Listener> = Vec::new();
        for k in 0..n {
            let port = *r.pick(PORTS);
            let proto = match (port, r.below(10)) {
                (80, 0..=7) => Proto::Http,
                (80, _) => Proto::Https,
                (_, 0..=4) => Proto::Https,
                (_, 5..=8) => Proto::Tls,
                _ => Proto::Http,
            };
            let mut hostname = match (proto, r.below(10)) {
                // TLS passthrough needs no hostname, but platforms give it one most of the time.
                (Proto::Tls, 0) | (Proto::Http, 0..=4) | (Proto::Https, 0..=1) => None,
                _ => Some(r.pick(&pool).clone()),
            };
            // The Gateway CRD refuses two listeners with the same port, protocol and hostname.
            if listeners.iter().any(|l| l.port == port && l.proto == proto && l.hostname == hostname) {
                hostname = Some(format!("n{k}.{apex}"));
            }
            let name = format!(
                "{}-{k}",
                match proto {
                    Proto::Http => "http",
                    Proto::Https => "https",
                    Proto::Tls => "tls",
                }
            );
            listeners.push(Listener { name, port, proto, hostname });
        }
        let specs: Vec<Value> = listeners
            .iter()
            .map(|l| {
                let mut v = json!({"name": l.name, "port": l.port, "protocol": match l.proto {
                    Proto::Http => "HTTP", Proto::Https => "HTTPS", Proto::Tls => "TLS" }});
                if let Some(h) = &l.hostname {
                    v["hostname"] = json!(h);
                }
                match l.proto {
                    Proto::Https => {
                        let s = secrets[r.below(secrets.len())];
                        let reference =
                            if cross_secret && r.chance(30) { json!({"name": s, "namespace": app}) } else { json!({"name": s}) };
                        v["tls"] = json!({"mode": "Terminate", "certificateRefs": [reference]});
                    }
                    Proto::Tls => v["tls"] = json!({"mode": "Passthrough"}),
                    Proto::Http => {}
                }
                // Routes from the app namespace may attach where the listener allows them.
                if r.chance(60) {
                    v["allowedRoutes"] = json!({"namespaces": {"from": "All"}});
                }
                v
            })
            .collect();
        let mut gateway = json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": gw, "namespace": ns},
            "spec": {"gatewayClassName": "cilium", "listeners": specs},
        });
        if opts.listener_sets && r.chance(30) {
            gateway["spec"]["allowedListeners"] = json!({"namespaces": {"from": "Same"}});
            let port = *r.pick(PORTS);
            objects.push(json!({
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "ListenerSet",
                "metadata": {"name": format!("{gw}-extra"), "namespace": ns},
                "spec": {"parentRef": {"name": gw}, "listeners": [
                    {"name": "extra-http", "port": port, "protocol": "HTTP", "hostname": r.pick(&pool).clone()}]},
            }));
        }
        objects.push(gateway);
        all_listeners.push((gw, listeners));
    }

    // Routes: HTTPRoutes for HTTP and HTTPS listeners, TLSRoutes for passthrough ones; with and
    // without sectionName and hostnames; in the Gateway's namespace or the app namespace.
    let routes = r.range(0, 2 + all_listeners.iter().map(|(_, ls)| ls.len()).sum::<usize>().min(8));
    for k in 0..routes {
        let (gw, listeners) = &all_listeners[r.below(all_listeners.len())];
        let Some(target) = listeners.get(r.below(listeners.len())) else { continue };
        let tls = target.proto == Proto::Tls;
        let in_app = r.chance(30);
        let route_ns = if in_app { &app } else { &ns };
        let mut parent = json!({"name": gw});
        if in_app {
            parent["namespace"] = json!(ns);
        }
        if r.chance(70) {
            parent["sectionName"] = json!(target.name);
        }
        let svc = services[r.below(2) + if tls { 2 } else { 0 }];
        let cross_backend = !in_app && r.chance(15);
        let svc = if in_app || cross_backend { format!("app-{svc}") } else { svc.to_string() };
        let mut backend = json!({"name": svc, "port": if tls { 443 } else { 80 }});
        if cross_backend {
            backend["namespace"] = json!(app);
        }
        let mut spec = json!({"parentRefs": [parent], "rules": [{"backendRefs": [backend]}]});
        match (&target.hostname, r.below(10)) {
            (_, 0..=3) => {}
            (Some(h), 4..=7) => spec["hostnames"] = json!([concrete(h)]),
            _ => spec["hostnames"] = json!([r.pick(&pool).clone()]),
        }
        let (api, kind) = if tls {
            (format!("gateway.networking.k8s.io/{}", opts.tlsroute_version), "TLSRoute")
        } else {
            ("gateway.networking.k8s.io/v1".to_string(), "HTTPRoute")
        };
        objects.push(
            json!({"apiVersion": api, "kind": kind, "metadata": {"name": format!("route-{k}"), "namespace": route_ns}, "spec": spec}),
        );
    }

    for (i, s) in secrets.iter().enumerate() {
        if secret_present[i] {
            objects.push(secret(s, &ns));
        }
        if cross_secret {
            objects.push(secret(s, &app));
        }
    }
    if cross_secret && cross_secret_grant {
        objects.push(json!({
            "apiVersion": "gateway.networking.k8s.io/v1beta1",
            "kind": "ReferenceGrant",
            "metadata": {"name": "gateways-use-secrets", "namespace": app},
            "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": ns}], "to": [{"group": "", "kind": "Secret"}]},
        }));
    }
    for (i, s) in services.iter().enumerate() {
        if service_present[i] {
            objects.push(service(s, &ns));
            objects.push(service(&format!("app-{s}"), &app));
        }
    }
    if app_service_grant {
        objects.push(json!({
            "apiVersion": "gateway.networking.k8s.io/v1beta1",
            "kind": "ReferenceGrant",
            "metadata": {"name": "routes-use-services", "namespace": app},
            "spec": {"from": [
                {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": ns},
                {"group": "gateway.networking.k8s.io", "kind": "TLSRoute", "namespace": ns}],
                "to": [{"group": "", "kind": "Service"}]},
        }));
    }
    Layout { seed, index, objects }
}

/// A concrete name a hostname covers (`*.x` -> `h.x`).
fn concrete(h: &str) -> String {
    match h.strip_prefix("*.") {
        Some(rest) => format!("h.{rest}"),
        None => h.to_string(),
    }
}

fn secret(name: &str, ns: &str) -> Value {
    // The key material is never used: check stands a generated certificate in for a Secret a
    // listener references; an unreferenced one is applied as written, so it must be valid.
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": {"name": name, "namespace": ns},
        "data": {"tls.crt": "eA==", "tls.key": "eA=="}})
}

fn service(name: &str, ns: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
        "spec": {"ports": [{"name": "https", "port": 443}, {"name": "http", "port": 80}]}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> GenOptions {
        GenOptions { tlsroute_version: "v1alpha2".into(), listener_sets: false }
    }

    #[test]
    fn the_same_seed_gives_the_same_layouts_and_another_seed_others() {
        let a = generate(1, 20, &opts());
        assert_eq!(a, generate(1, 20, &opts()));
        assert_ne!(a, generate(2, 20, &opts()));
        // Layout i does not depend on how many were asked for.
        assert_eq!(generate(1, 5, &opts()), a[..5].to_vec());
    }

    /// Over a few hundred seeds the generator reaches every shape it promises.
    #[test]
    fn the_layouts_cover_the_promised_shapes() {
        let mut seen = std::collections::BTreeSet::new();
        let mut most_listeners = 0;
        for seed in 0..300u64 {
            for l in generate(seed, 1, &opts()) {
                let gateways = l.objects.iter().filter(|o| o["kind"] == "Gateway").count();
                seen.insert(format!("gateways={}", gateways.min(2)));
                for o in &l.objects {
                    let kind = o["kind"].as_str().unwrap().to_string();
                    seen.insert(kind.clone());
                    if kind == "Gateway" {
                        let ls = o["spec"]["listeners"].as_array().unwrap();
                        most_listeners = most_listeners.max(ls.len());
                        for x in ls {
                            seen.insert(format!("{} {}", x["protocol"], if x.get("hostname").is_some() { "host" } else { "nohost" }));
                            if x["hostname"].as_str().is_some_and(|h| h.starts_with("*.")) {
                                seen.insert("wildcard".into());
                            }
                        }
                    }
                    if kind == "Gateway" {
                        let ls = o["spec"]["listeners"].as_array().unwrap();
                        let keys: std::collections::BTreeSet<String> =
                            ls.iter().map(|x| format!("{} {} {}", x["port"], x["protocol"], x["hostname"])).collect();
                        assert_eq!(keys.len(), ls.len(), "seed {seed}: port, protocol and hostname must be unique per listener");
                    }
                    if kind.ends_with("Route") {
                        seen.insert(format!("{kind} hostnames={}", o["spec"].get("hostnames").is_some()));
                        seen.insert(format!("{kind} section={}", o["spec"]["parentRefs"][0].get("sectionName").is_some()));
                    }
                }
            }
        }
        for want in [
            "gateways=1",
            "gateways=2",
            "HTTPRoute",
            "TLSRoute",
            "ReferenceGrant",
            "Secret",
            "Service",
            "\"HTTP\" nohost",
            "\"HTTPS\" host",
            "\"TLS\" host",
            "wildcard",
            "HTTPRoute hostnames=false",
            "TLSRoute hostnames=true",
            "HTTPRoute section=false",
            "TLSRoute section=true",
        ] {
            assert!(seen.contains(want), "{want} never generated: {seen:?}");
        }
        assert!(!seen.contains("ListenerSet"), "ListenerSets only where the pin has them");
        assert!(most_listeners > 16 && most_listeners <= 64, "{most_listeners}");
        let with = GenOptions { listener_sets: true, ..opts() };
        assert!((0..50).flat_map(|s| generate(s, 1, &with)).any(|l| l.objects.iter().any(|o| o["kind"] == "ListenerSet")));
    }
}
