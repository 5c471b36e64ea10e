#!/usr/bin/env bash
# Counts the packets this machine sends to private ranges off the machine (10/8, 172.16/12,
# 192.168/16 and fc00::/7, leaving by any interface but lo), with an nftables output counter, and
# remembers each destination and port. A network namespace the run creates has its own output
# hook, so what stays inside it is not counted; only what the root namespace sends is.
# Nor is what the root namespace sends by the run's own interfaces (names starting with `lg`,
# harness/src/netns.rs): the run's bridge has no port but the veths of the run's namespaces, so a
# packet to the run's /24 goes into those namespaces and nowhere else; it never leaves the machine.
# Queries to the machine's DNS resolver (port 53 of a nameserver in /etc/resolv.conf) are not
# counted: every name lookup sends them, and they are the machine's, not a test's.
#
#   scripts/offbox-counter.sh start     add the table (needs root and nft: apt-get install nftables)
#   scripts/offbox-counter.sh report    print the count and the destinations; exit 1 when any
#   scripts/offbox-counter.sh stop      remove the table
#   scripts/offbox-counter.sh around CMD...   start, run CMD, report, stop; exit 1 when CMD failed
#                                             or a packet left
set -euo pipefail
table=layout_gate_offbox
nft_cmd() { nft "$@"; }

need() {
  [[ "$(id -u)" -eq 0 ]] || { echo "offbox-counter: needs root (nftables); nothing is counted" >&2; exit 2; }
  if ! command -v nft >/dev/null; then
    # As root with apt-get (as in CI), install it, as the report tools install Chromium.
    if [[ "${1:-}" == install ]] && command -v apt-get >/dev/null; then
      echo "offbox-counter: apt-get install nftables" >&2
      apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables >&2
    fi
    command -v nft >/dev/null || { echo "offbox-counter: nft is missing: apt-get install nftables" >&2; exit 2; }
  fi
}

resolvers() {
  awk '$1 == "nameserver" && $2 ~ /^[0-9.]+$/ {print $2}' /etc/resolv.conf | paste -sd, -
}

start() {
  need install
  nft_cmd delete table inet "$table" 2>/dev/null || true
  local dns dns_rule=""
  dns="$(resolvers)"
  [[ -z "$dns" ]] || dns_rule="ip daddr { $dns } meta l4proto { tcp, udp } th dport 53 accept"
  nft_cmd -f - <<EOF
table inet $table {
  counter offbox {}
  set seen4 { type ipv4_addr . inet_service; flags dynamic; size 4096; }
  set seen6 { type ipv6_addr . inet_service; flags dynamic; size 4096; }
  chain output {
    type filter hook output priority 0; policy accept;
    oifname "lo" accept
    oifname "lg*" accept
    $dns_rule
    ip daddr { 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 } meta l4proto { tcp, udp } add @seen4 { ip daddr . th dport } counter name offbox
    ip daddr { 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 } meta l4proto != { tcp, udp } counter name offbox
    ip6 daddr fc00::/7 meta l4proto { tcp, udp } add @seen6 { ip6 daddr . th dport } counter name offbox
  }
}
EOF
  echo "offbox-counter: counting packets to 10/8, 172.16/12, 192.168/16 and fc00::/7 off this machine${dns:+ (not DNS to $dns:53)}" >&2
}

report() {
  need
  local packets
  packets="$(nft_cmd list counter inet "$table" offbox 2>/dev/null | sed -n 's/.*packets \([0-9]*\).*/\1/p' | head -n1)" || true
  [[ -n "$packets" ]] || { echo "offbox-counter: the counter is not there (was it started?)" >&2; exit 2; }
  echo "offbox-counter: $packets packet(s) to private ranges left this machine"
  if [[ "$packets" -ne 0 ]]; then
    echo "offbox-counter: destinations:"
    nft_cmd list set inet "$table" seen4 | sed -n '/elements/,/}/p'
    nft_cmd list set inet "$table" seen6 | sed -n '/elements/,/}/p'
    return 1
  fi
}

stop() {
  nft_cmd delete table inet "$table" 2>/dev/null || true
}

case "${1:-}" in
  start) start ;;
  report) report ;;
  stop) stop ;;
  around)
    shift
    start
    trap stop EXIT
    rc=0
    "$@" || rc=$?
    report || rc=1
    exit $rc
    ;;
  *) echo "usage: scripts/offbox-counter.sh start|report|stop|around CMD..." >&2; exit 2 ;;
esac
