//! Turning the ways a connection ends into outcome classes.

use std::io;

use rustls::AlertDescription;

use super::Stage;

/// A connection that ended without a completed exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    Alert(String),
    Reset,
    Closed,
    Timeout,
    Refused,
    Other { stage: Stage, error: String },
}

impl Failure {
    /// A sentence for places that keep only text (the HTTP part of a TLS probe).
    pub(crate) fn describe(&self) -> String {
        match self {
            Failure::Alert(a) => format!("TLS alert {a}"),
            Failure::Reset => "connection reset by peer".into(),
            Failure::Closed => "connection closed by peer".into(),
            Failure::Timeout => "timed out".into(),
            Failure::Refused => "connection refused".into(),
            Failure::Other { error, .. } => error.clone(),
        }
    }
}

/// Classifies an I/O error from connect, handshake or exchange. tokio-rustls hands TLS errors
/// over as `io::Error`s wrapping a `rustls::Error`; a received fatal alert is the one that
/// carries an answer from the server.
pub(crate) fn classify_io(e: &io::Error, stage: Stage) -> Failure {
    if let Some(tls) = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        return match tls {
            rustls::Error::AlertReceived(desc) => Failure::Alert(alert_name(*desc)),
            other => Failure::Other { stage, error: format!("TLS: {other}") },
        };
    }
    if let Some(local) = local_resource_error(e) {
        return Failure::Other { stage: Stage::Local, error: local };
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Failure::Refused,
        // A write to a peer that already tore the connection down fails with EPIPE; either way
        // the peer ended it abruptly.
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted | io::ErrorKind::BrokenPipe => Failure::Reset,
        io::ErrorKind::UnexpectedEof => Failure::Closed,
        io::ErrorKind::TimedOut => Failure::Timeout,
        _ => Failure::Other { stage, error: e.to_string() },
    }
}

/// Errors that come from this machine running out of something, not from the peer. Before this
/// check, `EMFILE` at connect was read as "nothing accepted the connection".
fn local_resource_error(e: &io::Error) -> Option<String> {
    let what = match e.raw_os_error()? {
        libc::EMFILE => "this process has no file descriptor left (raise `ulimit -n`)",
        libc::ENFILE => "the system has no file descriptor left",
        libc::ENOBUFS => "the system has no socket buffer space left",
        libc::ENOMEM => "the system is out of memory",
        _ => return None,
    };
    Some(format!("local error, not the server's answer: {what}: {e}"))
}

/// The RFC 8446 / IANA name of an alert (`unrecognized_name`, not rustls's `UnrecognisedName`),
/// so evidence reads like `openssl s_client` output and the TLS registry.
pub(crate) fn alert_name(desc: AlertDescription) -> String {
    let code = u8::from(desc);
    match crate::types::TLS_ALERTS.iter().find(|(c, _)| *c == code) {
        Some((_, name)) => name.to_string(),
        None => format!("unknown_alert_{code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_use_registry_names() {
        assert_eq!(alert_name(AlertDescription::UnrecognisedName), "unrecognized_name");
        assert_eq!(alert_name(AlertDescription::HandshakeFailure), "handshake_failure");
        assert_eq!(alert_name(AlertDescription::from(200)), "unknown_alert_200");
    }

    #[test]
    fn io_kinds_map_to_classes() {
        let k = |kind| classify_io(&io::Error::from(kind), Stage::Handshake);
        assert_eq!(k(io::ErrorKind::ConnectionRefused), Failure::Refused);
        assert_eq!(k(io::ErrorKind::ConnectionReset), Failure::Reset);
        assert_eq!(k(io::ErrorKind::UnexpectedEof), Failure::Closed);
        assert_eq!(k(io::ErrorKind::ConnectionAborted), Failure::Reset);
        assert_eq!(k(io::ErrorKind::BrokenPipe), Failure::Reset);
        // A timeout reported by the OS is a timeout, never a refusal or a close.
        assert_eq!(k(io::ErrorKind::TimedOut), Failure::Timeout);
        assert!(matches!(k(io::ErrorKind::PermissionDenied), Failure::Other { stage: Stage::Handshake, .. }));
        let alert = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::AlertReceived(AlertDescription::AccessDenied));
        assert_eq!(classify_io(&alert, Stage::Handshake), Failure::Alert("access_denied".into()));
        // Every other alert keeps its own name: an unrecognized_name is not an access_denied.
        let alert = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::AlertReceived(AlertDescription::UnrecognisedName));
        assert_eq!(classify_io(&alert, Stage::Handshake), Failure::Alert("unrecognized_name".into()));
        // A TLS error that is not an alert is no answer of the server's.
        let other = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError);
        assert!(matches!(classify_io(&other, Stage::Handshake), Failure::Other { stage: Stage::Handshake, .. }));
    }

    #[test]
    fn running_out_of_descriptors_is_local_never_refused() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            let f = classify_io(&io::Error::from_raw_os_error(errno), Stage::Connect);
            match f {
                Failure::Other { stage: Stage::Local, error } => {
                    assert!(error.starts_with("local error, not the server's answer"), "{error}")
                }
                other => panic!("errno {errno}: {other:?}"),
            }
        }
        // The OS's own refusal stays a refusal.
        assert_eq!(classify_io(&io::Error::from_raw_os_error(libc::ECONNREFUSED), Stage::Connect), Failure::Refused);
    }

    /// The TLS alert registry (RFC 8446 §6 and IANA "TLS Alerts"), written out independently of
    /// `alert_name`: every code maps to its registered name, and unassigned codes say so.
    #[test]
    fn every_registered_alert_has_its_registry_name() {
        let registry: &[(u8, &str)] = &[
            (0, "close_notify"),
            (10, "unexpected_message"),
            (20, "bad_record_mac"),
            (21, "decryption_failed"),
            (22, "record_overflow"),
            (30, "decompression_failure"),
            (40, "handshake_failure"),
            (41, "no_certificate"),
            (42, "bad_certificate"),
            (43, "unsupported_certificate"),
            (44, "certificate_revoked"),
            (45, "certificate_expired"),
            (46, "certificate_unknown"),
            (47, "illegal_parameter"),
            (48, "unknown_ca"),
            (49, "access_denied"),
            (50, "decode_error"),
            (51, "decrypt_error"),
            (60, "export_restriction"),
            (70, "protocol_version"),
            (71, "insufficient_security"),
            (80, "internal_error"),
            (86, "inappropriate_fallback"),
            (90, "user_canceled"),
            (100, "no_renegotiation"),
            (109, "missing_extension"),
            (110, "unsupported_extension"),
            (111, "certificate_unobtainable"),
            (112, "unrecognized_name"),
            (113, "bad_certificate_status_response"),
            (114, "bad_certificate_hash_value"),
            (115, "unknown_psk_identity"),
            (116, "certificate_required"),
            (120, "no_application_protocol"),
            (121, "ech_required"),
        ];
        for code in 0..=u8::MAX {
            let want =
                registry.iter().find(|(c, _)| *c == code).map(|(_, n)| n.to_string()).unwrap_or_else(|| format!("unknown_alert_{code}"));
            assert_eq!(alert_name(AlertDescription::from(code)), want, "alert {code}");
        }
    }
}
