//! The run's own network (`layout_gate::netns`), as root: made, used, removed, and what a killed
//! run left swept. The e2e runner runs as root, so these fail (never skip) without root or `ip`.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Command;

use layout_gate::netns::{self, RunNetwork};

fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip {}: {e} (apt-get install iproute2)", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A namespace has its own address, reaches nothing but the run's /24 (its only routes are the
/// /24 and the default via the gateway, and the bridge forwards nothing on), serves from an
/// in-process listener, runs programs inside, and everything is gone after the drops.
pub fn a_namespace_reaches_only_the_run_network_and_goes() -> Result<(), String> {
    let run = RunNetwork::create("e2e").map_err(|e| e.to_string())?;
    let ns = run.namespace("one").map_err(|e| e.to_string())?;
    let (bridge, name) = (run.bridge().to_string(), ns.name().to_string());
    let out = ns.command("ip").args(["-j", "-4", "route", "show"]).output().map_err(|e| format!("ip route in {name}: {e}"))?;
    let routes: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).map_err(|e| format!("ip -j route in {name}: {e}"))?;
    let seen: Vec<String> =
        routes.iter().map(|r| format!("{} via {}", r["dst"].as_str().unwrap_or("?"), r["gateway"].as_str().unwrap_or("-"))).collect();
    let want = vec![format!("default via {}", run.gateway()), format!("{} via -", run.net())];
    if seen != want {
        return Err(format!("routes inside {name}: {seen:?}, want only {want:?}"));
    }
    let fwd = std::fs::read_to_string(format!("/proc/sys/net/ipv4/conf/{bridge}/forwarding")).map_err(|e| e.to_string())?;
    if fwd.trim() != "0" {
        return Err(format!("{bridge} forwards ({fwd:?}): what the namespaces send elsewhere could be routed off the machine"));
    }
    let addrs = ns.command("ip").args(["-4", "-o", "addr", "show", "dev", "eth0"]).output().map_err(|e| e.to_string())?;
    if !String::from_utf8_lossy(&addrs.stdout).contains(&format!("inet {}/24", ns.addr())) {
        return Err(format!("{name}'s eth0 does not hold {}: {}", ns.addr(), String::from_utf8_lossy(&addrs.stdout)));
    }
    let listener = ns.tcp_listener(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)).map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let server = std::thread::spawn(move || -> std::io::Result<()> { listener.accept()?.0.write_all(b"from the namespace") });
    let mut got = String::new();
    std::net::TcpStream::connect((ns.addr(), port))
        .and_then(|mut s| s.read_to_string(&mut got))
        .map_err(|e| format!("connecting to {}:{port}: {e}", ns.addr()))?;
    server.join().map_err(|_| "the listener's thread panicked".to_string())?.map_err(|e| e.to_string())?;
    if got != "from the namespace" {
        return Err(format!("read {got:?}"));
    }
    let mut sleeper = ns.command("sleep").arg("600").spawn().map_err(|e| e.to_string())?;
    drop(ns);
    let status = sleeper.wait().map_err(|e| e.to_string())?;
    if status.success() {
        return Err("the program in the namespace outlived it".into());
    }
    drop(run);
    if Path::new("/run/netns").join(&name).exists() {
        return Err(format!("{name} is left after its drop"));
    }
    if ip(&["link", "show", "dev", &bridge]).is_ok() {
        return Err(format!("{bridge} is left after its drop"));
    }
    Ok(())
}

/// A process that made a network and was killed (SIGKILL: no drop ran) leaves its bridge and
/// namespaces; the next `RunNetwork::create` removes them.
pub fn what_a_killed_run_left_is_swept() -> Result<(), String> {
    // A child stands in for the killed run: its leftovers are named for it as the module names
    // them (the pid and its start time), made with `ip` as the module makes them.
    let mut child = Command::new("sleep").arg("600").spawn().map_err(|e| e.to_string())?;
    let pid = child.id();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    let start = stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(19)).ok_or("no start time")?.to_string();
    let ns = format!("{}{pid}.{start}-0-killed", netns::NS_PREFIX);
    let br = format!("{}b{pid:x}x0", netns::IF_PREFIX);
    ip(&["netns", "add", &ns])?;
    ip(&["link", "add", "name", &br, "type", "bridge"])?;
    ip(&["link", "set", "dev", &br, "alias", &format!("layout-gate {pid}.{start} killed")])?;
    // While the owner lives, nothing of it is swept.
    let kept = netns::sweep().map_err(|e| e.to_string())?;
    if kept.iter().any(|r| *r == ns || *r == br) {
        return Err(format!("swept a live run's {kept:?}"));
    }
    child.kill().map_err(|e| e.to_string())?;
    child.wait().map_err(|e| e.to_string())?;
    let run = RunNetwork::create("e2e-sweep").map_err(|e| e.to_string())?;
    drop(run);
    if Path::new("/run/netns").join(&ns).exists() || ip(&["link", "show", "dev", &br]).is_ok() {
        let _ = ip(&["netns", "delete", &ns]);
        let _ = ip(&["link", "del", "dev", &br]);
        return Err(format!("{ns} or {br} of a killed run is left after the next create"));
    }
    Ok(())
}
