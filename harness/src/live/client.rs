//! The one way `check --live` talks to a user's cluster: [`ReadOnly`], a client that can only
//! list and get. It has no apply, patch, create, update or delete method, and the inner
//! `kube::Client` is private to this module, so no code of layout-gate can write to the cluster
//! through it: the guarantee is the type, not a convention.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The most a kubeconfig may hold: a real one is a few KiB.
const KUBECONFIG_LIMIT: crate::input::Limit = crate::input::Limit { bytes: 4 * 1024 * 1024, knob: None };

/// Why the cluster could not be read, located: the kubeconfig (file, field), the context, or
/// the request (verb, resource, namespace) and what the API server said.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    #[error("{file}: {field}: {message}")]
    Kubeconfig { file: String, field: String, message: String },
    #[error("{0}")]
    Unreachable(String),
    /// 403: the user's credentials do not allow `verb` on `resource`.
    #[error("cannot {verb} {resource}{scope}: {message} (grant it, e.g. with the read-only ClusterRole of the docs)")]
    Forbidden { verb: String, resource: String, scope: String, message: String },
    #[error("cannot {verb} {resource}{scope}: {message}")]
    Request { verb: String, resource: String, scope: String, message: String },
    #[error("{0}")]
    Cluster(String),
}

/// Which cluster was read: its kubeconfig names and a digest of where it is (the API server's
/// URL and the CA it is trusted with), so evidence can say "the same cluster" without a URL.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClusterId {
    pub context: String,
    pub cluster: String,
    /// `sha256:` of the server URL, a newline, and each CA certificate (DER) in order.
    pub server_digest: String,
}

/// A client that can only read. See the module doc.
pub struct ReadOnly {
    client: Client,
    request: Duration,
    pub id: ClusterId,
}

/// A kind read by `check --live`: where it is served and how messages name it.
#[derive(Debug, Clone)]
pub struct Resource {
    pub api: ApiResource,
    pub namespaced: bool,
}

impl Resource {
    /// `gateways.gateway.networking.k8s.io`, `services` (as RBAC and kubectl name it).
    pub fn name(&self) -> String {
        if self.api.group.is_empty() { self.api.plural.clone() } else { format!("{}.{}", self.api.plural, self.api.group) }
    }
}

fn kubeconfig_error(file: &str, field: &str, message: impl std::fmt::Display) -> LiveError {
    LiveError::Kubeconfig { file: file.to_string(), field: field.to_string(), message: message.to_string() }
}

/// The kubeconfig to read: `--kubeconfig`, else the first file of `KUBECONFIG`, else
/// `~/.kube/config`.
pub fn kubeconfig_path(given: Option<&Path>) -> Result<PathBuf, LiveError> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    if let Some(k) = std::env::var_os("KUBECONFIG").filter(|k| !k.is_empty())
        && let Some(first) = std::env::split_paths(&k).next()
    {
        return Ok(first);
    }
    let home = std::env::var_os("HOME").ok_or_else(|| kubeconfig_error("~/.kube/config", "path", "HOME is not set; give --kubeconfig"))?;
    Ok(PathBuf::from(home).join(".kube/config"))
}

/// Reads and parses a kubeconfig (bounded), and picks the context: `context`, else the file's
/// `current-context`. An unknown context names the ones the file has.
pub fn load_kubeconfig(path: &Path, context: Option<&str>) -> Result<(Kubeconfig, String), LiveError> {
    let file = path.display().to_string();
    let text = crate::input::read_text(path, KUBECONFIG_LIMIT).map_err(|e| kubeconfig_error(&file, "path", e.reason()))?;
    let kc = Kubeconfig::from_yaml(&text).map_err(|e| {
        // The parser knows where it stopped: said as `FILE:LINE:COLUMN`, as an editor jumps to it.
        let at = match &e {
            kube::config::KubeconfigError::Parse(p) => {
                p.location().filter(|l| l.line() > 0).map(|l| format!(":{}:{}", l.line(), l.column()))
            }
            _ => None,
        };
        kubeconfig_error(&format!("{file}{}", at.unwrap_or_default()), "yaml", e)
    })?;
    let name = match context {
        Some(c) => c.to_string(),
        None => kc.current_context.clone().ok_or_else(|| kubeconfig_error(&file, "current-context", "not set; give --context"))?,
    };
    if !kc.contexts.iter().any(|c| c.name == name) {
        let known: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
        let field = if context.is_some() { "--context" } else { "current-context" };
        return Err(kubeconfig_error(&file, field, format!("no context {name:?} (contexts: {})", known.join(", "))));
    }
    Ok((kc, name))
}

