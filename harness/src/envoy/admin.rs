//! A minimal HTTP/1.1 client for Envoy's admin interface, over a plain TCP socket.
//!
//! The admin interface is loopback-only and we ask a handful of fixed questions, so one request
//! per connection (`Connection: close`, read to EOF) is enough and avoids an HTTP dependency.
//! Every call is bounded by the client's timeout. Envoy's HTTP/1.1 codec may answer with chunked
//! encoding, which is decoded here.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Default bound for one admin request. `/config_dump` of a test Envoy is a few hundred KiB.
pub const DEFAULT_ADMIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Refuse bodies beyond this; a test Envoy's dump is far smaller, so anything bigger is a bug.
const MAX_RESPONSE: usize = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("admin {method} {path} on {addr}: {source}")]
    Io { addr: SocketAddr, method: &'static str, path: String, source: std::io::Error },

    #[error("admin {method} {path} on {addr}: no complete answer within {timeout:?}")]
    Timeout { addr: SocketAddr, method: &'static str, path: String, timeout: Duration },

    #[error("admin {path} on {addr}: malformed HTTP response ({reason})")]
    Malformed { addr: SocketAddr, path: String, reason: String },

    #[error("admin {path} on {addr}: HTTP {status}: {body}")]
    Status { addr: SocketAddr, path: String, status: u16, body: String },

    #[error("admin {path} on {addr}: body is not JSON: {source}")]
    Json { addr: SocketAddr, path: String, source: serde_json::Error },
}

/// A complete answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

impl AdminResponse {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One line of `/stats`: counters and gauges are numbers; `*.version_text` and the like are
/// quoted strings; histograms are kept as their raw text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatValue {
    Number(u64),
    Text(String),
}

/// Parsed `/stats` output, by full stat name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats(pub BTreeMap<String, StatValue>);

impl Stats {
    /// Parses `name: value` lines; lines that do not have that shape are skipped (Envoy prints
    /// nothing else today, and a stats reader should not fail on a cosmetic change).
    pub fn parse(text: &str) -> Stats {
        let mut map = BTreeMap::new();
        for line in text.lines() {
            let Some((name, value)) = line.split_once(": ") else { continue };
            let value = value.trim();
            let parsed = match value.parse::<u64>() {
                Ok(n) => StatValue::Number(n),
                Err(_) => StatValue::Text(value.trim_matches('"').to_string()),
            };
            map.insert(name.trim().to_string(), parsed);
        }
        Stats(map)
    }

    /// A counter or gauge; `None` when absent or not a number.
    pub fn number(&self, name: &str) -> Option<u64> {
        match self.0.get(name) {
            Some(StatValue::Number(n)) => Some(*n),
            _ => None,
        }
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        match self.0.get(name) {
            Some(StatValue::Text(t)) => Some(t),
            _ => None,
        }
    }
}

/// A client for one Envoy's admin address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdminClient {
    addr: SocketAddr,
    timeout: Duration,
}

impl AdminClient {
    pub fn new(addr: SocketAddr) -> Self {
        AdminClient { addr, timeout: DEFAULT_ADMIN_TIMEOUT }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Any GET; the status is returned, not judged.
    pub async fn get(&self, path: &str) -> Result<AdminResponse, AdminError> {
        self.request("GET", path).await
    }

    /// POST without a body (e.g. `/quitquitquit`, `/healthcheck/fail`).
    pub async fn post(&self, path: &str) -> Result<AdminResponse, AdminError> {
        self.request("POST", path).await
    }

    /// `GET /ready` answered 200 (Envoy says `LIVE`).
    pub async fn ready(&self) -> Result<bool, AdminError> {
        Ok(self.get("/ready").await?.status == 200)
    }

    /// The full `/config_dump`, raw bytes (what the summarizer and evidence take).
    pub async fn config_dump(&self) -> Result<Vec<u8>, AdminError> {
        self.get_ok("/config_dump").await
    }

    /// `/config_dump?resource=dynamic_listeners`, what `cilium-dbg envoy admin config
    /// listeners` asks a real cilium-envoy for.
    pub async fn dynamic_listeners_dump(&self) -> Result<Vec<u8>, AdminError> {
        self.get_ok("/config_dump?resource=dynamic_listeners").await
    }

    /// A dump parsed as JSON.
    pub async fn config_dump_json(&self, query: Option<&str>) -> Result<serde_json::Value, AdminError> {
        let path = match query {
            Some(q) => format!("/config_dump?{q}"),
            None => "/config_dump".to_string(),
        };
        let body = self.get_ok(&path).await?;
        serde_json::from_slice(&body).map_err(|source| AdminError::Json { addr: self.addr, path, source })
    }

    /// `/stats?filter=<regex>` (Envoy applies the regex to stat names).
    pub async fn stats(&self, filter_regex: &str) -> Result<Stats, AdminError> {
        let body = self.get_ok(&stats_path(filter_regex)).await?;
        Ok(Stats::parse(&String::from_utf8_lossy(&body)))
    }

    async fn get_ok(&self, path: &str) -> Result<Vec<u8>, AdminError> {
        let resp = self.get(path).await?;
        self.ensure_ok(path, resp)
    }

    fn ensure_ok(&self, path: &str, resp: AdminResponse) -> Result<Vec<u8>, AdminError> {
        if resp.status == 200 {
            Ok(resp.body)
        } else {
            let mut body = resp.text();
            body.truncate(500);
            Err(AdminError::Status { addr: self.addr, path: path.to_string(), status: resp.status, body })
        }
    }

    async fn request(&self, method: &'static str, path: &str) -> Result<AdminResponse, AdminError> {
        let io = |source| AdminError::Io { addr: self.addr, method, path: path.to_string(), source };
        let exchange = async {
            let mut stream = tokio::net::TcpStream::connect(self.addr).await.map_err(io)?;
            stream.write_all(&request_bytes(method, path, self.addr)).await.map_err(io)?;
            let mut raw = Vec::new();
            // `take` bounds memory; the +1 lets us notice an oversized answer.
            (&mut stream).take(MAX_RESPONSE as u64 + 1).read_to_end(&mut raw).await.map_err(io)?;
            Ok(raw)
        };
        let raw = tokio::time::timeout(self.timeout, exchange).await.map_err(|_| AdminError::Timeout {
            addr: self.addr,
            method,
            path: path.to_string(),
            timeout: self.timeout,
        })??;
        self.parse(path, &raw)
    }

    /// The same request, blocking (std sockets). For the start poll in process.rs, which runs
    /// outside any runtime.
    pub fn get_blocking(&self, path: &str) -> Result<AdminResponse, AdminError> {
        let method = "GET";
        let io = |source: std::io::Error| {
            if matches!(source.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
                AdminError::Timeout { addr: self.addr, method, path: path.to_string(), timeout: self.timeout }
            } else {
                AdminError::Io { addr: self.addr, method, path: path.to_string(), source }
            }
        };
        let deadline = std::time::Instant::now() + self.timeout;
        let mut stream = std::net::TcpStream::connect_timeout(&self.addr, self.timeout).map_err(io)?;
        let mut raw = Vec::new();
        stream.write_all(&request_bytes(method, path, self.addr)).map_err(io)?;
        let mut buf = [0u8; 16 * 1024];
        loop {
            // A per-read timeout alone would let a trickling peer run forever; re-arm it with
            // what is left of the overall budget.
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(io(std::io::ErrorKind::TimedOut.into()));
            }
            stream.set_read_timeout(Some(left)).map_err(io)?;
            let n = stream.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            raw.extend_from_slice(&buf[..n]);
            if raw.len() > MAX_RESPONSE {
                break;
            }
        }
        self.parse(path, &raw)
    }

