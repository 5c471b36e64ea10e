//! The one way `check --live` talks to a user's cluster: [`ReadOnly`], a client that can only
//! list and get. It has no apply, patch, create, update or delete method, and the inner
//! `kube::Client` is private to this module, so no code of layout-gate can write to the cluster
//! through it: the guarantee is the type, not a convention.
//!
//! Every answer is read here, by [`ReadOnly::fetch`]: within the request wait, at most
//! [`Bounds::response`] bytes (a list larger than that is refused, named), and never logged.
//! kube's own `request` helpers log a body they cannot parse at WARN, whole: a Secret whose
//! `tls.crt` did not decode was printed with its `tls.key`. So `kube` here only sends (its
//! authentication, TLS and proxies), and discovery, lists and gets are this module's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::BodyExt as _;
use kube::api::ApiResource;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::input::Limit;

/// The environment variable that overrides [`RESPONSE_DEFAULT_BYTES`].
pub const RESPONSE_LIMIT_ENV: &str = "LAYOUT_GATE_MAX_API_RESPONSE_BYTES";
/// The most one answer of the API server may hold: a list of every HTTPRoute of a large
/// cluster (10,000 routes of 5 KiB) is about 50 MiB; an answer past 256 MiB is refused rather
/// than held (a 3 GiB list took 3.2 GB of memory before this limit).
pub const RESPONSE_DEFAULT_BYTES: u64 = 256 << 20;

/// The response limit: `LAYOUT_GATE_MAX_API_RESPONSE_BYTES` if set to a number of bytes, else
/// 256 MiB.
pub fn response_limit() -> Result<Limit, String> {
    crate::input::limit_from_env(RESPONSE_LIMIT_ENV, RESPONSE_DEFAULT_BYTES)
}

/// How long each request may take (its answer read whole included), and how large an answer
/// may be.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub request: Duration,
    pub response: Limit,
}

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
    /// An answer past the response limit: `what` names it ("the list of HTTPRoutes in
    /// namespace shop").
    #[error("{what} is larger than {limit}; set {knob} to raise the limit")]
    TooLarge { what: String, limit: String, knob: String },
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
    bounds: Bounds,
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

    /// Where its objects are: `/apis/GROUP/VERSION[/namespaces/NS]/PLURAL`.
    fn path(&self, namespace: Option<&str>) -> String {
        let root = if self.api.group.is_empty() { format!("/api/{}", self.api.version) } else { format!("/apis/{}", self.api.api_version) };
        match (self.namespaced, namespace) {
            (true, Some(ns)) => format!("{root}/namespaces/{}/{}", segment(ns), self.api.plural),
            _ => format!("{root}/{}", self.api.plural),
        }
    }
}

