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

/// The RFC 8446 / IANA name of an alert (`unrecognized_name`, not rustls's `UnrecognisedName`),
/// so evidence reads like `openssl s_client` output and the TLS registry.
pub(crate) fn alert_name(desc: AlertDescription) -> String {
    let code = u8::from(desc);
    let name = match code {
        0 => "close_notify",
        10 => "unexpected_message",
        20 => "bad_record_mac",
        21 => "decryption_failed",
        22 => "record_overflow",
        30 => "decompression_failure",
        40 => "handshake_failure",
        41 => "no_certificate",
        42 => "bad_certificate",
        43 => "unsupported_certificate",
        44 => "certificate_revoked",
        45 => "certificate_expired",
        46 => "certificate_unknown",
        47 => "illegal_parameter",
        48 => "unknown_ca",
        49 => "access_denied",
        50 => "decode_error",
        51 => "decrypt_error",
        60 => "export_restriction",
        70 => "protocol_version",
        71 => "insufficient_security",
        80 => "internal_error",
        86 => "inappropriate_fallback",
        90 => "user_canceled",
        100 => "no_renegotiation",
        109 => "missing_extension",
        110 => "unsupported_extension",
        111 => "certificate_unobtainable",
        112 => "unrecognized_name",
        113 => "bad_certificate_status_response",
        114 => "bad_certificate_hash_value",
        115 => "unknown_psk_identity",
        116 => "certificate_required",
        120 => "no_application_protocol",
        121 => "ech_required",
        _ => return format!("unknown_alert_{code}"),
    };
    name.to_string()
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
        assert!(matches!(k(io::ErrorKind::PermissionDenied), Failure::Other { stage: Stage::Handshake, .. }));
        let alert = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::AlertReceived(AlertDescription::AccessDenied));
        assert_eq!(classify_io(&alert, Stage::Handshake), Failure::Alert("access_denied".into()));
    }
}
