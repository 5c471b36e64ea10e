//! Small value types shared by every stage, so that a port is never confused with a count,
//! nor a certificate name with a hostname. Each one validates on construction; once built it
//! is known good.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The TLS alert registry (RFC 8446 §6, IANA "TLS Alerts"): code and name as `openssl
/// s_client` prints them. Probes report alerts by these names; cases may expect only these.
pub const TLS_ALERTS: &[(u8, &str)] = &[
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

/// `bytes` as lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of `bytes`, as lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

/// Why a value was refused. Callers attach file, line and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidValue(pub String);

/// A TCP port in 1..=65535. Port 0 is not a Gateway port and is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Port(u16);

impl Port {
    pub fn new(n: u64) -> Result<Self, InvalidValue> {
        match u16::try_from(n) {
            Ok(p) if p != 0 => Ok(Port(p)),
            _ => Err(InvalidValue(format!("port {n} is outside 1-65535"))),
        }
    }
    pub fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for Port {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(self.0)
    }
}

impl<'de> Deserialize<'de> for Port {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        if n < 0 {
            return Err(serde::de::Error::custom(format!("port {n} is outside 1-65535")));
        }
        Port::new(n as u64).map_err(serde::de::Error::custom)
    }
}

/// Whether `s` can name a Kubernetes object: a DNS-1123 subdomain (at most 253 lower-case
/// letters, digits, `-` and `.`, starting and ending with a letter or digit), what the API
/// server requires of a Gateway's, a route's or a Secret's name (apimachinery's
/// `IsDNS1123Subdomain`, kubernetes@v1.33.0:staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go).
/// Namespaces and Services are stricter; no object the cluster holds is looser.
pub fn check_object_name(s: &str) -> Result<(), InvalidValue> {
    let edge = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let ok = s.len() <= 253
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && edge(s.as_bytes().first())
        && edge(s.as_bytes().last());
    if ok {
        Ok(())
    } else {
        Err(InvalidValue(format!(
            "{s:?} is not a valid Kubernetes object name: at most 253 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
        )))
    }
}

/// Checks one DNS name as a TLS client may send it in SNI, or as a certificate SAN may carry
/// it: LDH labels, an optional leading `*` label when `allow_wildcard`.
fn check_dns_name(s: &str, allow_wildcard: bool) -> Result<(), InvalidValue> {
    if s.is_empty() {
        return Err(InvalidValue("empty DNS name".into()));
    }
    if s.len() > 253 {
        return Err(InvalidValue(format!("DNS name {s:?} is longer than 253 characters")));
    }
    for (i, label) in s.split('.').enumerate() {
        if label == "*" && i == 0 && allow_wildcard {
            continue;
        }
        let ok = !label.is_empty()
            && label.len() <= 63
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            let what =
                if label == "*" { "a wildcard may only be the first label" } else { "labels are 1-63 letters, digits or inner hyphens" };
            return Err(InvalidValue(format!("{s:?} is not a valid DNS name: {what}")));
        }
    }
    if s.parse::<std::net::IpAddr>().is_ok() {
        return Err(InvalidValue(format!("{s:?} is an IP address, not a DNS name")));
    }
    Ok(())
}

macro_rules! string_newtype {
    ($(#[$doc:meta])* $name:ident, $check:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            pub fn new(s: impl Into<String>) -> Result<Self, InvalidValue> {
                let s = s.into();
                let check: fn(&str) -> Result<(), InvalidValue> = $check;
                check(&s)?;
                Ok(Self(s))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = InvalidValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::new(s)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::new(s).map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Lower-case identifier as used for case-local names: certificates, backends.
fn check_ident(s: &str) -> Result<(), InvalidValue> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.as_bytes()[0].is_ascii_lowercase()
        && !s.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(InvalidValue(format!(
            "{s:?} is not a valid name: use 1-63 lower-case letters, digits and inner hyphens, starting with a letter"
        )))
    }
}

string_newtype!(
    /// An SNI a probe sends: an exact DNS name (a client never sends a wildcard). Upper case is
    /// folded because SNI matching is case-insensitive.
    Sni,
    |s| {
        check_dns_name(s, false)?;
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(InvalidValue(format!("SNI {s:?} must be lower case")));
        }
        Ok(())
    }
);

string_newtype!(
    /// A DNS name a certificate covers, possibly a wildcard (`*.example.test`).
    DnsName,
    |s| check_dns_name(s, true)
);

string_newtype!(
    /// The case-local name of a generated certificate, e.g. `gateway-wildcard`. Results are
    /// reported in these names, never as bare fingerprints.
    CertName,
    check_ident
);

string_newtype!(
    /// The case-local name of a backend (a TLS or plain HTTP server that names itself).
    BackendName,
    check_ident
);

