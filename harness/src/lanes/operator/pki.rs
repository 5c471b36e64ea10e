//! The local control plane's certificates: one CA for the run; serving certificates for etcd
//! and kube-apiserver on loopback; client certificates for kube-apiserver to etcd, for
//! layout-gate (`system:masters`), for kube-controller-manager (its bootstrap user) and for
//! cilium-operator as its own ServiceAccount (so the
//! chart's RBAC for the operator is what the API server enforces); and the ServiceAccount token
//! signing key. Keys are written 0600 into the run's private folder and go nowhere else.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};

use crate::render::certs::{CertError, serial_for, write_file};

/// The identity cilium-operator runs as: its ServiceAccount, as the chart's ClusterRoleBinding
/// names it (the API server takes a client certificate's CN as the user name).
pub const OPERATOR_USER: &str = "system:serviceaccount:kube-system:cilium-operator";

/// Paths of everything [`generate`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pki {
    pub ca: PathBuf,
    pub etcd_server: (PathBuf, PathBuf),
    pub apiserver_serving: (PathBuf, PathBuf),
    pub apiserver_etcd_client: (PathBuf, PathBuf),
    pub admin: (PathBuf, PathBuf),
    pub controller_manager: (PathBuf, PathBuf),
    pub operator: (PathBuf, PathBuf),
    pub service_account_key: PathBuf,
    pub service_account_public: PathBuf,
}

fn keygen_err(name: &str) -> impl Fn(rcgen::Error) -> CertError + '_ {
    move |source| CertError::Generate { name: name.to_string(), source }
}

/// Writes a fresh CA and every certificate and key into `dir` (which must exist, mode 0700).
pub fn generate(dir: &Path, run_label: &str) -> Result<Pki, CertError> {
    let now = time::OffsetDateTime::now_utc();
    let ca_key = KeyPair::generate().map_err(keygen_err("control-plane CA"))?;
    let mut ca = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, format!("layout-gate control plane CA {run_label}"));
    ca.distinguished_name = dn;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    ca.not_before = now - time::Duration::hours(1);
    ca.not_after = now + time::Duration::days(2);
    ca.serial_number = Some(serial_for("control-plane-ca", run_label));
    let ca_cert = ca.self_signed(&ca_key).map_err(keygen_err("control-plane CA"))?;
    let ca_path = dir.join("ca.crt");
    write_file(&ca_path, ca_cert.pem().as_bytes(), 0o644)?;
    let issuer = Issuer::new(ca, ca_key);

    let leaf = |name: &str, cn: &str, org: Option<&str>, server: bool| -> Result<(PathBuf, PathBuf), CertError> {
        let key = KeyPair::generate().map_err(keygen_err(name))?;
        let mut p = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        if let Some(o) = org {
            dn.push(DnType::OrganizationName, o);
        }
        p.distinguished_name = dn;
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        if server {
            p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
            p.subject_alt_names = vec![
                SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])),
                SanType::DnsName("localhost".try_into().map_err(keygen_err(name))?),
                SanType::DnsName("kubernetes".try_into().map_err(keygen_err(name))?),
                SanType::DnsName("kubernetes.default.svc".try_into().map_err(keygen_err(name))?),
            ];
        } else {
            p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        }
        p.not_before = now - time::Duration::hours(1);
        p.not_after = now + time::Duration::days(2);
        p.serial_number = Some(serial_for(name, run_label));
        let cert = p.signed_by(&key, &issuer).map_err(keygen_err(name))?;
        let crt = dir.join(format!("{name}.crt"));
        let k = dir.join(format!("{name}.key"));
        write_file(&crt, cert.pem().as_bytes(), 0o644)?;
        write_file(&k, key.serialize_pem().as_bytes(), 0o600)?;
        Ok((crt, k))
    };

    // The API server reads the public half as SPKI (`PUBLIC KEY`); it signs with the PKCS#8 key.
    let sa = KeyPair::generate().map_err(keygen_err("service-account"))?;
    let sa_path = dir.join("service-account.key");
    write_file(&sa_path, sa.serialize_pem().as_bytes(), 0o600)?;
    let sa_pub = dir.join("service-account.pub");
    write_file(&sa_pub, sa.public_key_pem().as_bytes(), 0o644)?;
    Ok(Pki {
        ca: ca_path,
        etcd_server: leaf("etcd", "etcd", None, true)?,
        apiserver_serving: leaf("kube-apiserver", "kube-apiserver", None, true)?,
        apiserver_etcd_client: leaf("kube-apiserver-etcd-client", "kube-apiserver-etcd-client", None, false)?,
        admin: leaf("layout-gate-admin", "layout-gate", Some("system:masters"), false)?,
        // Its namespace controller deletes every kind of object in a namespace: a real cluster
        // gives it a ServiceAccount of its own with that right (`--use-service-account-credentials`);
        // here it runs as an administrator instead.
        controller_manager: leaf("kube-controller-manager", "system:kube-controller-manager", Some("system:masters"), false)?,
        operator: leaf("cilium-operator", OPERATOR_USER, Some("system:serviceaccounts"), false)?,
        service_account_key: sa_path,
        service_account_public: sa_pub,
    })
}

/// A kubeconfig for `server` with one context `name`, authenticating with a client certificate.
pub fn kubeconfig(server: &str, ca: &Path, client: &(PathBuf, PathBuf), name: &str) -> String {
    let q = |p: &Path| serde_json::to_string(&p.display().to_string()).unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {server}\n    certificate-authority: {}\n\
         users:\n- name: {name}\n  user:\n    client-certificate: {}\n    client-key: {}\n\
         contexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\ncurrent-context: {name}\n",
        q(ca),
        q(&client.0),
        q(&client.1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_private_and_the_operator_is_its_service_account() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pki = generate(dir.path(), "test").unwrap();
        for key in [&pki.etcd_server.1, &pki.admin.1, &pki.operator.1, &pki.service_account_key] {
            assert_eq!(std::fs::metadata(key).unwrap().permissions().mode() & 0o777, 0o600, "{}", key.display());
        }
        let der = std::fs::read_to_string(&pki.operator.0).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(der.as_bytes()).unwrap();
        let cert = pem.parse_x509().unwrap();
        let cn = cert.subject().iter_common_name().next().and_then(|c| c.as_str().ok());
        assert_eq!(cn, Some(OPERATOR_USER));
        let k = kubeconfig("https://127.0.0.1:6443", &pki.ca, &pki.operator, "op");
        assert!(k.contains("server: https://127.0.0.1:6443") && k.contains("current-context: op"), "{k}");
    }
}