    fn parse(&self, path: &str, raw: &[u8]) -> Result<AdminResponse, AdminError> {
        parse_response(raw).map_err(|reason| AdminError::Malformed { addr: self.addr, path: path.to_string(), reason })
    }
}

/// `/stats?filter=<percent-encoded regex>`.
pub fn stats_path(filter_regex: &str) -> String {
    format!("/stats?filter={}", percent_encode(filter_regex))
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn request_bytes(method: &str, path: &str, addr: SocketAddr) -> Vec<u8> {
    format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: layout-gate\r\nAccept: */*\r\nConnection: close\r\n\r\n").into_bytes()
}

/// Parses a whole HTTP/1.1 response read to EOF.
fn parse_response(raw: &[u8]) -> Result<AdminResponse, String> {
    if raw.len() > MAX_RESPONSE {
        return Err(format!("response larger than {MAX_RESPONSE} bytes"));
    }
    let head_end = find(raw, b"\r\n\r\n").ok_or_else(|| format!("no end of headers in {} bytes: {:?}", raw.len(), preview(raw)))?;
    let head = std::str::from_utf8(&raw[..head_end]).map_err(|_| "headers are not UTF-8".to_string())?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/1."))
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| format!("bad content-length {value:?}"))?);
        }
    }
    let rest = &raw[head_end + 4..];
    let body = if chunked {
        decode_chunked(rest)?
    } else if let Some(len) = length {
        if rest.len() < len {
            return Err(format!("body cut short: {} of {len} bytes", rest.len()));
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(AdminResponse { status, body })
}

fn decode_chunked(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = find(rest, b"\r\n").ok_or("chunk size line not terminated")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).map_err(|_| "chunk size not UTF-8")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| format!("bad chunk size {size_text:?}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size + 2 {
            return Err(format!("chunk cut short: want {size} bytes, have {}", rest.len()));
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn preview(raw: &[u8]) -> String {
    String::from_utf8_lossy(&raw[..raw.len().min(200)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_content_length_and_chunked() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nLIVE\n").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"LIVE\n"[..]));
        let r = parse_response(
            b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nPRE_\r\n9;x=y\r\nINITIALIZ\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((r.status, r.text().as_str()), (503, "PRE_INITIALIZ"));
        assert!(parse_response(b"garbage").unwrap_err().contains("no end of headers"));
        assert!(parse_response(b"SSH-2.0 x\r\n\r\n").unwrap_err().contains("bad status line"));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nab").unwrap_err().contains("cut short"));
    }

    #[test]
    fn parses_stats_lines() {
        let s = Stats::parse(
            "listener_manager.lds.update_rejected: 1\nlistener_manager.lds.update_success: 2\nlistener_manager.lds.version_text: \"1\"\ncluster.x.upstream_cx_length_ms: P0(nan,1) P25(nan,2)\n",
        );
        assert_eq!(s.number("listener_manager.lds.update_rejected"), Some(1));
        assert_eq!(s.number("listener_manager.lds.update_success"), Some(2));
        assert_eq!(s.text("listener_manager.lds.version_text"), Some("1"));
        assert_eq!(s.number("listener_manager.lds.version_text"), None);
        assert!(s.text("cluster.x.upstream_cx_length_ms").unwrap().starts_with("P0("));
    }

    #[test]
    fn stats_filter_is_percent_encoded() {
        assert_eq!(stats_path("^listener_manager\\.lds\\."), "/stats?filter=%5Elistener_manager%5C.lds%5C.");
    }
}