/// A SHA-256 certificate fingerprint, printed as lowercase hex without separators.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    pub fn of_der(der: &[u8]) -> Self {
        use sha2::Digest;
        Fingerprint(sha2::Sha256::digest(der).into())
    }
    pub fn hex(&self) -> String {
        hex(&self.0)
    }
    /// The first 12 hex digits, enough to tell certificates of one run apart in a message.
    pub fn short(&self) -> String {
        self.hex()[..12].to_string()
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({})", self.hex())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

impl FromStr for Fingerprint {
    type Err = InvalidValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let clean: String = s.chars().filter(|c| *c != ':').collect::<String>().to_ascii_lowercase();
        if clean.len() != 64 || !clean.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(InvalidValue(format!("{s:?} is not a SHA-256 fingerprint (64 hex digits)")));
        }
        let mut out = [0u8; 32];
        for (i, chunk) in clean.as_bytes().chunks(2).enumerate() {
            out[i] = u8::from_str_radix(std::str::from_utf8(chunk).expect("ascii"), 16).expect("hex checked");
        }
        Ok(Fingerprint(out))
    }
}

impl Serialize for Fingerprint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The upstream HTTP protocol of a cluster, as Envoy holds it: the one value of
/// `HttpProtocolOptions.upstream_protocol_options`, or none at all. Closed: an options message
/// Envoy accepted has exactly one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamProtocol {
    /// No `HttpProtocolOptions` upstream protocol: Envoy's default, HTTP/1.1.
    None,
    /// `use_downstream_protocol_config` with `http2_protocol_options`: the downstream's protocol,
    /// HTTP/2 included.
    Downstream,
    /// `use_downstream_protocol_config` without `http2_protocol_options`.
    DownstreamHttp1,
    /// `explicit_http_config.http_protocol_options`.
    Http1,
    /// `explicit_http_config.http2_protocol_options`.
    Http2,
    /// `explicit_http_config.http3_protocol_options`.
    Http3,
    /// `auto_config`: ALPN decides.
    Auto,
}

impl UpstreamProtocol {
    pub const ALL: [UpstreamProtocol; 7] = [
        UpstreamProtocol::None,
        UpstreamProtocol::Downstream,
        UpstreamProtocol::DownstreamHttp1,
        UpstreamProtocol::Http1,
        UpstreamProtocol::Http2,
        UpstreamProtocol::Http3,
        UpstreamProtocol::Auto,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamProtocol::None => "none",
            UpstreamProtocol::Downstream => "downstream",
            UpstreamProtocol::DownstreamHttp1 => "downstream-http1",
            UpstreamProtocol::Http1 => "http1",
            UpstreamProtocol::Http2 => "http2",
            UpstreamProtocol::Http3 => "http3",
            UpstreamProtocol::Auto => "auto",
        }
    }

    /// The value as a case writes it (`downstream`, `http1`, ...).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// Every value, comma-separated, for messages.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

impl std::fmt::Display for UpstreamProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_bounds() {
        assert!(Port::new(0).is_err());
        assert!(Port::new(65536).is_err());
        assert_eq!(Port::new(443).unwrap().get(), 443);
        assert!(serde_json::from_str::<Port>("-1").is_err());
        assert!(serde_json::from_str::<Port>("70000").is_err());
    }

    #[test]
    fn sni_refuses_wildcards_ips_and_upper_case() {
        assert!(Sni::new("api.example.test").is_ok());
        assert!(Sni::new("*.example.test").is_err());
        assert!(Sni::new("10.0.0.1").is_err());
        assert!(Sni::new("API.example.test").is_err());
        assert!(Sni::new("a..b").is_err());
        assert!(Sni::new("-a.b").is_err());
    }

    #[test]
    fn dns_name_allows_leading_wildcard_only() {
        assert!(DnsName::new("*.example.test").is_ok());
        assert!(DnsName::new("a.*.example.test").is_err());
    }

    #[test]
    fn cert_names_are_identifiers() {
        assert!(check_object_name("gw.v2-1").is_ok() && check_object_name("1gw").is_ok());
        for bad in ["", "Gw", "gw-", ".gw", "gw\u{1b}]0;x\u{7}", "g w", &"a".repeat(254)] {
            let e = check_object_name(bad).unwrap_err().0;
            assert!(e.contains("is not a valid Kubernetes object name") && !e.contains('\u{1b}'), "{e}");
        }
        assert!(CertName::new("gateway-wildcard").is_ok());
        assert!(CertName::new("Gateway").is_err());
        assert!(CertName::new("1x").is_err());
        assert!(CertName::new("x-").is_err());
    }

    #[test]
    fn fingerprint_round_trips() {
        let f = Fingerprint::of_der(b"abc");
        assert_eq!(f.hex().len(), 64);
        assert_eq!(f.hex().parse::<Fingerprint>().unwrap(), f);
        let colons: String =
            f.hex().as_bytes().chunks(2).map(|c| std::str::from_utf8(c).unwrap().to_uppercase()).collect::<Vec<_>>().join(":");
        assert_eq!(colons.parse::<Fingerprint>().unwrap(), f);
    }
}
