//! Waiting until a local Envoy listens on what it was given.

use std::net::SocketAddr;
use std::time::Duration;

use super::process::EnvoyProcess;

/// Waits until Envoy answers on `listeners` (name, addresses) as it will from then on: no listener of it is still
/// warming (each is active, or refused with an `error_state`), and every address of every active
/// listener accepts a connection, so the listener is on Envoy's worker. From then on a static
/// local Envoy picks the same filter chain for the same ClientHello every time. Returns what
/// was not ready when `timeout` passed.
pub async fn wait_listening(envoy: &EnvoyProcess, listeners: &[(String, Vec<SocketAddr>)], timeout: Duration) -> Result<(), String> {
    use crate::observe::envoy_dump::{self, ListenerState};
    const WARMING: &str = "listener_manager.total_listeners_warming";
    let deadline = tokio::time::Instant::now() + timeout;
    let admin = envoy.admin();
    let pause = Duration::from_millis(10);
    let mut last = String::from("no answer from the admin interface");
    let active: Vec<SocketAddr> = loop {
        // The warming gauge is cheap to read; the dump (which says warming too) is read once the
        // gauge says nothing warms, or has no answer.
        let warming = admin.stats(&format!("^{}$", WARMING.replace('.', r"\."))).await.ok().and_then(|s| s.number(WARMING));
        if let Some(n) = warming.filter(|n| *n > 0) {
            last = format!("{n} listener(s) warming");
        } else {
            match admin
                .dynamic_listeners_dump()
                .await
                .map_err(|e| e.to_string())
                .and_then(|d| envoy_dump::summarize_bytes(&d, "local envoy /config_dump", false).map_err(|e| e.to_string()))
            {
                Ok(summary) => {
                    let mut addrs = Vec::new();
                    let mut pending = Vec::new();
                    for (name, addresses) in listeners {
                        match summary.listener(name).map(|x| x.state) {
                            Some(ListenerState::Active) => {
                                addrs.extend(addresses.iter().copied());
                            }
                            // Refused: nothing listens there, and nothing will.
                            Some(ListenerState::Error) => {}
                            Some(other) => pending.push(format!("{name} {}", other.as_str())),
                            None => pending.push(format!("{name} absent")),
                        }
                    }
                    if pending.is_empty() {
                        break addrs;
                    }
                    last = pending.join(", ");
                }
                Err(e) => last = e,
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("Envoy's listeners were not ready within {timeout:?}: {last}"));
        }
        tokio::time::sleep(pause).await;
    };
    for addr in active {
        loop {
            match tokio::time::timeout_at(deadline, tokio::net::TcpStream::connect(addr)).await {
                Ok(Ok(_)) => break,
                Ok(Err(e)) if tokio::time::Instant::now() < deadline => last = e.to_string(),
                Ok(Err(e)) => return Err(format!("Envoy's listener on {addr} did not accept within {timeout:?}: {e}")),
                Err(_) => return Err(format!("Envoy's listener on {addr} did not accept within {timeout:?}: {last}")),
            }
            tokio::time::sleep(pause).await;
        }
    }
    Ok(())
}
