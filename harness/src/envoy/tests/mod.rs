//! Tests of the envoy module against the real binary. Tests that need Envoy fail (never skip)
//! with the install command when it is missing: a green run must mean Envoy was exercised.

mod golden;
mod live;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::*;
use crate::render::certs::{CertSet, CertSpec};
use crate::types::{CertName, DnsName};

/// The Envoy under test, or a failure that says how to install it.
pub(super) fn envoy() -> EnvoyBinary {
    match EnvoyBinary::find() {
        Ok(b) => b,
        Err(e) => panic!("this test runs a real Envoy: {e}"),
    }
}

/// The three certificates the trials and tests use.
pub(super) fn certs() -> CertSet {
    let spec = |name: &str, dns: &str| CertSpec { name: CertName::new(name).unwrap(), dns_names: vec![DnsName::new(dns).unwrap()] };
    CertSet::generate(
        "envoy-unit",
        &[spec("gateway-wildcard", "*.example.test"), spec("api-backend", "api.example.test"), spec("default-cert", "default.invalid")],
    )
    .expect("generating test certificates")
}

/// Where a certificate's files are: real ones from a [`CertSet`], or fixed placeholders for the
/// golden files (which must not depend on a temp dir).
pub(super) enum CertPaths<'a> {
    Real(&'a CertSet),
    Placeholder,
}

impl CertPaths<'_> {
    pub(super) fn tls(&self, name: &str, alpn: &[&str]) -> TlsTermination {
        let (cert_chain, private_key) = match self {
            CertPaths::Real(set) => {
                let c = set.get(&CertName::new(name).unwrap()).expect("certificate in set");
                (c.chain_path.clone(), c.key_path.clone())
            }
            CertPaths::Placeholder => (PathBuf::from(format!("/CERT_DIR/{name}.crt")), PathBuf::from(format!("/CERT_DIR/{name}.key"))),
        };
        TlsTermination { cert_chain, private_key, alpn: alpn.iter().map(|s| s.to_string()).collect() }
    }
}

/// Ports of the representative config.
pub(super) struct Ports {
    pub https: SocketAddr,
    pub http: SocketAddr,
    pub api_backend: SocketAddr,
    pub web_backend: SocketAddr,
    /// Holds the addresses of [`Ports::free`] while the ports are in use.
    _held: Option<HeldAddrs<u8>>,
}

impl Ports {
    pub(super) fn fixed() -> Self {
        Ports {
            https: "127.0.0.1:10443".parse().unwrap(),
            http: "127.0.0.1:10080".parse().unwrap(),
            api_backend: "127.0.0.1:9443".parse().unwrap(),
            web_backend: "127.0.0.1:9080".parse().unwrap(),
            _held: None,
        }
    }

    pub(super) fn free() -> Self {
        let held = HeldAddrs::reserve(0..4u8).unwrap();
        Ports {
            https: held[&0],
            http: held[&1],
            // Nothing listens there in these tests; Envoy does not connect at start.
            api_backend: held[&2],
            web_backend: held[&3],
            _held: Some(held),
        }
    }
}

/// A Cilium-shaped listener exercising every builder feature: unnamed chains, passthrough,
/// termination with ALPN, per-host routes, a raw_buffer chain on a second address that
/// redirects to https, and (optionally) a default chain.
pub(super) fn representative_listener(ports: &Ports, certs: &CertPaths, with_default: bool) -> ListenerSpec {
    let plain = ChainSpec {
        name: None,
        server_names: vec![],
        transport_protocol: Some(TransportProtocol::RawBuffer),
        destination_port: Some(ports.http.port()),
        action: ChainAction::Http {
            route_name: "listener-insecure".into(),
            virtual_hosts: vec![VirtualHostSpec::new(
                "redirect",
                &["*"],
                RouteAction::Redirect { https: true, status: RedirectCode::MovedPermanently },
            )],
        },
        tls: None,
    };
    let mut l = ListenerSpec::new("listener", ports.https)
        .chain(ChainSpec::passthrough(&["api.example.test"], "default:api:443"))
        .chain(ChainSpec::terminate(
            &["*.example.test"],
            certs.tls("gateway-wildcard", &["h2", "http/1.1"]),
            ChainAction::Http {
                route_name: "listener-secure".into(),
                virtual_hosts: vec![
                    VirtualHostSpec::new("www.example.test", &["www.example.test"], RouteAction::Cluster("default:web:80".into())),
                    VirtualHostSpec::new(
                        "wildcard",
                        &["*.example.test", "*"],
                        RouteAction::DirectResponse { status: 200, body: "terminated-by-envoy wildcard\n".into() },
                    ),
                ],
            },
        ))
        .chain(plain);
    l.additional_addresses.push(ports.http);
    if with_default {
        l = l.default_chain(ChainSpec {
            name: Some("default".into()),
            server_names: vec![],
            transport_protocol: None,
            destination_port: None,
            action: ChainAction::Http {
                route_name: "default".into(),
                virtual_hosts: vec![VirtualHostSpec::new(
                    "default",
                    &["*"],
                    RouteAction::DirectResponse { status: 404, body: "default-chain\n".into() },
                )],
            },
            tls: Some(Termination::Files(certs.tls("default-cert", &[]))),
        });
    }
    l
}

pub(super) fn representative_clusters(ports: &Ports) -> Vec<ClusterSpec> {
    vec![
        ClusterSpec::new("default:api:443", vec![ports.api_backend]),
        ClusterSpec::new("default:web:80", vec![ports.web_backend]),
        ClusterSpec { upstream_tls: true, ..ClusterSpec::new("default:secure-web:443", vec![ports.api_backend]) },
    ]
}

/// Two unnamed chains with identical matches: Envoy must refuse the listener.
pub(super) fn duplicate_listener(addr: SocketAddr) -> ListenerSpec {
    ListenerSpec::new("listener", addr)
        .chain(ChainSpec::passthrough(&["api.example.test"], "default:api:443"))
        .chain(ChainSpec::passthrough(&["api.example.test"], "default:api:443"))
}

pub(super) fn write_bootstrap(dir: &Path, bootstrap: &Bootstrap) -> PathBuf {
    let path = dir.join("bootstrap.json");
    bootstrap.write(&path).expect("writing bootstrap");
    path
}
