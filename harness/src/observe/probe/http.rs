//! The one HTTP/1.1 request a probe may send after connecting, and the answer it records.
//!
//! Hand-written on purpose: the probe needs exactly one `GET` with `Connection: close`, a
//! bounded read, and a parser that turns anything a server sends into either an answer or a
//! sentence, never a panic. A full HTTP client would add dependencies and hide the bytes.

use std::collections::BTreeMap;
use std::io;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::types::InvalidValue;

/// The header our in-process backends (and the TLS echo pods of the kind lane) name themselves in.
pub const BACKEND_HEADER: &str = "x-layout-gate-backend";

/// Body bytes kept in an answer; the rest is counted as truncated, not read.
pub const BODY_LIMIT: usize = 4096;
/// A response whose status line and headers exceed this is refused as malformed.
const HEAD_LIMIT: usize = 16 * 1024;
/// Raw bytes read after the headers at most (chunked framing overhead included).
const RAW_BODY_LIMIT: usize = BODY_LIMIT + 1024;

/// Response headers an answer keeps; besides these, every `x-layout-gate-*` and `x-envoy-*`.
const KEPT_HEADERS: &[&str] = &["server", "content-type", "content-length", "transfer-encoding", "location", "connection", "via"];

/// Where an answer says which backend served it. Rules are tried in order; the first that
/// yields a non-empty string wins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServedBy {
    /// A response header (name compared case-insensitively).
    Header(String),
    /// A top-level string field of a JSON body, e.g. `pod` from the Gateway API `echo-basic`
    /// image.
    JsonField(String),
}

impl ServedBy {
    fn extract(&self, headers: &[(String, String)], body: &[u8], body_truncated: bool) -> Option<String> {
        match self {
            ServedBy::Header(name) => {
                headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string()).filter(|v| !v.is_empty())
            }
            ServedBy::JsonField(field) => {
                if body_truncated {
                    return None; // a cut JSON document does not parse; say nothing rather than guess
                }
                let value: serde_json::Value = serde_json::from_slice(body).ok()?;
                value.get(field)?.as_str().map(str::to_string).filter(|v| !v.is_empty())
            }
        }
    }
}

/// A `GET` request: a path, an optional Host (default: the SNI, else the address), and the
/// rules that find the serving backend in the answer. Built only through [`HttpRequestSpec::get`]
/// so no request line can carry spaces or CR/LF (hence no `Deserialize`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpRequestSpec {
    path: String,
    host: Option<String>,
    served_by: Vec<ServedBy>,
}

impl HttpRequestSpec {
    /// `GET path`, with the backend named by the [`BACKEND_HEADER`] header.
    pub fn get(path: &str) -> Result<Self, InvalidValue> {
        if !path.starts_with('/') || !is_token_text(path) {
            return Err(InvalidValue(format!("HTTP path {path:?} must start with '/' and contain no spaces or control characters")));
        }
        Ok(HttpRequestSpec { path: path.to_string(), host: None, served_by: vec![ServedBy::Header(BACKEND_HEADER.into())] })
    }

    /// Sends `host` as the Host header instead of the SNI.
    pub fn with_host(mut self, host: &str) -> Result<Self, InvalidValue> {
        if host.is_empty() || !is_token_text(host) || host.contains('/') {
            return Err(InvalidValue(format!("HTTP Host {host:?} must be a host[:port] without spaces or control characters")));
        }
        self.host = Some(host.to_string());
        Ok(self)
    }

    /// Replaces the rules that find the serving backend (tried in order).
    pub fn with_served_by(mut self, rules: Vec<ServedBy>) -> Self {
        self.served_by = rules;
        self
    }

    pub fn path(&self) -> &str {
        &self.path
    }
    pub fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }
}

fn is_token_text(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_graphic())
}

/// What a server answered to the probe's request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpAnswer {
    pub status: u16,
    pub reason: String,
    /// Headers of interest (see module docs), names lower-cased; repeated headers joined by ", ".
    pub headers: BTreeMap<String, String>,
    /// Up to [`BODY_LIMIT`] bytes of body, decoded lossily as UTF-8.
    pub body: String,
    pub body_truncated: bool,
    /// The backend that served the request, by the request's [`ServedBy`] rules.
    pub served_by: Option<String>,
}

/// The HTTP part of a TLS probe: the handshake already succeeded, so a failing request does not
/// erase the certificate observation; it is recorded beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum HttpExchange {
    Answered(HttpAnswer),
    Failed { error: String },
}

