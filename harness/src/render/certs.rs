//! The run's certificates: one CA and one leaf per name a case declares, made fresh each run.
//!
//! Private keys exist in memory and in files inside a private temporary directory (0700, keys
//! 0600) that disappears with the [`CertSet`]: a [`Scratch`] folder
//! (`$TMPDIR/layout-gate-certs-<owner>-<random>`), also removed on a handled signal, and swept by
//! the next run when a SIGKILL left it behind. Nothing here serializes a key; the public
//! [`CertRecord`] is what evidence carries. Every fingerprint maps back to its case-local name, so
//! a probe result reads "answered with gateway-wildcard", not a hash.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde::{Deserialize, Serialize};

use crate::observe::leaf::{self, LeafInfo};
use crate::scratch::{self, Scratch};
use crate::types::{CertName, DnsName, Fingerprint};

/// What a case asks for: a name and the DNS names the leaf covers (already templated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertSpec {
    pub name: CertName,
    pub dns_names: Vec<DnsName>,
}

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("certificate {name}: {source}")]
    Generate { name: String, source: rcgen::Error },
    #[error("certificate {name}: no DNS names")]
    NoNames { name: CertName },
    #[error("certificate {name} declared twice")]
    Duplicate { name: CertName },
    #[error("writing {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("certificate {name}: {message}")]
    Decode { name: String, message: String },
    #[error("certificate {name}: building a TLS server config: {source}")]
    Rustls { name: CertName, source: rustls::Error },
    #[error("no certificate named {0} in this run")]
    Unknown(CertName),
}

/// One issued leaf certificate.
pub struct IssuedCert {
    pub name: CertName,
    pub dns_names: Vec<DnsName>,
    pub cert_pem: String,
    pub cert_der: CertificateDer<'static>,
    pub info: LeafInfo,
    /// PEM file with the leaf followed by the CA, as a server presents it.
    pub chain_path: PathBuf,
    /// PEM PKCS#8 key file, mode 0600, inside the run's private directory.
    pub key_path: PathBuf,
    key_pem: String,
    key_der: PrivatePkcs8KeyDer<'static>,
}

impl std::fmt::Debug for IssuedCert {
    // A derived Debug would print the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedCert").field("name", &self.name).field("sha256", &self.info.sha256).finish_non_exhaustive()
    }
}

impl IssuedCert {
    pub fn fingerprint(&self) -> Fingerprint {
        self.info.sha256
    }
    /// The key in PEM, for the places that must hand it on (an Envoy file, a Kubernetes Secret
    /// in the cluster the harness owns). Never put it in evidence.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(self.key_der.clone_key())
    }
    pub fn record(&self) -> CertRecord {
        CertRecord { name: self.name.clone(), dns_names: self.dns_names.clone(), leaf: self.info.clone() }
    }
}

/// The public face of a certificate, as evidence records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertRecord {
    pub name: CertName,
    pub dns_names: Vec<DnsName>,
    pub leaf: LeafInfo,
}

/// The CA every leaf of a run is signed by.
pub struct RunCa {
    pub cert_pem: String,
    pub cert_der: CertificateDer<'static>,
    pub info: LeafInfo,
    pub path: PathBuf,
}

/// All certificates of one run, and the private directory that holds their keys.
pub struct CertSet {
    // Dropped last: removes the key files.
    dir: Scratch,
    ca: RunCa,
    certs: BTreeMap<CertName, IssuedCert>,
    by_fingerprint: BTreeMap<Fingerprint, CertName>,
}

impl std::fmt::Debug for CertSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertSet").field("dir", &self.dir.path()).field("certs", &self.certs.keys().collect::<Vec<_>>()).finish()
    }
}