/// The version of a group to read `kind` at: the group's preferred version when it serves the
/// kind, else the first version (in the server's order of priority) that does. A group's
/// preferred version need not serve every kind of it: Gateway API 1.4's experimental channel
/// prefers `gateway.networking.k8s.io/v1`, and serves TLSRoute only at v1alpha3 and v1alpha2
/// (`kube`'s `recommended_kind` looks at the preferred version alone, and found no TLSRoute).
pub fn serving_version<'a>(preferred: &'a str, versions: &[(&'a str, Vec<String>)], kind: &str) -> Option<&'a str> {
    let serves = |v: &&(&str, Vec<String>)| v.1.iter().any(|k| k == kind);
    versions.iter().find(|v| v.0 == preferred).filter(serves).or_else(|| versions.iter().find(serves)).map(|v| v.0)
}

/// `sha256:HEX` of the server URL and its CA certificates.
pub fn server_digest(url: &str, cas: &[Vec<u8>]) -> String {
    let mut h = Sha256::new();
    h.update(url.as_bytes());
    h.update(b"\n");
    for c in cas {
        h.update(c);
    }
    format!("sha256:{}", h.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>())
}

impl ReadOnly {
    /// Connects with the user's kubeconfig and context, and asks the API server its version
    /// once, within `request`: a cluster that does not answer is said at once, with the URL.
    pub async fn connect(kubeconfig: Option<&Path>, context: Option<&str>, request: Duration) -> Result<ReadOnly, LiveError> {
        let path = kubeconfig_path(kubeconfig)?;
        let file = path.display().to_string();
        let (kc, ctx) = load_kubeconfig(&path, context)?;
        let cluster =
            kc.contexts.iter().find(|c| c.name == ctx).and_then(|c| c.context.as_ref()).map(|c| c.cluster.clone()).unwrap_or_default();
        let options = KubeConfigOptions { context: Some(ctx.clone()), ..KubeConfigOptions::default() };
        let mut config =
            Config::from_custom_kubeconfig(kc, &options).await.map_err(|e| kubeconfig_error(&file, &format!("context {ctx}"), e))?;
        config.connect_timeout = Some(request);
        config.read_timeout = Some(request);
        let url = config.cluster_url.to_string();
        let digest = server_digest(&url, config.root_cert.as_deref().unwrap_or_default());
        let client = Client::try_from(config).map_err(|e| kubeconfig_error(&file, &format!("context {ctx}"), e))?;
        let asked = std::time::Instant::now();
        match tokio::time::timeout(request, client.apiserver_version()).await {
            Ok(Ok(_)) => {}
            // The client's own connect and read timeouts are the same wait: when it gave up
            // there, say the wait, as below, not only the transport's words.
            Ok(Err(e)) if asked.elapsed() >= request => {
                return Err(LiveError::Unreachable(format!(
                    "the API server of context {ctx} ({url}) did not answer within {}s (LAYOUT_GATE_API_REQUEST_TIMEOUT): {e}",
                    request.as_secs()
                )));
            }
            Ok(Err(e)) => return Err(LiveError::Unreachable(format!("the API server of context {ctx} ({url}) could not be reached: {e}"))),
            Err(_) => {
                return Err(LiveError::Unreachable(format!(
                    "the API server of context {ctx} ({url}) did not answer within {}s (LAYOUT_GATE_API_REQUEST_TIMEOUT)",
                    request.as_secs()
                )));
            }
        }
        Ok(ReadOnly { client, request, id: ClusterId { context: ctx, cluster, server_digest: digest } })
    }

    /// The served resource of `kind` in `group` at the version the server prefers; `None`
    /// when the server does not serve it (its CRD is not installed).
    pub async fn resource(&self, group: &str, kind: &str) -> Result<Option<Resource>, LiveError> {
        let what = if group.is_empty() { "the core API".to_string() } else { format!("API group {group}") };
        let g = match tokio::time::timeout(self.request, kube::discovery::group(&self.client, if group.is_empty() { "" } else { group }))
            .await
        {
            Err(_) => return Err(LiveError::Unreachable(format!("discovering {what}: no answer within {}s", self.request.as_secs()))),
            Ok(Err(kube::Error::Api(s))) if s.code == 404 => return Ok(None),
            Ok(Err(kube::Error::Discovery(_))) => return Ok(None),
            Ok(Err(e)) => return Err(LiveError::Cluster(format!("discovering {what}: {e}"))),
            Ok(Ok(g)) => g,
        };
        let versions: Vec<(&str, Vec<String>)> =
            g.versions().map(|v| (v, g.versioned_resources(v).into_iter().map(|(ar, _)| ar.kind).collect())).collect();
        let Some(version) = serving_version(g.preferred_version_or_latest(), &versions, kind) else { return Ok(None) };
        Ok(g.versioned_resources(version)
            .into_iter()
            .find(|(ar, _)| ar.kind == kind)
            .map(|(api, caps)| Resource { api, namespaced: caps.scope == kube::discovery::Scope::Namespaced }))
    }

    fn api(&self, r: &Resource, namespace: Option<&str>) -> Api<DynamicObject> {
        match (r.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &r.api),
            _ => Api::all_with(self.client.clone(), &r.api),
        }
    }

    /// Every object of `r` in `namespace` (all namespaces: `None`), as JSON.
    pub async fn list(&self, r: &Resource, namespace: Option<&str>) -> Result<Vec<Value>, LiveError> {
        let api = self.api(r, namespace);
        let got = self.bounded("list", r, namespace, api.list(&ListParams::default())).await?;
        got.items.into_iter().map(|o| serde_json::to_value(o).map_err(|e| LiveError::Cluster(format!("{}: {e}", r.name())))).collect()
    }

    /// One object, or `None` when it does not exist.
    pub async fn get(&self, r: &Resource, namespace: Option<&str>, name: &str) -> Result<Option<Value>, LiveError> {
        let api = self.api(r, namespace);
        match self.bounded("get", r, namespace, api.get(name)).await {
            Ok(o) => Ok(Some(serde_json::to_value(o).map_err(|e| LiveError::Cluster(format!("{}: {e}", r.name())))?)),
            Err(LiveError::Request { message, .. }) if message.starts_with("404") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A Secret's certificate only. The API has no way to read one key of a Secret's data
    /// (field selectors filter objects, not fields), so the whole Secret crosses the wire; it
    /// is deserialized into [`CertOnly`], which has no field for `tls.key`: the key is skipped
    /// by the parser and never held in a value of layout-gate, stored or printed.
    pub async fn secret_certificate(&self, namespace: &str, name: &str) -> Result<Option<CertOnly>, LiveError> {
        let r = Resource { api: ApiResource::erase::<k8s_openapi::api::core::v1::Secret>(&()), namespaced: true };
        let req = kube::core::Request::new(format!("/api/v1/namespaces/{namespace}/secrets"))
            .get(name, &kube::api::GetParams::default())
            .map_err(|e| LiveError::Cluster(format!("secret {namespace}/{name}: {e}")))?;
        match self.bounded("get", &r, Some(namespace), self.client.request::<CertOnly>(req)).await {
            Ok(c) => Ok(Some(c)),
            Err(LiveError::Request { message, .. }) if message.starts_with("404") => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn bounded<T>(
        &self,
        verb: &str,
        r: &Resource,
        namespace: Option<&str>,
        f: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, LiveError> {
        let scope = match (r.namespaced, namespace) {
            (true, Some(ns)) => format!(" in namespace {ns}"),
            (true, None) => " in all namespaces".into(),
            _ => String::new(),
        };
        let parts = || (verb.to_string(), r.name(), scope.clone());
        match tokio::time::timeout(self.request, f).await {
            Err(_) => {
                let (verb, resource, scope) = parts();
                Err(LiveError::Request { verb, resource, scope, message: format!("no answer within {}s", self.request.as_secs()) })
            }
            Ok(Ok(t)) => Ok(t),
            Ok(Err(kube::Error::Api(s))) if s.code == 403 => {
                let (verb, resource, scope) = parts();
                Err(LiveError::Forbidden { verb, resource, scope, message: s.message.clone() })
            }
            Ok(Err(kube::Error::Api(s))) => {
                let (verb, resource, scope) = parts();
                Err(LiveError::Request { verb, resource, scope, message: format!("{} {}: {}", s.code, s.reason, s.message) })
            }
            Ok(Err(e)) => {
                let (verb, resource, scope) = parts();
                Err(LiveError::Request { verb, resource, scope, message: e.to_string() })
            }
        }
    }
}

/// What layout-gate keeps of a Secret: its name, type, and `tls.crt`. Deliberately no field
/// for `tls.key` (see [`ReadOnly::secret_certificate`]); `has_key` records only whether the
/// Secret has one, as a boolean, because Cilium refuses a TLS Secret without it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct CertOnly {
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    #[serde(rename = "type", default)]
    pub type_: Option<String>,
    #[serde(default)]
    pub data: CertData,
}

#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct CertData {
    /// The PEM bytes (the API's base64, decoded).
    #[serde(rename = "tls.crt", default)]
    pub crt: Option<k8s_openapi::ByteString>,
    #[serde(rename = "tls.key", default, deserialize_with = "present")]
    pub has_key: bool,
}

/// Skips the value without keeping it, and says it was there.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d)?;
    Ok(true)
}

use serde::Deserialize as _;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_key_is_never_kept() {
        let s: CertOnly = serde_json::from_str(
            r#"{"metadata":{"name":"s"},"type":"kubernetes.io/tls","data":{"tls.crt":"Q1JU","tls.key":"U0VDUkVULUtFWQ=="}}"#,
        )
        .unwrap();
        assert!(s.data.has_key);
        assert_eq!(s.data.crt.as_ref().map(|b| b.0.as_slice()), Some(&b"CRT"[..]));
        assert!(!format!("{s:?}").contains("U0VDUkVULUtFWQ"), "{s:?}");
        let only_key: CertOnly = serde_json::from_str(r#"{"metadata":{"name":"s"},"data":{"tls.key":"eA=="}}"#).unwrap();
        assert!(only_key.data.has_key && only_key.data.crt.is_none());
    }

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("kubeconfig");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    const ONE: &str = "apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\n";

    #[test]
    fn a_kubeconfig_that_does_not_parse_is_located() {
        let (_d, p) = write("apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: [x\n");
        let e = load_kubeconfig(&p, None).unwrap_err();
        let s = e.to_string();
        // The line is the one where the flow sequence is left open (3, counting from 1) or after it.
        let line: u64 = s
            .strip_prefix(&format!("{}:", p.display()))
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not located by line: {s}"));
        assert!((3..=5).contains(&line) && s.contains(": yaml: "), "{s}");
        let e = load_kubeconfig(&p.with_file_name("absent"), None).unwrap_err();
        assert!(matches!(e, LiveError::Kubeconfig { ref field, .. } if field == "path"), "{e}");
    }

    #[test]
    fn an_unknown_context_names_the_known_ones() {
        let (_d, p) = write(ONE);
        let e = load_kubeconfig(&p, Some("prod")).unwrap_err().to_string();
        assert!(e.contains("--context: no context \"prod\" (contexts: a)"), "{e}");
        assert_eq!(load_kubeconfig(&p, None).unwrap().1, "a");
    }

    /// A server that accepts connections and never answers: bounded by the request wait.
    #[tokio::test]
    async fn a_cluster_that_does_not_answer_is_said_within_the_wait() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let (_d, p) = write(&ONE.replace("https://127.0.0.1:1", &format!("http://127.0.0.1:{port}")));
        let e = match ReadOnly::connect(Some(&p), None, Duration::from_secs(1)).await {
            Err(e) => e,
            Ok(_) => panic!("a silent server answered"),
        };
        let s = e.to_string();
        assert!(matches!(e, LiveError::Unreachable(_)) && s.contains("did not answer within 1s") && s.contains(&port.to_string()), "{s}");
        drop(silent);
    }

    #[test]
    fn a_kind_the_preferred_version_lacks_is_read_at_a_version_that_serves_it() {
        let kinds = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let gateway_api_1_4 = [
            ("v1", kinds(&["Gateway", "HTTPRoute", "GRPCRoute"])),
            ("v1beta1", kinds(&["Gateway", "HTTPRoute", "ReferenceGrant"])),
            ("v1alpha3", kinds(&["TLSRoute"])),
            ("v1alpha2", kinds(&["TLSRoute", "ReferenceGrant"])),
        ];
        assert_eq!(serving_version("v1", &gateway_api_1_4, "TLSRoute"), Some("v1alpha3"));
        assert_eq!(serving_version("v1", &gateway_api_1_4, "HTTPRoute"), Some("v1"));
        assert_eq!(serving_version("v1", &gateway_api_1_4, "ReferenceGrant"), Some("v1beta1"));
        assert_eq!(serving_version("v1", &gateway_api_1_4, "ListenerSet"), None);
    }

    #[test]
    fn the_server_digest_depends_on_the_url_and_the_ca() {
        let a = server_digest("https://x", &[vec![1]]);
        assert!(a.starts_with("sha256:") && a.len() == 71);
        assert_ne!(a, server_digest("https://y", &[vec![1]]));
        assert_ne!(a, server_digest("https://x", &[vec![2]]));
    }
}