impl HttpExchange {
    pub fn answer(&self) -> Option<&HttpAnswer> {
        match self {
            HttpExchange::Answered(a) => Some(a),
            HttpExchange::Failed { .. } => None,
        }
    }
}

/// Why an exchange failed: the transport (classified by the caller like any other I/O error),
/// or a response that is not HTTP/1.x.
#[derive(Debug)]
pub(crate) enum ExchangeError {
    Io(io::Error),
    Malformed(String),
}

impl From<io::Error> for ExchangeError {
    fn from(e: io::Error) -> Self {
        ExchangeError::Io(e)
    }
}

/// Sends the request and reads one response. The caller bounds it in time.
pub(crate) async fn exchange<S>(stream: &mut S, spec: &HttpRequestSpec, host: &str) -> Result<HttpAnswer, ExchangeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: layout-gate-probe\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        spec.path, host
    );
    stream.write_all(request.as_bytes()).await?;
    stream.flush().await?;

    let mut buf = Vec::with_capacity(2048);
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > HEAD_LIMIT {
            return Err(ExchangeError::Malformed(format!("response headers exceed {HEAD_LIMIT} bytes")));
        }
        match read_some(stream, &mut buf).await? {
            0 if buf.is_empty() => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
            0 => return Err(ExchangeError::Malformed(format!("response ended inside the headers after {} bytes", buf.len()))),
            _ => {}
        }
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| ExchangeError::Malformed("response headers are not UTF-8".into()))?;
    let (status, reason, headers) = parse_head(head).map_err(ExchangeError::Malformed)?;
    let mut raw_body = buf[head_end..].to_vec();

    let content_length = header(&headers, "content-length").and_then(|v| v.trim().parse::<usize>().ok());
    let chunked = header(&headers, "transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let no_body = (100..200).contains(&status) || status == 204 || status == 304;
    let want = match (no_body, content_length) {
        (true, _) => 0,
        (false, Some(n)) => n.min(BODY_LIMIT + 1),
        (false, None) => RAW_BODY_LIMIT,
    };
    while raw_body.len() < want {
        match read_some(stream, &mut raw_body).await {
            Ok(0) => break,
            Ok(_) => {}
            // Many servers close without TLS close_notify after `Connection: close`; the body
            // read so far is the body.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.into()),
        }
    }

    let mut body = if no_body {
        Vec::new()
    } else if chunked && content_length.is_none() {
        dechunk(&raw_body)
    } else {
        raw_body
    };
    let body_truncated = body.len() > BODY_LIMIT || content_length.is_some_and(|n| n > BODY_LIMIT);
    body.truncate(BODY_LIMIT);
    let served_by = spec.served_by.iter().find_map(|rule| rule.extract(&headers, &body, body_truncated));
    Ok(HttpAnswer {
        status,
        reason,
        headers: kept_headers(&headers),
        body: String::from_utf8_lossy(&body).into_owned(),
        body_truncated,
        served_by,
    })
}

async fn read_some<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>) -> io::Result<usize> {
    let mut chunk = [0u8; 4096];
    let n = stream.read(&mut chunk).await?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

type Head = (u16, String, Vec<(String, String)>);

/// Parses `HTTP/1.x NNN reason` and the header lines; names are lower-cased.
fn parse_head(head: &str) -> Result<Head, String> {
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1.x status line: {:?}", truncate(status_line, 80)));
    }
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|s| (100..1000).contains(s))
        .ok_or_else(|| format!("no status code in {:?}", truncate(status_line, 80)))?;
    let reason = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or_else(|| format!("header line without ':': {:?}", truncate(line, 80)))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    Ok((status, reason, headers))
}

fn kept_headers(headers: &[(String, String)]) -> BTreeMap<String, String> {
    let mut kept: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let keep = KEPT_HEADERS.contains(&name.as_str()) || name.starts_with("x-layout-gate-") || name.starts_with("x-envoy-");
        if keep {
            kept.entry(name.clone())
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(value)
                })
                .or_insert_with(|| value.clone());
        }
    }
    kept
}

