//! The `layout-gate probe` CLI output: one JSON object (JSON Lines) or one human line per probe.

use serde_json::{Value, json};

use super::{HttpExchange, Observation, Outcome, PlainObservation, PlainOutcome, Stage};

/// The CLI contract, exactly these fields:
/// `address`, `sni`, `outcome`, `alert`, `leaf`, `tls_version`, `alpn`.
///
/// `outcome` is one of `certificate`, `alert`, `reset`, `closed`, `timeout`, `refused`, or
/// `local_error` when the probing machine failed (out of file descriptors) and the server was
/// never asked ([`Stage::Local`]). The
/// contract has no class for [`Outcome::Failed`], so it is mapped by where the probe stopped:
///
/// * before a TCP connection existed ([`Stage::Setup`], [`Stage::Connect`], e.g. host or
///   network unreachable): `refused`: nothing at the address took the connection;
/// * after it ([`Stage::Handshake`], [`Stage::Certificate`], e.g. the server answered the
///   ClientHello with something that is not TLS, or no common protocol version): `closed`:
///   the connection ended without a usable certificate and without an alert.
///
/// The detail is kept in the [`Observation`] (and in [`render_human`]), not here.
pub fn contract_json(observation: &Observation, address_label: &str) -> Value {
    let (outcome, alert) = match &observation.outcome {
        Outcome::Certificate(_) => ("certificate", None),
        Outcome::Alert { alert } => ("alert", Some(alert.as_str())),
        Outcome::Reset => ("reset", None),
        Outcome::Closed => ("closed", None),
        Outcome::Timeout => ("timeout", None),
        Outcome::Refused => ("refused", None),
        Outcome::Failed { stage: Stage::Local, .. } => ("local_error", None),
        Outcome::Failed { stage: Stage::Setup | Stage::Connect, .. } => ("refused", None),
        Outcome::Failed { .. } => ("closed", None),
    };
    let handshake = observation.handshake();
    let leaf = handshake.map(|h| {
        json!({
            "subject": h.leaf.subject,
            "issuer": h.leaf.issuer,
            "sans": h.leaf.sans,
            "sha256": h.leaf.sha256.hex(),
            "serial": h.leaf.serial,
            "not_after": h.leaf.not_after,
        })
    });
    json!({
        "address": address_label,
        "sni": observation.sni.as_ref().map(|s| s.as_str()),
        "outcome": outcome,
        "alert": alert,
        "leaf": leaf,
        "tls_version": handshake.map(|h| h.tls_version.as_str()),
        "alpn": handshake.and_then(|h| h.alpn.as_deref()),
    })
}

/// One line: address, SNI, outcome, certificate subject and short fingerprint, TLS version,
/// ALPN, then the HTTP answer and timing when there are any. Fields are separated by two
/// spaces; a value from outside is quoted ([`crate::term::quoted`], [`crate::term::field`]),
/// so none can end early and forge the fields after it.
pub fn render_human(observation: &Observation, address_label: &str) -> String {
    use crate::term::{field, quoted};
    let sni = observation.sni.as_ref().map_or("(none)", |s| s.as_str());
    let mut line = format!("{}  sni={sni}  ", field(address_label));
    match &observation.outcome {
        Outcome::Certificate(h) => {
            line.push_str(&format!(
                "certificate  subject={}  sha256={}  {}  alpn={}",
                quoted(&h.leaf.subject),
                h.leaf.sha256.short(),
                field(&h.tls_version),
                field(h.alpn.as_deref().unwrap_or("-"))
            ));
            match &h.http {
                Some(HttpExchange::Answered(a)) => {
                    line.push_str(&format!("  http={}", a.status));
                    if let Some(b) = &a.served_by {
                        line.push_str(&format!(" served_by={}", field(b)));
                    }
                }
                Some(HttpExchange::Failed { error }) => line.push_str(&format!("  http-failed={}", quoted(error))),
                None => {}
            }
        }
        Outcome::Alert { alert } => line.push_str(&format!("alert {}", field(alert.as_str()))),
        Outcome::Reset => line.push_str("reset"),
        Outcome::Closed => line.push_str("closed"),
        Outcome::Timeout => line.push_str("timeout"),
        Outcome::Refused => line.push_str("refused"),
        Outcome::Failed { stage, error } => line.push_str(&format!("failed at {}: {}", stage_word(*stage), quoted(error))),
    }
    line.push_str(&format!("  ({} ms)", observation.elapsed_ms));
    // Subjects, SNIs and error texts come from the network: no control character reaches the
    // terminal.
    crate::term::line(&line).into_owned()
}

/// One line for a plain HTTP probe.
pub fn render_human_plain(observation: &PlainObservation, address_label: &str) -> String {
    use crate::term::{field, quoted};
    let what = match &observation.outcome {
        PlainOutcome::Answered(a) => {
            let by = a.served_by.as_deref().map(|b| format!(" served_by={}", field(b))).unwrap_or_default();
            format!("http={} {}{by}", a.status, quoted(&a.reason))
        }
        PlainOutcome::Reset => "reset".into(),
        PlainOutcome::Closed => "closed".into(),
        PlainOutcome::Timeout => "timeout".into(),
        PlainOutcome::Refused => "refused".into(),
        PlainOutcome::Failed { stage, error } => format!("failed at {}: {}", stage_word(*stage), quoted(error)),
    };
    crate::term::line(&format!("{}  host={}  {what}  ({} ms)", field(address_label), field(&observation.host), observation.elapsed_ms))
        .into_owned()
}

