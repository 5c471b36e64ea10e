//! Today, probed: each live Gateway address asked what the prediction at the running version
//! answers, with the tool's own probe ([`crate::observe::probe`]): a real TLS handshake with
//! each SNI on each listener port, a plain HTTP request on each HTTP port. What answered is
//! named by the certificate the cluster holds (a referenced Secret's `tls.crt`, by its
//! fingerprint), so a prediction "Secret wild-tls answers" is checked against the certificate
//! really served.

use std::net::{IpAddr, SocketAddr};

use super::drift::Disagreement;
use super::fetch::{LiveCert, LiveGateway};
use crate::check::answer::Reply;
use crate::check::derive::MatrixKey;
use crate::check::{GatewayCheck, VersionResult};
use crate::evidence::Lane;
use crate::observe::probe::{self, Outcome, PlainOutcome, ProbeOptions, ProbeSpec};
use crate::types::Fingerprint;

/// The fingerprint of a PEM certificate's first block.
pub fn fingerprint(pem: &str) -> Option<Fingerprint> {
    let (_, p) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
    crate::observe::leaf::describe(&p.contents).ok().map(|l| l.sha256)
}

/// How the output names a Secret of the Gateway `ns`: `Secret NAME`, or `Secret NS/NAME` in
/// another namespace (as `check` names it).
fn secret_label(gw_ns: &str, c: &LiveCert) -> String {
    if c.namespace == gw_ns { format!("Secret {}", c.name) } else { format!("Secret {}/{}", c.namespace, c.name) }
}

/// What the prediction says of `key`, in the words compared with the cluster's.
fn predicted_words(check: &GatewayCheck, reply: &Reply) -> Option<String> {
    match reply {
        Reply::Certificate { cert } => Some(format!("a certificate: {}", check.label(cert))),
        Reply::Nothing { .. } => Some("nothing".into()),
        Reply::Http { status, .. } => Some(format!("HTTP {status}")),
        Reply::Unknown { .. } | Reply::LocalError => None,
    }
}

/// Whether `observed` is what `predicted` says: a Secret's certificate is compared by name; a
/// backend's (passthrough) certificate, which the cluster does not hand out, only as "a
/// certificate".
fn agrees(predicted: &str, observed: &str) -> bool {
    if predicted == observed {
        return true;
    }
    match (predicted.strip_prefix("a certificate: "), observed.strip_prefix("a certificate: ")) {
        (Some(p), Some(_)) => !p.starts_with("Secret "),
        _ => false,
    }
}

fn nothing(how: &str) -> String {
    format!("nothing ({how})")
}

/// One probe of `key` at `ip`, said in the words of [`predicted_words`].
async fn observe(ip: IpAddr, key: &MatrixKey, gw_ns: &str, certs: &[(Fingerprint, String)], options: &ProbeOptions) -> String {
    let addr = SocketAddr::new(ip, key.port.get());
    if key.plain {
        let Ok(mut req) = probe::HttpRequestSpec::get("/") else { return nothing("no request") };
        if let Some(h) = &key.sni {
            req = match req.with_host(h.as_str()) {
                Ok(r) => r,
                Err(_) => return nothing("no request"),
            };
        }
        return match probe::probe_plain_http(addr, &req, options).await.outcome {
            PlainOutcome::Answered(a) => format!("HTTP {}", a.status),
            PlainOutcome::Reset => nothing("reset"),
            PlainOutcome::Closed => nothing("closed"),
            PlainOutcome::Timeout => nothing("no answer in time"),
            PlainOutcome::Refused => nothing("connection refused"),
            PlainOutcome::Failed { error, .. } => nothing(&error),
        };
    }
    let _ = gw_ns;
    let spec = ProbeSpec { addr, sni: key.sni.clone(), http: None };
    match probe::probe_tls(&spec, options).await.outcome {
        Outcome::Certificate(h) => match certs.iter().find(|(fp, _)| *fp == h.leaf.sha256) {
            Some((_, label)) => format!("a certificate: {label}"),
            None => format!("a certificate: not a referenced Secret's ({})", h.leaf.subject),
        },
        Outcome::Alert { alert } => nothing(&format!("alert {alert}")),
        Outcome::Reset => nothing("reset"),
        Outcome::Closed => nothing("closed"),
        Outcome::Timeout => nothing("no answer in time"),
        Outcome::Refused => nothing("connection refused"),
        Outcome::Failed { error, .. } => nothing(&error),
    }
}