/// Best-effort decoding of a chunked body that may be cut short; stops at the first thing that
/// is not a chunk.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = find(raw, b"\r\n") {
        let size_text = std::str::from_utf8(&raw[..line_end]).unwrap_or("");
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else { break };
        if size == 0 {
            break;
        }
        raw = &raw[line_end + 2..];
        let take = size.min(raw.len());
        out.extend_from_slice(&raw[..take]);
        if take < size || raw.len() < size + 2 {
            break;
        }
        raw = &raw[size + 2..];
    }
    out
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer_to(response: &[u8], spec: &HttpRequestSpec) -> Result<HttpAnswer, ExchangeError> {
        let (mut client, mut server) = tokio::io::duplex(64 * 1024);
        let response = response.to_vec();
        let server_task = tokio::spawn(async move {
            let mut req = vec![0u8; 1024];
            let n = server.read(&mut req).await.unwrap_or(0);
            let _ = server.write_all(&response).await;
            drop(server);
            String::from_utf8_lossy(&req[..n]).into_owned()
        });
        let result = exchange(&mut client, spec, "www.example.test").await;
        let request = server_task.await.expect("server task");
        assert!(request.starts_with("GET /x HTTP/1.1\r\nHost: www.example.test\r\n"), "{request}");
        assert!(request.contains("Connection: close\r\n"), "{request}");
        result
    }

    #[tokio::test]
    async fn content_length_body_and_header_name() {
        let spec = HttpRequestSpec::get("/x").unwrap();
        let a = answer_to(b"HTTP/1.1 200 OK\r\nX-Layout-Gate-Backend: web\r\nContent-Length: 5\r\nX-Other: no\r\n\r\nhello", &spec)
            .await
            .unwrap();
        assert_eq!((a.status, a.reason.as_str(), a.body.as_str()), (200, "OK", "hello"));
        assert_eq!(a.served_by.as_deref(), Some("web"));
        assert!(!a.body_truncated);
        assert!(a.headers.contains_key("x-layout-gate-backend") && !a.headers.contains_key("x-other"));
    }

    #[tokio::test]
    async fn json_pod_field_and_chunked_body() {
        let spec = HttpRequestSpec::get("/x")
            .unwrap()
            .with_served_by(vec![ServedBy::Header(BACKEND_HEADER.into()), ServedBy::JsonField("pod".into())]);
        let body = br#"{"path":"/x","pod":"echo-7c9d"}"#;
        let mut resp = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        resp.extend_from_slice(format!("{:x}\r\n", 10).as_bytes());
        resp.extend_from_slice(&body[..10]);
        resp.extend_from_slice(format!("\r\n{:x}\r\n", body.len() - 10).as_bytes());
        resp.extend_from_slice(&body[10..]);
        resp.extend_from_slice(b"\r\n0\r\n\r\n");
        let a = answer_to(&resp, &spec).await.unwrap();
        assert_eq!(a.body.as_bytes(), body);
        assert_eq!(a.served_by.as_deref(), Some("echo-7c9d"));
    }

    #[tokio::test]
    async fn long_bodies_are_truncated_and_garbage_is_malformed() {
        let spec = HttpRequestSpec::get("/x").unwrap();
        let mut resp = format!("HTTP/1.1 404 Not Found\r\ncontent-length: {}\r\n\r\n", BODY_LIMIT * 3).into_bytes();
        resp.extend(std::iter::repeat_n(b'a', BODY_LIMIT * 3));
        let a = answer_to(&resp, &spec).await.unwrap();
        assert_eq!(a.status, 404);
        assert!(a.body_truncated);
        assert_eq!(a.body.len(), BODY_LIMIT);
        assert_eq!(a.served_by, None);

        let err = answer_to(b"SSH-2.0-OpenSSH\r\n\r\n", &spec).await.unwrap_err();
        assert!(matches!(err, ExchangeError::Malformed(ref m) if m.contains("status line")), "{err:?}");
        let err = answer_to(b"", &spec).await.unwrap_err();
        assert!(matches!(err, ExchangeError::Io(ref e) if e.kind() == io::ErrorKind::UnexpectedEof), "{err:?}");
    }

    #[test]
    fn request_specs_refuse_injection() {
        assert!(HttpRequestSpec::get("x").is_err());
        assert!(HttpRequestSpec::get("/a b").is_err());
        assert!(HttpRequestSpec::get("/a\r\nX: y").is_err());
        assert!(HttpRequestSpec::get("/").unwrap().with_host("a.test\r\n").is_err());
        assert_eq!(HttpRequestSpec::get("/").unwrap().with_host("a.test:8080").unwrap().host(), Some("a.test:8080"));
    }
}
