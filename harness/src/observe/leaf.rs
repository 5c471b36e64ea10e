//! What a presented certificate says about itself, decoded once so every stage (probe output,
//! evidence, the certificate catalogue) prints it the same way.

use serde::{Deserialize, Serialize};
use x509_parser::prelude::*;

use crate::types::Fingerprint;

/// The facts of one X.509 certificate that a reader of evidence needs to recognise it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeafInfo {
    /// RFC 4514-style subject, e.g. `CN=*.example.test, O=layout-gate, OU=gateway-wildcard`.
    pub subject: String,
    pub issuer: String,
    /// DNS subject alternative names, in certificate order. IP SANs are written as `IP:addr`.
    pub sans: Vec<String>,
    pub sha256: Fingerprint,
    /// Serial number as lowercase hex without separators.
    pub serial: String,
    /// Expiry in RFC 3339 (UTC).
    pub not_after: String,
}

/// Decodes a DER certificate. The error is a sentence fit for evidence, not a panic: a server
/// may present anything.
pub fn describe(der: &[u8]) -> Result<LeafInfo, String> {
    let (_, cert) = X509Certificate::from_der(der).map_err(|e| format!("certificate is not valid DER X.509: {e}"))?;
    let mut sans = Vec::new();
    if let Ok(Some(ext)) = cert.subject_alternative_name() {
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(d) => sans.push((*d).to_string()),
                GeneralName::IPAddress(ip) => sans.push(format!("IP:{}", format_ip(ip))),
                _ => {}
            }
        }
    }
    let not_after = cert
        .validity()
        .not_after
        .to_datetime()
        .format(&::time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| cert.validity().not_after.to_string());
    Ok(LeafInfo {
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        sans,
        sha256: Fingerprint::of_der(der),
        serial: cert.raw_serial().iter().map(|b| format!("{b:02x}")).collect(),
        not_after,
    })
}

fn format_ip(bytes: &[u8]) -> String {
    match bytes.len() {
        4 => std::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).to_string(),
        16 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(bytes);
            std::net::Ipv6Addr::from(a).to_string()
        }
        _ => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}