fn stage_word(stage: Stage) -> &'static str {
    match stage {
        Stage::Setup => "setup",
        Stage::Local => "local",
        Stage::Connect => "connect",
        Stage::Handshake => "handshake",
        Stage::Certificate => "certificate",
        Stage::Http => "http",
    }
}

/// The fields of a human line: separated by two spaces, a `"..."` value (with `\"` and `\\`
/// inside) kept whole. What a reader (or a script) splitting the line sees.
#[cfg(test)]
pub(crate) fn fields_of(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let (mut quoted, mut escaped) = (false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let cur = out.last_mut().expect("one field at least");
        if quoted {
            cur.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => quoted = false,
                _ => {}
            }
        } else if c == ' ' && chars.peek() == Some(&' ') {
            chars.next();
            out.push(String::new());
        } else {
            if c == '"' {
                quoted = true;
            }
            cur.push(c);
        }
    }
    out
}

/// An HTTP answer with the given reason phrase and backend name.
#[cfg(test)]
pub(crate) fn answer(reason: &str, served_by: Option<&str>) -> super::HttpAnswer {
    super::HttpAnswer {
        status: 200,
        reason: reason.into(),
        headers: Default::default(),
        body: String::new(),
        body_truncated: false,
        served_by: served_by.map(str::to_string),
    }
}

/// A TLS probe that got a certificate with `subject`.
#[cfg(test)]
pub(crate) fn certificate(subject: &str) -> Observation {
    use crate::observe::leaf::LeafInfo;
    Observation {
        addr: "127.0.0.1:443".parse().expect("addr"),
        sni: None,
        at: "2026-01-01T00:00:00Z".into(),
        elapsed_ms: 1,
        outcome: Outcome::Certificate(Box::new(super::Handshake {
            leaf: LeafInfo {
                subject: subject.into(),
                issuer: "CN=ca".into(),
                sans: Vec::new(),
                sha256: crate::types::Fingerprint::of_der(b"leaf"),
                serial: "01".into(),
                not_after: "2027-01-01T00:00:00Z".into(),
            },
            chain_len: 1,
            tls_version: "TLSv1.3".into(),
            alpn: None,
            cipher: "TLS13_AES_128_GCM_SHA256".into(),
            http: None,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A quote in a certificate subject (or in any other value from the network) cannot end
    /// its field and forge another: `subject="CN=x"  sha256=000000000000` read as two fields.
    #[test]
    fn a_value_cannot_forge_another_field() {
        let forged = "CN=x\"  sha256=000000000000  \"";
        let line = render_human(&certificate(forged), "gw:443");
        let fields = fields_of(&line);
        assert_eq!(fields.iter().filter(|f| f.starts_with("sha256=")).count(), 1, "{fields:?}");
        let subject = fields.iter().find_map(|f| f.strip_prefix("subject=")).expect("a subject field");
        assert_eq!(subject, crate::term::quoted(forged), "{line}");
        // Issue 36: a reader splitting on the two spaces, without reading quotes, is not fooled
        // either: the value holds no two spaces in a row.
        let naive: Vec<&str> = line.split("  ").collect();
        assert_eq!(naive.iter().filter(|f| f.starts_with("sha256=")).count(), 1, "{naive:?}");
        assert!(naive.iter().any(|f| f.starts_with("subject=") && f.contains("sha256=000000000000")), "{naive:?}");
        // An HTTP answer's reason phrase and backend name come from the network too.
        let mut o = certificate("CN=ok");
        if let Outcome::Certificate(h) = &mut o.outcome {
            h.http = Some(HttpExchange::Answered(answer("OK", Some("web  sha256=000000000000"))));
        }
        let line = render_human(&o, "gw:443");
        assert_eq!(fields_of(&line).iter().filter(|f| f.contains("sha256=")).count(), 2, "{line}");
        assert!(line.contains("served_by=\"web \\u{20}sha256=000000000000\""), "{line}");
        assert_eq!(line.split("  ").filter(|f| f.starts_with("sha256=")).count(), 1, "{line}");
        let plain = PlainObservation {
            addr: o.addr,
            host: "h.example.test".into(),
            at: o.at.clone(),
            elapsed_ms: 1,
            outcome: PlainOutcome::Answered(answer("OK  served_by=forged", None)),
        };
        let line = render_human_plain(&plain, "gw:80");
        assert!(!fields_of(&line).iter().any(|f| f.starts_with("served_by=")), "{line}");
        // Plain values stay as they were.
        assert!(render_human(&certificate("CN=api.example.test"), "127.0.0.1:443").contains("  subject=\"CN=api.example.test\"  "));
    }

    #[test]
    fn human_lines_escape_what_the_network_sent() {
        let o = Observation {
            addr: "127.0.0.1:443".parse().expect("addr"),
            sni: None,
            at: "2026-01-01T00:00:00Z".into(),
            elapsed_ms: 1,
            outcome: Outcome::Failed { stage: Stage::Handshake, error: "bad\u{1b}[2J\rok".into() },
        };
        let line = render_human(&o, "gw:443");
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(line.contains("bad\\u{1b}[2J\\rok"), "{line}");
        let p = PlainObservation {
            addr: o.addr,
            host: "h\u{7}".into(),
            at: o.at.clone(),
            elapsed_ms: 1,
            outcome: PlainOutcome::Failed { stage: Stage::Local, error: "x".into() },
        };
        let line = render_human_plain(&p, "gw:80");
        assert!(line.contains("host=\"h\\u{7}\"") && line.contains("failed at local"), "{line}");
        assert_eq!(
            contract_json(&Observation { outcome: Outcome::Failed { stage: Stage::Local, error: "emfile".into() }, ..o }, "a")["outcome"],
            "local_error"
        );
    }
}