impl CertSet {
    /// Makes a CA and one leaf per spec. `run_label` goes into the CA's name so certificates of
    /// different runs are told apart by eye.
    pub fn generate(run_label: &str, specs: &[CertSpec]) -> Result<CertSet, CertError> {
        let dir = Scratch::new(scratch::CERTS).map_err(|source| CertError::Io { path: std::env::temp_dir(), source })?;
        // Scratch folders are 0700; say so again here so a change there cannot silently widen
        // access to the keys.
        set_mode(dir.path(), 0o700)?;

        let now = time::OffsetDateTime::now_utc();
        let ca_key = KeyPair::generate().map_err(|source| CertError::Generate { name: "ca".into(), source })?;
        let mut ca_params = CertificateParams::default();
        ca_params.distinguished_name = dn(&format!("layout-gate CA {run_label}"), None);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        ca_params.not_before = now - time::Duration::hours(1);
        ca_params.not_after = now + time::Duration::days(30);
        ca_params.serial_number = Some(serial_for("ca", run_label));
        let ca_cert = ca_params.self_signed(&ca_key).map_err(|source| CertError::Generate { name: "ca".into(), source })?;
        let ca_pem = ca_cert.pem();
        let ca_path = dir.path().join("ca.crt");
        write_file(&ca_path, ca_pem.as_bytes(), 0o644)?;
        let ca_info = leaf::describe(ca_cert.der()).map_err(|message| CertError::Decode { name: "ca".into(), message })?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut certs = BTreeMap::new();
        let mut by_fingerprint = BTreeMap::new();
        for spec in specs {
            if certs.contains_key(&spec.name) {
                return Err(CertError::Duplicate { name: spec.name.clone() });
            }
            if spec.dns_names.is_empty() {
                return Err(CertError::NoNames { name: spec.name.clone() });
            }
            let gen_err = |source| CertError::Generate { name: spec.name.to_string(), source };
            let key = KeyPair::generate().map_err(gen_err)?;
            let mut params = CertificateParams::new(spec.dns_names.iter().map(|d| d.to_string()).collect::<Vec<_>>()).map_err(gen_err)?;
            params.distinguished_name = dn(spec.dns_names[0].as_str(), Some(spec.name.as_str()));
            params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            params.not_before = now - time::Duration::hours(1);
            params.not_after = now + time::Duration::days(7);
            params.serial_number = Some(serial_for(spec.name.as_str(), run_label));
            let cert = params.signed_by(&key, &issuer).map_err(gen_err)?;
            let info = leaf::describe(cert.der()).map_err(|message| CertError::Decode { name: spec.name.to_string(), message })?;

            let chain_path = dir.path().join(format!("{}.crt", spec.name));
            let key_path = dir.path().join(format!("{}.key", spec.name));
            let cert_pem = cert.pem();
            write_file(&chain_path, format!("{cert_pem}{ca_pem}").as_bytes(), 0o644)?;
            let key_pem = key.serialize_pem();
            write_file(&key_path, key_pem.as_bytes(), 0o600)?;

            by_fingerprint.insert(info.sha256, spec.name.clone());
            certs.insert(
                spec.name.clone(),
                IssuedCert {
                    name: spec.name.clone(),
                    dns_names: spec.dns_names.clone(),
                    cert_pem,
                    cert_der: cert.der().clone(),
                    info,
                    chain_path,
                    key_path,
                    key_pem,
                    key_der: PrivatePkcs8KeyDer::from(key.serialize_der()),
                },
            );
        }
        Ok(CertSet {
            dir,
            ca: RunCa { cert_pem: ca_pem, cert_der: ca_cert.der().clone(), info: ca_info, path: ca_path },
            certs,
            by_fingerprint,
        })
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
    pub fn ca(&self) -> &RunCa {
        &self.ca
    }
    pub fn get(&self, name: &CertName) -> Result<&IssuedCert, CertError> {
        self.certs.get(name).ok_or_else(|| CertError::Unknown(name.clone()))
    }
    pub fn iter(&self) -> impl Iterator<Item = &IssuedCert> {
        self.certs.values()
    }
    /// Which of this run's certificates has this fingerprint; `None` means a stranger answered.
    pub fn name_of(&self, fp: &Fingerprint) -> Option<&CertName> {
        self.by_fingerprint.get(fp)
    }
    /// Public records of every certificate, for evidence.
    pub fn records(&self) -> Vec<CertRecord> {
        self.certs.values().map(IssuedCert::record).collect()
    }

    /// A rustls server config presenting `name` (leaf + CA), with the given ALPN protocols.
    pub fn server_config(&self, name: &CertName, alpn: &[&[u8]]) -> Result<Arc<rustls::ServerConfig>, CertError> {
        let cert = self.get(name)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|source| CertError::Rustls { name: name.clone(), source })?
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert_der.clone(), self.ca.cert_der.clone()], cert.key_der())
            .map_err(|source| CertError::Rustls { name: name.clone(), source })?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(Arc::new(config))
    }
}

