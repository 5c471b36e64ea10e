//! A fake Kubernetes API server on loopback, for the tests of `check --live` against a cluster
//! that is broken or lies: it answers discovery, lists and gets from a set of objects, and any
//! path can be given another answer (a Secret whose `tls.crt` does not decode, a list that never
//! ends). Plain HTTP on 127.0.0.1 only; it serves from threads of its own, so a test may run the
//! binary against it as a user would. Stopped (and its threads ended) when dropped.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// What a path answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status and a body, whole.
    Body(u16, String),
    /// 200 with `prefix` and then whitespace without end (chunked, at most 64 MiB/s): a list
    /// too large to hold. It ends when the client hangs up or the server is dropped.
    Endless(String),
}

/// The answers of the fake cluster, by path (the query is ignored).
#[derive(Debug, Clone, Default)]
pub struct Routes(pub BTreeMap<String, Reply>);

/// The kinds the fake cluster serves even when it holds none of them, by API version.
const ALWAYS: &[(&str, &[&str])] = &[
    ("gateway.networking.k8s.io/v1", &["Gateway", "HTTPRoute", "GRPCRoute", "ReferenceGrant"]),
    ("v1", &["Namespace", "Service", "Secret"]),
];

fn plural(kind: &str) -> String {
    format!("{}s", kind.to_ascii_lowercase())
}

/// `/api/v1` or `/apis/GROUP/VERSION`.
fn prefix(api_version: &str) -> String {
    if api_version.contains('/') { format!("/apis/{api_version}") } else { format!("/api/{api_version}") }
}

fn namespaced(kind: &str) -> bool {
    !matches!(kind, "Namespace" | "GatewayClass")
}

fn ok(v: &Value) -> Reply {
    Reply::Body(200, v.to_string())
}

impl Routes {
    /// A cluster holding `objects` (each with `apiVersion`, `kind`, `metadata`): the discovery
    /// of every group they are in (and of the Gateway API's and the core kinds `check --live`
    /// reads, which it serves empty),
    /// `/version`, every kind's list (in all namespaces and in each), and every object by name.
    pub fn cluster(objects: &[Value]) -> Routes {
        let mut r = BTreeMap::new();
        r.insert("/version".to_string(), ok(&json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0"})));
        // api version -> kinds served there
        let mut served: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (av, kinds) in ALWAYS {
            served.insert(av.to_string(), kinds.iter().map(|k| k.to_string()).collect());
        }
        for o in objects {
            let (av, kind) = (o["apiVersion"].as_str().unwrap_or_default(), o["kind"].as_str().unwrap_or_default());
            let kinds = served.entry(av.to_string()).or_default();
            if !kinds.iter().any(|k| k == kind) {
                kinds.push(kind.to_string());
            }
        }
        for (av, kinds) in &served {
            let p = prefix(av);
            let resources: Vec<Value> = kinds
                .iter()
                .map(|k| json!({"name": plural(k), "singularName": k.to_ascii_lowercase(), "namespaced": namespaced(k), "kind": k, "verbs": ["get", "list"]}))
                .collect();
            r.insert(p.clone(), ok(&json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": av, "resources": resources})));
            if let Some((group, version)) = av.split_once('/') {
                let gv = json!({"groupVersion": av, "version": version});
                r.insert(
                    format!("/apis/{group}"),
                    ok(&json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": [gv], "preferredVersion": gv})),
                );
            }
            for k in kinds {
                let of_kind: Vec<&Value> = objects.iter().filter(|o| o["apiVersion"] == av.as_str() && o["kind"] == k.as_str()).collect();
                let list = |items: Vec<&Value>| ok(&json!({"kind": format!("{k}List"), "apiVersion": av, "metadata": {}, "items": items}));
                r.insert(format!("{p}/{}", plural(k)), list(of_kind.clone()));
                let mut by_ns: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
                for o in &of_kind {
                    let ns = o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
                    by_ns.entry(ns).or_default().push(o);
                    let name = o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                    let at = if namespaced(k) {
                        format!("{p}/namespaces/{ns}/{}/{name}", plural(k))
                    } else {
                        format!("{p}/{}/{name}", plural(k))
                    };
                    r.insert(at, ok(o));
                }
                if namespaced(k) {
                    for (ns, items) in by_ns {
                        r.insert(format!("{p}/namespaces/{ns}/{}", plural(k)), list(items));
                    }
                }
            }
        }
        Routes(r)
    }

    /// `path` answers `reply` instead.
    pub fn with(mut self, path: &str, reply: Reply) -> Routes {
        self.0.insert(path.to_string(), reply);
        self
    }
}

/// The running server. See the module doc.
pub struct FakeApi {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    accept: Option<JoinHandle<()>>,
}

impl FakeApi {
    /// Serves `routes` on a free port of 127.0.0.1.
    pub fn start(routes: Routes) -> std::io::Result<FakeApi> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let routes = Arc::new(routes);
        let accept = {
            let (stop, sent) = (stop.clone(), sent.clone());
            std::thread::spawn(move || {
                let mut conns = Vec::new();
                for conn in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (routes, stop, sent) = (routes.clone(), stop.clone(), sent.clone());
                    conns.push(std::thread::spawn(move || serve(conn, &routes, &stop, &sent)));
                }
                for c in conns {
                    let _ = c.join();
                }
            })
        };
        Ok(FakeApi { addr, stop, sent, accept: Some(accept) })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many body bytes it has written so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// A kubeconfig whose one context (`fake`, the current one) is this server, with a token.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n  cluster: {{server: '{}'}}\ncontexts:\n- name: fake\n  context: {{cluster: fake, user: u}}\nusers:\n- name: u\n  user: {{token: t}}\n",
            self.url()
        )
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
    }
}

/// One connection: one request, one answer, then closed.
fn serve(mut conn: TcpStream, routes: &Routes, stop: &AtomicBool, sent: &AtomicU64) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.split_whitespace().nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or("/");
    let not_found = Reply::Body(
        404,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": format!("{path} not found")})
            .to_string(),
    );
    match routes.0.get(path).unwrap_or(&not_found) {
        Reply::Body(code, body) => {
            let head = format!(
                "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            if conn.write_all(head.as_bytes()).and_then(|()| conn.write_all(body.as_bytes())).is_ok() {
                sent.fetch_add(body.len() as u64, Ordering::Relaxed);
            }
        }
        Reply::Endless(prefix) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
            let chunk = |data: &[u8]| [format!("{:x}\r\n", data.len()).as_bytes(), data, b"\r\n"].concat();
            if conn.write_all(head.as_bytes()).and_then(|()| conn.write_all(&chunk(prefix.as_bytes()))).is_err() {
                return;
            }
            let spaces = chunk(&[b' '; 64 * 1024]);
            while !stop.load(Ordering::Relaxed) {
                if conn.write_all(&spaces).is_err() {
                    return;
                }
                sent.fetch_add(64 * 1024, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}