/// Probes every address of `live` with every key of the prediction at the running version
/// `r`; each answer that is not the predicted one is a [`Disagreement`]. An answer "nothing"
/// matches a predicted "nothing" however it ended (a reset, an alert), as `check` compares.
pub async fn probe_gateway(
    check: &GatewayCheck,
    r: &VersionResult,
    live: &LiveGateway,
    certs: &[LiveCert],
    options: &ProbeOptions,
) -> (Vec<Disagreement>, Vec<String>) {
    let gw = format!("{}/{}", live.namespace, live.name);
    let known: Vec<(Fingerprint, String)> =
        certs.iter().filter_map(|c| Some((fingerprint(c.pem.as_deref()?)?, secret_label(&live.namespace, c)))).collect();
    let by = if r.answered_by == Lane::Operator { "operator" } else { "model" };
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let addresses = live.addresses();
    if addresses.is_empty() {
        notes.push(format!("Gateway {gw} has no address in its status: not probed"));
    }
    for a in addresses {
        let Ok(ip) = a.parse::<IpAddr>() else {
            notes.push(format!("Gateway {gw} address {a} is not an IP address: not probed"));
            continue;
        };
        let mut here = Vec::new();
        let mut asked = 0;
        let mut silent = 0;
        for (key, reply) in &r.answers {
            let Some(want) = predicted_words(check, reply) else { continue };
            let got = observe(ip, key, &live.namespace, &known, options).await;
            asked += 1;
            if got == NO_ANSWER {
                silent += 1;
            }
            let same = agrees(&want, &got) || (want == "nothing" && got.starts_with("nothing"));
            if !same {
                here.push(Disagreement {
                    gateway: gw.clone(),
                    field: format!("answer at {a} {key}"),
                    predicted_by: by.into(),
                    predicted: want,
                    cluster: got,
                });
            }
        }
        out.extend(if here.is_empty() { here } else { unreachable(&gw, &a, by, asked, silent, options).unwrap_or(here) });
    }
    (out, notes)
}

/// What a probe says when nothing came back within its budget.
const NO_ANSWER: &str = "nothing (no answer in time)";

/// An address where no probe got any answer in time (and some answer was predicted, so the
/// caller has disagreements for it): one disagreement
/// saying the address does not answer from here, instead of one per name and port (a Gateway
/// address this machine cannot reach, behind a firewall or in a network it is not on).
fn unreachable(gw: &str, a: &str, by: &str, asked: usize, silent: usize, options: &ProbeOptions) -> Option<Vec<Disagreement>> {
    if asked == 0 || silent < asked {
        return None;
    }
    Some(vec![Disagreement {
        gateway: gw.to_string(),
        field: format!("address {a}"),
        predicted_by: by.to_string(),
        predicted: format!("answers to {asked} probe(s)"),
        cluster: format!(
            "no answer to any of them within {} s each: the address is not reachable from here (--no-probe skips probing)",
            options.timeout.as_secs_f64()
        ),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_certificate_is_compared_as_a_certificate_and_a_secret_by_name() {
        assert!(agrees("a certificate: backend api", "a certificate: not a referenced Secret's (CN=api)"));
        assert!(!agrees("a certificate: Secret wild", "a certificate: Secret other"));
        assert!(agrees("a certificate: Secret wild", "a certificate: Secret wild"));
        assert!(!agrees("HTTP 200", "HTTP 404"));
        assert!(!agrees("a certificate: Secret wild", "nothing (connection refused)"));
    }

    #[test]
    fn a_pem_certificate_has_the_fingerprint_the_probe_reports() {
        let ck = rcgen::generate_simple_self_signed(vec!["a.example".to_string()]).unwrap();
        let fp = fingerprint(&ck.cert.pem()).unwrap();
        assert_eq!(fp, crate::observe::leaf::describe(ck.cert.der()).unwrap().sha256);
        assert_eq!(fingerprint("not a certificate"), None);
    }

    #[test]
    fn an_address_that_never_answers_is_one_disagreement() {
        let o = ProbeOptions::default();
        assert_eq!(unreachable("ns/gw", "10.0.0.1", "model", 3, 2, &o), None);
        assert_eq!(unreachable("ns/gw", "10.0.0.1", "model", 0, 0, &o), None);
        let d = unreachable("ns/gw", "10.0.0.1", "model", 3, 3, &o).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].to_string(),
            "the model and your cluster disagree: Gateway ns/gw address 10.0.0.1: the model says answers to 3 probe(s), your cluster says no answer to any of them within 3 s each: the address is not reachable from here (--no-probe skips probing)"
        );
    }

    /// An address nothing listens on: every predicted certificate is a disagreement saying the
    /// connection was refused.
    #[tokio::test]
    async fn an_unreachable_address_is_said_per_key() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let key = MatrixKey {
            port: crate::types::Port::new(port.into()).unwrap(),
            sni: Some(crate::types::Sni::new("a.example").unwrap()),
            plain: false,
        };
        let got = observe("127.0.0.1".parse().unwrap(), &key, "ns", &[], &ProbeOptions::default()).await;
        assert_eq!(got, "nothing (connection refused)");
        assert!(!agrees("a certificate: Secret wild", &got));
    }
}