fn dn(common_name: &str, unit: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn.push(DnType::OrganizationName, "layout-gate");
    if let Some(unit) = unit {
        // The case-local name is in the subject too, so `openssl s_client` shows it.
        dn.push(DnType::OrganizationalUnitName, unit);
    }
    dn
}

/// A positive 16-byte serial that differs per name and per run.
pub(crate) fn serial_for(name: &str, run_label: &str) -> rcgen::SerialNumber {
    use sha2::Digest;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let digest = sha2::Sha256::digest(format!("{run_label}/{name}/{nanos}/{}", std::process::id()));
    let mut bytes = digest[..16].to_vec();
    bytes[0] &= 0x7f; // DER integers are signed; keep it positive.
    bytes[0] |= 0x01; // and without a leading zero byte, so its length is stable.
    rcgen::SerialNumber::from_slice(&bytes)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), CertError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|source| CertError::Io { path: path.into(), source })
}

pub(crate) fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CertError> {
    let io = |source| CertError::Io { path: path.into(), source };
    let mut f = fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(path).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn spec(name: &str, dns: &[&str]) -> CertSpec {
        CertSpec { name: CertName::new(name).unwrap(), dns_names: dns.iter().map(|d| DnsName::new(*d).unwrap()).collect() }
    }

    #[test]
    fn keys_live_in_a_folder_naming_its_owner() {
        // So a later run can tell whether this one is gone (see `crate::scratch`).
        let set = CertSet::generate("t", &[spec("a", &["a.example.test"])]).unwrap();
        let name = set.dir().file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(scratch::Owner::of_name(&name), Some(("certs", scratch::Owner::current())), "{name}");
    }

    #[test]
    fn leaves_are_named_signed_and_keys_private() {
        let set = CertSet::generate(
            "t",
            &[spec("gateway-wildcard", &["*.example.test", "example.test"]), spec("api-backend", &["api.example.test"])],
        )
        .unwrap();
        let wild = set.get(&CertName::new("gateway-wildcard").unwrap()).unwrap();
        assert_eq!(wild.info.sans, vec!["*.example.test", "example.test"]);
        assert!(wild.info.subject.contains("OU=gateway-wildcard"), "{}", wild.info.subject);
        assert_eq!(wild.info.issuer, set.ca().info.subject);
        assert_eq!(set.name_of(&wild.fingerprint()).map(|n| n.as_str()), Some("gateway-wildcard"));
        let api = set.get(&CertName::new("api-backend").unwrap()).unwrap();
        assert_ne!(api.fingerprint(), wild.fingerprint());
        assert_ne!(api.info.serial, wild.info.serial);
        let mode = fs::metadata(&api.key_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(set.dir()).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert!(set.name_of(&Fingerprint::of_der(b"stranger")).is_none());
        // The server config builds, so key and certificate belong together.
        set.server_config(&api.name, &[b"http/1.1"]).unwrap();
    }

    #[test]
    fn keys_vanish_with_the_set() {
        let set = CertSet::generate("t", &[spec("a", &["a.example.test"])]).unwrap();
        let key = set.get(&CertName::new("a").unwrap()).unwrap().key_path.clone();
        assert!(key.exists());
        drop(set);
        assert!(!key.exists());
    }

    #[test]
    fn duplicates_and_empty_names_are_refused() {
        assert!(matches!(CertSet::generate("t", &[spec("a", &["a.test"]), spec("a", &["b.test"])]), Err(CertError::Duplicate { .. })));
        assert!(matches!(CertSet::generate("t", &[spec("a", &[])]), Err(CertError::NoNames { .. })));
    }

    #[test]
    fn debug_never_prints_keys() {
        let set = CertSet::generate("t", &[spec("a", &["a.example.test"])]).unwrap();
        let cert = set.get(&CertName::new("a").unwrap()).unwrap();
        assert!(!format!("{cert:?}").contains("PRIVATE"));
        assert!(!format!("{set:?}").contains("PRIVATE"));
    }
}
