//! The backends' HTTP/1.1 side: answer every well-formed request with 200 and the backend's
//! name; close on anything else. Never panics on what a peer sends.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::observe::probe::BACKEND_HEADER;
use crate::types::BackendName;

/// Request heads larger than this are garbage as far as a backend is concerned.
const HEAD_LIMIT: usize = 16 * 1024;
/// Request bodies are read and dropped up to this size; beyond it the connection is closed.
const BODY_DISCARD_LIMIT: u64 = 1024 * 1024;

/// The body every answer carries; the probe's tests and the judge read it.
pub(crate) fn body_for(name: &BackendName, sni: Option<&str>) -> String {
    format!("backend={name} sni={}\n", sni.unwrap_or("none"))
}

/// Serves requests on one connection until the peer closes, asks to close, or sends garbage.
/// A connection that sends nothing is held until the peer goes away.
pub(crate) async fn serve<S>(mut stream: S, name: &BackendName, sni: Option<&str>, requests: impl Fn()) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    loop {
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            if buf.len() > HEAD_LIMIT {
                return Ok(()); // not a request we will parse; drop the connection
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let Some(request) = parse_request(&buf[..head_end]) else {
            return Ok(());
        };
        buf.drain(..head_end);

        // Skip a request body so the next request on the connection starts where it should.
        let mut keep_alive = request.keep_alive && !request.chunked;
        match request.content_length {
            Some(n) if n > BODY_DISCARD_LIMIT => keep_alive = false,
            Some(n) => {
                let mut left = n;
                let from_buf = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
                buf.drain(..from_buf);
                left -= from_buf as u64;
                let mut sink = [0u8; 4096];
                while left > 0 {
                    let want = usize::try_from(left).unwrap_or(usize::MAX).min(sink.len());
                    let got = stream.read(&mut sink[..want]).await?;
                    if got == 0 {
                        return Ok(());
                    }
                    left -= got as u64;
                }
            }
            None => {}
        }

        requests();
        let body = body_for(name, sni);
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\n{BACKEND_HEADER}: {name}\r\ncontent-length: {}\r\nconnection: {}\r\n\r\n{body}",
            body.len(),
            if keep_alive { "keep-alive" } else { "close" },
        );
        stream.write_all(response.as_bytes()).await?;
        stream.flush().await?;
        if !keep_alive {
            // For TLS this sends close_notify, so the client sees a clean end of the body.
            let _ = stream.shutdown().await;
            return Ok(());
        }
    }
}

struct Request {
    keep_alive: bool,
    content_length: Option<u64>,
    chunked: bool,
}

/// `METHOD SP target SP HTTP/1.x` and headers; `None` for anything else.
fn parse_request(head: &[u8]) -> Option<Request> {
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.split("\r\n");
    let mut parts = lines.next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    let well_formed = parts.next().is_none()
        && !method.is_empty()
        && method.bytes().all(|b| b.is_ascii_uppercase())
        && !target.is_empty()
        && (version == "HTTP/1.1" || version == "HTTP/1.0");
    if !well_formed {
        return None;
    }
    let mut request = Request { keep_alive: version == "HTTP/1.1", content_length: None, chunked: false };
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => request.content_length = Some(value.parse().ok()?),
            "transfer-encoding" => request.chunked = true,
            "connection" if value.eq_ignore_ascii_case("close") => request.keep_alive = false,
            "connection" if value.eq_ignore_ascii_case("keep-alive") => request.keep_alive = true,
            _ => {}
        }
    }
    Some(request)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn exchange(input: &[u8]) -> String {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let name = BackendName::new("web").unwrap();
        let task = tokio::spawn(async move { serve(server, &name, Some("a.test"), || {}).await });
        client.write_all(input).await.unwrap();
        client.shutdown().await.unwrap();
        let mut out = Vec::new();
        client.read_to_end(&mut out).await.unwrap();
        task.await.unwrap().unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn answers_requests_and_keeps_alive() {
        let out = exchange(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 2, "{out}");
        assert!(out.contains("x-layout-gate-backend: web\r\n"), "{out}");
        assert!(out.ends_with("backend=web sni=a.test\n"), "{out}");
    }

    #[tokio::test]
    async fn garbage_closes_without_answer() {
        assert_eq!(exchange(b"\x16\x03\x01\x00\x05hello\r\n\r\n").await, "");
        assert_eq!(exchange(b"GET / SPDY/3\r\n\r\n").await, "");
        assert_eq!(exchange(b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n").await, "");
        assert_eq!(exchange(&vec![b'a'; HEAD_LIMIT + 10]).await, "");
    }
}