/// A name as one path segment: what a real object's name cannot hold is escaped, so a name
/// read from a lying server cannot step to another path.
fn segment(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-._".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// One request as its messages name it: `cannot {verb} {resource}{scope}`, and `what` when its
/// answer is too large.
struct Ask {
    verb: &'static str,
    resource: String,
    scope: String,
    what: String,
}

impl Ask {
    fn of(verb: &'static str, r: &Resource, namespace: Option<&str>, what: String) -> Ask {
        let scope = match (r.namespaced, namespace) {
            (true, Some(ns)) => format!(" in namespace {ns}"),
            (true, None) => " in all namespaces".into(),
            _ => String::new(),
        };
        Ask { verb, resource: r.name(), scope, what }
    }

    fn failed(&self, message: String) -> LiveError {
        LiveError::Request { verb: self.verb.into(), resource: self.resource.clone(), scope: self.scope.clone(), message }
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

/// Reads and parses a kubeconfig (bounded, by the one kubeconfig reader), and picks the
/// context: `context`, else the file's `current-context`. An unknown context names the ones
/// the file has.
pub fn load_kubeconfig(path: &Path, context: Option<&str>) -> Result<(Kubeconfig, String), LiveError> {
    let file = path.display().to_string();
    let kc = crate::lanes::cluster::live::kubeconfig::read(path).map_err(|e| kubeconfig_error(&e.file, &e.field, e.message))?;
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

/// Discovery's documents, as much of them as is read: an API group's versions
/// (`/apis/GROUP`), and one version's resources (`/apis/GROUP/VERSION`, `/api/v1`).
#[derive(serde::Deserialize)]
struct ApiGroup {
    #[serde(default)]
    versions: Vec<GroupVersion>,
    #[serde(rename = "preferredVersion")]
    preferred: Option<GroupVersion>,
}

#[derive(serde::Deserialize)]
struct GroupVersion {
    version: String,
}

#[derive(serde::Deserialize)]
struct ResourceList {
    #[serde(default)]
    resources: Vec<ApiResourceDoc>,
}

#[derive(serde::Deserialize)]
struct ApiResourceDoc {
    name: String,
    kind: String,
    #[serde(default)]
    namespaced: bool,
}

/// Why an answer could not be parsed, without a word of the answer itself: where the parser
/// stopped, and its category. (serde's own message can quote a value it did not expect.)
fn unparsed(e: &serde_json::Error) -> String {
    let category = match e.classify() {
        serde_json::error::Category::Io => "could not be read",
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "is not JSON",
        serde_json::error::Category::Data => "is not the object asked for",
    };
    format!("the answer {category} (at line {} column {})", e.line(), e.column())
}

impl ReadOnly {
    /// Connects with the user's kubeconfig and context, and asks the API server its version
    /// once, within `bounds.request`: a cluster that does not answer is said at once, with the URL.
    pub async fn connect(kubeconfig: Option<&Path>, context: Option<&str>, bounds: Bounds) -> Result<ReadOnly, LiveError> {
        let request = bounds.request;
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
        let c = ReadOnly { client, bounds, id: ClusterId { context: ctx.clone(), cluster, server_digest: digest } };
        let ask = Ask { verb: "get", resource: "/version".into(), scope: String::new(), what: "the API server's /version".into() };
        let asked = std::time::Instant::now();
        match c.fetch("/version", &ask).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err(LiveError::Unreachable(format!(
                    "the server of context {ctx} ({url}) has no /version: not a Kubernetes API server"
                )));
            }
            // The client's own connect and read timeouts are the same wait: when it gave up
            // there, say the wait, not only the transport's words.
            Err(LiveError::Request { message, .. }) if asked.elapsed() >= request => {
                let cause = if message.starts_with("no answer within") { String::new() } else { format!(": {message}") };
                return Err(LiveError::Unreachable(format!(
                    "the API server of context {ctx} ({url}) did not answer within {}s (LAYOUT_GATE_API_REQUEST_TIMEOUT){cause}",
                    request.as_secs()
                )));
            }
            Err(LiveError::Request { message, .. }) => {
                return Err(LiveError::Unreachable(format!("the API server of context {ctx} ({url}) could not be reached: {message}")));
            }
            Err(e) => return Err(e),
        }
        Ok(c)
    }

    /// GETs `path` and reads its answer whole: within the request wait, at most the response
    /// limit, and nothing of it logged or kept but the bytes returned. `None`: 404. Every other
    /// status is an error, with the API server's own `Status` message when it sent one.
    async fn fetch(&self, path: &str, ask: &Ask) -> Result<Option<Vec<u8>>, LiveError> {
        let wait = self.bounds.request;
        match tokio::time::timeout(wait, self.fetch_unbounded_in_time(path, ask)).await {
            Ok(r) => r,
            Err(_) => Err(ask.failed(format!("no answer within {}s", wait.as_secs()))),
        }
    }

    async fn fetch_unbounded_in_time(&self, path: &str, ask: &Ask) -> Result<Option<Vec<u8>>, LiveError> {
        let req = http::Request::get(path)
            .header(http::header::ACCEPT, "application/json")
            .body(kube::client::Body::empty())
            .map_err(|e| ask.failed(format!("the request for {path}: {e}")))?;
        let res = self.client.send(req).await.map_err(|e| ask.failed(e.to_string()))?;
        let status = res.status();
        let declared = res.headers().get(http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        let body = self.body(res.into_body(), declared, ask).await?;
        if status.is_success() {
            return Ok(Some(body));
        }
        if status == http::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        // The server's `Status` says why; a body that is not one (a proxy's page) is not echoed.
        let said = serde_json::from_slice::<kube::core::Status>(&body).ok().filter(|s| !s.message.is_empty() || !s.reason.is_empty());
        if status == http::StatusCode::FORBIDDEN {
            let message = said.map(|s| s.message).unwrap_or_else(|| "403 Forbidden".into());
            return Err(LiveError::Forbidden { verb: ask.verb.into(), resource: ask.resource.clone(), scope: ask.scope.clone(), message });
        }
        Err(ask.failed(match said {
            Some(s) => format!("{} {}: {}", status.as_u16(), s.reason, s.message),
            None => format!("{status} (the answer is not a Kubernetes Status)"),
        }))
    }

    /// An answer's body, frame by frame, refused as soon as it passes the limit: a list that
    /// never ends costs the limit, not the machine.
    async fn body(&self, mut body: kube::client::Body, declared: Option<u64>, ask: &Ask) -> Result<Vec<u8>, LiveError> {
        let limit = self.bounds.response;
        let too_large = || LiveError::TooLarge {
            what: ask.what.clone(),
            limit: crate::input::human(limit.bytes),
            knob: limit.knob.unwrap_or(RESPONSE_LIMIT_ENV).to_string(),
        };
        if declared.is_some_and(|n| n > limit.bytes) {
            return Err(too_large());
        }
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| ask.failed(format!("reading the answer: {e}")))?;
            if let Ok(data) = frame.into_data() {
                if (out.len() + data.len()) as u64 > limit.bytes {
                    return Err(too_large());
                }
                out.extend_from_slice(&data);
            }
        }
        Ok(out)
    }

    /// The served resource of `kind` in `group` at the version the server prefers; `None`
    /// when the server does not serve it (its CRD is not installed).
    pub async fn resource(&self, group: &str, kind: &str) -> Result<Option<Resource>, LiveError> {
        let what = if group.is_empty() { "the core API".to_string() } else { format!("API group {group}") };
        let ask = |path: &str| Ask {
            verb: "discover",
            resource: what.clone(),
            scope: String::new(),
            what: format!("the discovery document {path}"),
        };
        let (preferred, versions): (String, Vec<String>) = if group.is_empty() {
            ("v1".into(), vec!["v1".into()])
        } else {
            let path = format!("/apis/{}", segment(group));
            let Some(body) = self.fetch(&path, &ask(&path)).await? else { return Ok(None) };
            let g: ApiGroup = serde_json::from_slice(&body).map_err(|e| ask(&path).failed(unparsed(&e)))?;
            let versions: Vec<String> = g.versions.into_iter().map(|v| v.version).collect();
            (g.preferred.map(|p| p.version).or_else(|| versions.first().cloned()).unwrap_or_default(), versions)
        };
        let mut served: Vec<(String, Vec<ApiResourceDoc>)> = Vec::new();
        for v in versions {
            let path = if group.is_empty() { format!("/api/{}", segment(&v)) } else { format!("/apis/{}/{}", segment(group), segment(&v)) };
            let Some(body) = self.fetch(&path, &ask(&path)).await? else { continue };
            let list: ResourceList = serde_json::from_slice(&body).map_err(|e| ask(&path).failed(unparsed(&e)))?;
            // Subresources (`gateways/status`) are not kinds of their own.
            served.push((v, list.resources.into_iter().filter(|r| !r.name.contains('/')).collect()));
        }
        let kinds: Vec<(&str, Vec<String>)> =
            served.iter().map(|(v, rs)| (v.as_str(), rs.iter().map(|r| r.kind.clone()).collect())).collect();
        let Some(version) = serving_version(&preferred, &kinds, kind) else { return Ok(None) };
        let Some((_, rs)) = served.iter().find(|(v, _)| v == version) else { return Ok(None) };
        Ok(rs.iter().find(|r| r.kind == kind).map(|r| Resource {
            api: ApiResource {
                group: group.to_string(),
                version: version.to_string(),
                api_version: if group.is_empty() { version.to_string() } else { format!("{group}/{version}") },
                kind: r.kind.clone(),
                plural: r.name.clone(),
            },
            namespaced: r.namespaced,
        }))
    }

    /// Every object of `r` in `namespace` (all namespaces: `None`), as JSON. A list larger
    /// than the response limit is refused, named ("the list of HTTPRoutes in namespace shop").
    pub async fn list(&self, r: &Resource, namespace: Option<&str>) -> Result<Vec<Value>, LiveError> {
        let mut ask = Ask::of("list", r, namespace, String::new());
        ask.what = format!("the list of {}s{}", r.api.kind, ask.scope);
        let body = self.fetch(&r.path(namespace), &ask).await?.ok_or_else(|| ask.failed("404: the server does not serve it".into()))?;
        let mut list: Value = serde_json::from_slice(&body).map_err(|e| ask.failed(unparsed(&e)))?;
        match list.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => Ok(items),
            Some(Value::Null) | None => Ok(Vec::new()),
            Some(_) => Err(ask.failed("the answer's items is not a list".into())),
        }
    }

    /// One object, or `None` when it does not exist.
    pub async fn get(&self, r: &Resource, namespace: Option<&str>, name: &str) -> Result<Option<Value>, LiveError> {
        let shown = namespace.map(|ns| format!("{ns}/{name}")).unwrap_or_else(|| name.to_string());
        let ask = Ask::of("get", r, namespace, format!("{} {shown}", r.api.kind));
        let Some(body) = self.fetch(&format!("{}/{}", r.path(namespace), segment(name)), &ask).await? else { return Ok(None) };
        serde_json::from_slice(&body).map(Some).map_err(|e| ask.failed(unparsed(&e)))
    }

    /// A Secret's certificate only. The API has no way to read one key of a Secret's data
    /// (field selectors filter objects, not fields), so the whole Secret crosses the wire; it
    /// is read by [`ReadOnly::fetch`] (never logged) and deserialized into [`CertOnly`], which
    /// has no field for `tls.key`: the key is skipped by the parser and never held in a value
    /// of layout-gate, stored or printed. An answer that does not parse is said by where the
    /// parser stopped, never by what it read.
    pub async fn secret_certificate(&self, namespace: &str, name: &str) -> Result<Option<CertOnly>, LiveError> {
        let r = Resource { api: ApiResource::erase::<k8s_openapi::api::core::v1::Secret>(&()), namespaced: true };
        let ask = Ask::of("get", &r, Some(namespace), format!("Secret {namespace}/{name}"));
        let Some(body) = self.fetch(&format!("{}/{}", r.path(Some(namespace)), segment(name)), &ask).await? else { return Ok(None) };
        serde_json::from_slice(&body).map(Some).map_err(|e| ask.failed(format!("{name}: {}; a Secret's data is never shown", unparsed(&e))))
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

    fn bounds(secs: u64) -> Bounds {
        Bounds { request: Duration::from_secs(secs), response: Limit { bytes: 1 << 20, knob: Some(RESPONSE_LIMIT_ENV) } }
    }

    /// A log of every level into memory, for what a run printed through `tracing`.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// `f` on a runtime of this thread, with every log line of every crate (TRACE) captured.
    fn logged<T>(f: impl std::future::Future<Output = T>) -> (T, String) {
        let log = Captured::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt().with_max_level(tracing::Level::TRACE).with_writer(move || writer.clone()).finish();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let out = tracing::subscriber::with_default(subscriber, || rt.block_on(f));
        let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
        (out, text)
    }

    const KEY: &str = "LAYOUT-GATE-TEST-PRIVATE-KEY-5f1c";
    const KEY_B64: &str = "TEFZT1VULUdBVEUtVEVTVC1QUklWQVRFLUtFWS01ZjFj";

    /// A lying (or broken) API server answers a Secret whose `tls.crt` is not base64: the
    /// reading fails, said by where, and the Secret's key is in no message and no log line, at
    /// any level. kube's own `request` logged the whole body it could not parse at WARN.
    #[test]
    fn a_secret_that_does_not_decode_never_shows_its_key() {
        let secret = serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls", "namespace": "shop"},
            "type": "kubernetes.io/tls", "data": {"tls.crt": "not base64 at all!", "tls.key": KEY_B64}});
        let api = super::super::fake_api::FakeApi::start(super::super::fake_api::Routes::cluster(&[secret])).unwrap();
        let (_d, p) = write(&api.kubeconfig());
        async fn read(p: &Path) -> Result<Option<CertOnly>, LiveError> {
            ReadOnly::connect(Some(p), None, bounds(10)).await?.secret_certificate("shop", "tls").await
        }
        let (got, log) = logged(read(&p));
        let e = got.unwrap_err().to_string();
        assert!(e.starts_with("cannot get secrets in namespace shop: tls: the answer is not the object asked for (at line"), "{e}");
        // The capture heard kube's client while it read the Secret, where its WARN of a body it
        // cannot parse would come from. (Asserted on its events: the request's path shows only
        // in the HTTP span's context, and tracing caches a span's interest across the tests of
        // this process, so a span first met in a neighbour without a subscriber was dropped here
        // in about one full run in three.)
        assert!(log.contains("kube_client::"), "the capture heard kube's client: {log}");
        for shown in [&e, &log] {
            assert!(!shown.contains(KEY_B64) && !shown.contains(KEY), "the key was shown: {shown}");
        }
    }

    /// A list that never ends is refused as soon as it passes the response limit, named, and
    /// the reading stops there: the error arrives long before the request wait, and the server
    /// has sent little more than the limit. kube's `list` held the whole body until the wait
    /// ended it (a 3 GiB list took 3.2 GB).
    #[test]
    fn an_endless_list_is_refused_at_the_limit_and_named() {
        let routes = super::super::fake_api::Routes::cluster(&[]).with(
            "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes",
            super::super::fake_api::Reply::Endless(r#"{"kind":"HTTPRouteList","items":["#.into()),
        );
        let api = super::super::fake_api::FakeApi::start(routes).unwrap();
        let (_d, p) = write(&api.kubeconfig());
        let started = std::time::Instant::now();
        async fn list(p: &Path) -> Result<Vec<Value>, LiveError> {
            let c = ReadOnly::connect(Some(p), None, bounds(8)).await?;
            let r = c.resource("gateway.networking.k8s.io", "HTTPRoute").await?.expect("the fake serves HTTPRoute");
            c.list(&r, Some("shop")).await
        }
        let (got, _) = logged(list(&p));
        let e = got.unwrap_err();
        assert_eq!(
            e.to_string(),
            "the list of HTTPRoutes in namespace shop is larger than 1 MiB; set LAYOUT_GATE_MAX_API_RESPONSE_BYTES to raise the limit"
        );
        assert!(started.elapsed() < Duration::from_secs(6), "the error waited for the request wait: {:?}", started.elapsed());
        std::thread::sleep(Duration::from_millis(200));
        let sent = api.sent();
        assert!(sent < 32 << 20, "the server sent {sent} bytes: the reading did not stop at the limit");
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
        let e = match ReadOnly::connect(Some(&p), None, bounds(1)).await {
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
