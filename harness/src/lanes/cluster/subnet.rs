//! The kind network's IPv4 subnet, from `docker network inspect kind` or `podman network
//! inspect kind`, and the LB IPAM block derived from it the way Cilium's CI does: the /28 that
//! holds `<prefix>.255.200` of a /16 (generally: the /28 holding the address 55 below the
//! subnet's broadcast address), far from the addresses kind hands to nodes.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use serde_json::Value;

/// An IPv4 network, canonical (host bits zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Net {
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

/// Why a subnet, or the kind network's pool block, could not be had.
#[derive(Debug, thiserror::Error)]
pub enum SubnetError {
    #[error("{text:?} is not a CIDR like 172.18.0.0/16")]
    NotCidr { text: String },
    #[error("{text:?}: {addr:?} is not an IPv4 address")]
    NotIpv4 { text: String, addr: String, source: std::net::AddrParseError },
    #[error("{text:?}: bad prefix length {prefix:?}")]
    BadPrefix { text: String, prefix: String },
    #[error("the kind network {subnet} is smaller than a /24; LB IPAM needs a /28 away from the node addresses")]
    TooSmall { subnet: Ipv4Net },
    #[error("network inspect output is not JSON ({source}): {snippet}")]
    NotJson { snippet: String, source: serde_json::Error },
    #[error("the kind network has no IPv4 subnet (subnets: {})", if .subnets.is_empty() { "none".into() } else { .subnets.join(", ") })]
    NoIpv4 { subnets: Vec<String> },
}

impl FromStr for Ipv4Net {
    type Err = SubnetError;
    fn from_str(s: &str) -> Result<Self, SubnetError> {
        let (a, p) = s.split_once('/').ok_or_else(|| SubnetError::NotCidr { text: s.into() })?;
        let addr: Ipv4Addr = a.parse().map_err(|source| SubnetError::NotIpv4 { text: s.into(), addr: a.into(), source })?;
        let prefix: u8 = p.parse().ok().filter(|p| *p <= 32).ok_or_else(|| SubnetError::BadPrefix { text: s.into(), prefix: p.into() })?;
        let mask = mask(prefix);
        Ok(Ipv4Net { addr: Ipv4Addr::from(u32::from(addr) & mask), prefix })
    }
}

impl fmt::Display for Ipv4Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn mask(prefix: u8) -> u32 {
    if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) }
}

impl Ipv4Net {
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & mask(self.prefix) == u32::from(self.addr)
    }
    fn broadcast(&self) -> u32 {
        u32::from(self.addr) | !mask(self.prefix)
    }
}

/// The /28 handed to LB IPAM.
pub type PoolBlock = Ipv4Net;

/// The pool block for a kind subnet. A subnet smaller than /25 leaves no room away from the
/// node addresses, so it is refused with the reason.
pub fn pool_block(subnet: &Ipv4Net) -> Result<PoolBlock, SubnetError> {
    if subnet.prefix > 24 {
        return Err(SubnetError::TooSmall { subnet: *subnet });
    }
    let anchor = subnet.broadcast() - 55; // .255.200 of a /16, .200 of a /24
    Ok(Ipv4Net { addr: Ipv4Addr::from(anchor & mask(28)), prefix: 28 })
}

/// The first IPv4 subnet in `docker network inspect` or `podman network inspect` output.
pub fn parse_inspect(output: &str) -> Result<Ipv4Net, SubnetError> {
    let v: Value = serde_json::from_str(output.trim()).map_err(|source| SubnetError::NotJson { snippet: snippet(output), source })?;
    let net = v.as_array().and_then(|a| a.first()).unwrap_or(&v);
    // docker: IPAM.Config[].Subnet; podman 4+: subnets[].subnet.
    let docker =
        net.pointer("/IPAM/Config").and_then(Value::as_array).into_iter().flatten().filter_map(|c| c.get("Subnet").and_then(Value::as_str));
    let podman = net.get("subnets").and_then(Value::as_array).into_iter().flatten().filter_map(|c| c.get("subnet").and_then(Value::as_str));
    let all: Vec<&str> = docker.chain(podman).collect();
    all.iter()
        .find_map(|s| s.parse::<Ipv4Net>().ok())
        .ok_or_else(|| SubnetError::NoIpv4 { subnets: all.iter().map(|s| s.to_string()).collect() })
}

fn snippet(s: &str) -> String {
    let t: String = s.chars().take(200).collect();
    if s.len() > 200 { format!("{t}...") } else { t }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_output_dual_stack_takes_the_ipv4_subnet() {
        // Shape of `docker network inspect kind` (Docker 27) for kind's dual-stack network.
        let out = r#"[{"Name":"kind","Id":"0f1e","Driver":"bridge","EnableIPv6":true,
            "IPAM":{"Driver":"default","Options":{},"Config":[{"Subnet":"fc00:f853:ccd:e793::/64","Gateway":"fc00:f853:ccd:e793::1"},{"Subnet":"172.18.0.0/16","Gateway":"172.18.0.1"}]}}]"#;
        let net = parse_inspect(out).unwrap();
        assert_eq!(net.to_string(), "172.18.0.0/16");
        let block = pool_block(&net).unwrap();
        assert_eq!(block.to_string(), "172.18.255.192/28");
        // Cilium's CI block .255.200/28 and the conformance suite's usable .206 lie inside it.
        assert!(block.contains("172.18.255.200".parse().unwrap()));
        assert!(block.contains("172.18.255.206".parse().unwrap()));
        assert!(!block.contains("172.18.0.2".parse().unwrap()));
    }

    #[test]
    fn podman_output_and_small_subnets() {
        let out = r#"[{"name":"kind","driver":"bridge","subnets":[{"subnet":"10.89.0.0/24","gateway":"10.89.0.1"}],"ipv6_enabled":false}]"#;
        let net = parse_inspect(out).unwrap();
        assert_eq!(pool_block(&net).unwrap().to_string(), "10.89.0.192/28");
        assert!(pool_block(&"10.0.0.0/26".parse().unwrap()).unwrap_err().to_string().contains("smaller than a /24"));
    }

    #[test]
    fn bad_outputs_are_explained() {
        assert!(parse_inspect("Error: No such network: kind").unwrap_err().to_string().contains("not JSON"));
        let v6 = r#"[{"IPAM":{"Config":[{"Subnet":"fc00::/64"}]}}]"#;
        assert!(parse_inspect(v6).unwrap_err().to_string().contains("no IPv4 subnet (subnets: fc00::/64)"));
        assert_eq!("172.18.3.4/16".parse::<Ipv4Net>().unwrap().to_string(), "172.18.0.0/16");
        assert!("172.18.0.0/33".parse::<Ipv4Net>().is_err());
        // The parser's own error stays reachable behind the text.
        let e = parse_inspect("Error: No such network: kind").unwrap_err();
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<serde_json::Error>()), "{e:?}");
        let e = "172.18.0.x/16".parse::<Ipv4Net>().unwrap_err();
        assert_eq!(e.to_string(), r#""172.18.0.x/16": "172.18.0.x" is not an IPv4 address"#);
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<std::net::AddrParseError>()), "{e:?}");
    }
}
