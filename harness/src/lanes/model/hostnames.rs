//! Hostname arithmetic as Cilium does it: SNI intersection for the conflict check, and
//! `ComputeHosts` for which names a route's chain matches (cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/helpers.go:ComputeHosts; samePortCrossProtocolConflictedListeners (cilium#44889)).

/// `*.example.com` matches `a.example.com` and `a.b.example.com`, not `example.com`.
pub fn wildcard_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => host.len() > suffix.len() + 1 && host.ends_with(suffix) && host.as_bytes()[host.len() - suffix.len() - 1] == b'.',
        None => false,
    }
}

fn is_wild(h: &str) -> bool {
    h.starts_with("*.")
}

/// `SNIHostnamesIntersect`: an absent hostname is `*`; true if either side is `*` or they are
/// equal; wildcard against exact by suffix plus at least one label; two wildcards when they
/// share their suffix labels (one contains the other).
pub fn sni_intersect(a: Option<&str>, b: Option<&str>) -> bool {
    let (a, b) = (a.unwrap_or("*"), b.unwrap_or("*"));
    if a == "*" || b == "*" || a == b {
        return true;
    }
    match (is_wild(a), is_wild(b)) {
        (true, false) => wildcard_matches(a, b),
        (false, true) => wildcard_matches(b, a),
        (true, true) => {
            let (sa, sb) = (&a[2..], &b[2..]);
            sa == sb || sa.ends_with(&format!(".{sb}")) || sb.ends_with(&format!(".{sa}"))
        }
        (false, false) => false,
    }
}

/// The names both hostnames match, as one hostname: the more specific side (`*.x.test` and
/// `api.x.test` share `api.x.test`; `*.a.x.test` and `*.x.test` share `*.a.x.test`; an absent
/// hostname is `*`, which shares the other side). `None` when [`sni_intersect`] is false. It
/// exists so a conflict can say *where* two listeners meet, not only that they do.
pub fn sni_intersection(a: Option<&str>, b: Option<&str>) -> Option<String> {
    if !sni_intersect(a, b) {
        return None;
    }
    let (a, b) = (a.unwrap_or("*"), b.unwrap_or("*"));
    let more_specific = match (a == "*", b == "*") {
        (true, _) => b,
        (_, true) => a,
        // Both wildcards: the longer suffix is the narrower set; an exact name is narrower
        // than any wildcard that matches it.
        _ => match (is_wild(a), is_wild(b)) {
            (true, false) => b,
            (false, true) => a,
            _ if a.len() >= b.len() => a,
            _ => b,
        },
    };
    Some(more_specific.to_string())
}

/// Gateway API hostname intersection for attachment: whether a route with `route_hosts` can
/// attach to a listener with `listener_host`.
pub fn route_matches_listener(route_hosts: &[String], listener_host: Option<&str>) -> bool {
    route_hosts.is_empty() || route_hosts.iter().any(|h| sni_intersect(Some(h), listener_host))
}

/// `ComputeHosts(routeHosts, listenerHost, otherListenerHosts)`. Returns the hostnames the
/// route's chain or virtual host matches on this listener; `["*"]` means every name; empty
/// means the route contributes nothing here.
///
/// As Cilium's `operator/pkg/model/helpers.go` writes it: the isolation check
/// (`checkHostNameIsolation`) runs only where a wildcard listener hostname (or none) would
/// take the route's name; a route hostname equal to the listener hostname is kept as is, and
/// a wildcard route under an exact listener yields the listener hostname, both unchecked
/// (cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/helpers.go:ComputeHosts; docs/cilium-translation.md §3).
pub fn compute_hosts(route_hosts: &[String], listener_host: Option<&str>, other_listener_hosts: &[String]) -> Vec<String> {
    if route_hosts.is_empty() {
        return vec![listener_host.unwrap_or("*").to_string()];
    }
    let lh = listener_host.unwrap_or("");
    // checkHostNameIsolation: a name another listener claims exactly, or by a wildcard longer
    // than this listener's hostname, belongs to that listener. The listener's own hostname in
    // the list is skipped. (`>` and `>=` answer alike: two wildcards of equal length that both
    // match one name are the same wildcard, which `ex != lh` already skipped; mutation testing
    // reports that mutant as missed for this reason.)
    let isolated = |route: &str| {
        other_listener_hosts
            .iter()
            .any(|ex| ex != lh && (route == ex || (is_wild(ex) && wildcard_matches(ex, route) && ex.len() > lh.len())))
    };
    let mut out: Vec<String> = Vec::new();
    for h in route_hosts {
        let kept = match listener_host {
            None => (!isolated(h)).then(|| h.clone()),
            Some(l) if l == h => Some(h.clone()),
            Some(l) => match (is_wild(l), is_wild(h)) {
                (true, true) if !isolated(h) => {
                    if wildcard_matches(l, &h[2..]) {
                        Some(h.clone())
                    } else if wildcard_matches(h, &l[2..]) {
                        Some(l.to_string())
                    } else {
                        None
                    }
                }
                (true, false) if wildcard_matches(l, h) && !isolated(h) => Some(h.clone()),
                (false, true) if wildcard_matches(h, l) => Some(l.to_string()),
                _ => None,
            },
        };
        if let Some(k) = kept
            && !out.contains(&k)
        {
            out.push(k);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn intersection_as_cilium_reads_it() {
        // samePortCrossProtocolConflictedListeners (cilium#44889) examples.
        assert!(sni_intersect(Some("*.example.com"), Some("api.example.com")));
        assert!(sni_intersect(Some("*.example.com"), Some("a.b.example.com")));
        assert!(!sni_intersect(Some("*.example.com"), Some("example.com")));
        assert!(sni_intersect(Some("*.example.test"), Some("*.test")));
        assert!(!sni_intersect(Some("*.example.test"), Some("*.example.org")));
        assert!(!sni_intersect(Some("a.example.com"), Some("b.example.com")));
        assert!(sni_intersect(None, Some("b.example.com")));
        assert!(sni_intersect(Some("x.test"), Some("x.test")));
    }

    #[test]
    fn the_intersection_is_the_narrower_side() {
        assert_eq!(sni_intersection(Some("*.example.org"), Some("api.example.org")).as_deref(), Some("api.example.org"));
        assert_eq!(sni_intersection(Some("api.example.org"), Some("*.example.org")).as_deref(), Some("api.example.org"));
        assert_eq!(sni_intersection(Some("*.x.test"), Some("*.a.x.test")).as_deref(), Some("*.a.x.test"));
        assert_eq!(sni_intersection(None, Some("b.x.test")).as_deref(), Some("b.x.test"));
        assert_eq!(sni_intersection(Some("b.x.test"), None).as_deref(), Some("b.x.test"));
        assert_eq!(sni_intersection(None, None).as_deref(), Some("*"));
        assert_eq!(sni_intersection(Some("x.test"), Some("x.test")).as_deref(), Some("x.test"));
        assert_eq!(sni_intersection(Some("*.example.org"), Some("example.org")), None);
        assert_eq!(sni_intersection(Some("a.x.test"), Some("b.x.test")), None);
    }

    #[test]
    fn compute_hosts_table() {
        // cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/helpers.go:ComputeHosts, case by case as docs/cilium-translation.md §3 lists them.
        assert_eq!(compute_hosts(&[], Some("api.x.test"), &[]), s(&["api.x.test"]));
        assert_eq!(compute_hosts(&[], None, &[]), s(&["*"]));
        assert_eq!(compute_hosts(&s(&["api.x.test"]), Some("api.x.test"), &[]), s(&["api.x.test"]));
        assert_eq!(compute_hosts(&s(&["api.x.test"]), Some("*.x.test"), &[]), s(&["api.x.test"]));
        assert_eq!(compute_hosts(&s(&["*.x.test"]), Some("api.x.test"), &[]), s(&["api.x.test"]));
        assert_eq!(compute_hosts(&s(&["*.x.test"]), Some("*.a.x.test"), &[]), s(&["*.a.x.test"]));
        assert!(compute_hosts(&s(&["api.y.test"]), Some("*.x.test"), &[]).is_empty());
    }

    #[test]
    fn names_claimed_elsewhere_are_dropped() {
        // A route for api.x.test on the wildcard listener, while tls-api claims it exactly.
        assert!(compute_hosts(&s(&["api.x.test"]), Some("*.x.test"), &s(&["api.x.test"])).is_empty());
        assert_eq!(compute_hosts(&s(&["www.x.test", "api.x.test"]), Some("*.x.test"), &s(&["api.x.test"])), s(&["www.x.test"]));
    }

    #[test]
    fn a_route_attaches_only_where_a_hostname_intersects() {
        assert!(route_matches_listener(&[], Some("*.x.test")), "a route without hostnames attaches anywhere");
        assert!(route_matches_listener(&s(&["api.x.test"]), Some("*.x.test")));
        assert!(route_matches_listener(&s(&["api.x.test"]), None));
        assert!(!route_matches_listener(&s(&["api.y.test"]), Some("*.x.test")));
        assert!(!route_matches_listener(&s(&["a.x.test", "b.x.test"]), Some("c.x.test")));
    }

    #[test]
    fn a_listener_without_hostname_leaves_names_claimed_elsewhere() {
        // checkHostNameIsolation on a hostname-less listener: a name another listener claims
        // belongs there; any other name stays here.
        assert_eq!(compute_hosts(&s(&["api.x.test"]), None, &[]), s(&["api.x.test"]));
        assert!(compute_hosts(&s(&["api.x.test"]), None, &s(&["api.x.test"])).is_empty());
        assert_eq!(compute_hosts(&s(&["www.x.test", "api.x.test"]), None, &s(&["*.x.test"])), Vec::<String>::new());
        assert_eq!(compute_hosts(&s(&["www.y.test"]), None, &s(&["*.x.test"])), s(&["www.y.test"]));
    }

    #[test]
    fn only_a_longer_wildcard_elsewhere_takes_a_name() {
        // The wildcard listener *.x.test gives b.a.x.test up to *.a.x.test (longer, more
        // specific) ...
        assert!(compute_hosts(&s(&["b.a.x.test"]), Some("*.x.test"), &s(&["*.a.x.test"])).is_empty());
        // ... but *.a.x.test keeps it against the shorter *.x.test.
        assert_eq!(compute_hosts(&s(&["b.a.x.test"]), Some("*.a.x.test"), &s(&["*.x.test"])), s(&["b.a.x.test"]));
        // A wildcard of the same length elsewhere does not take it either.
        assert_eq!(compute_hosts(&s(&["b.a.x.test"]), Some("*.a.x.test"), &s(&["*.b.x.test"])), s(&["b.a.x.test"]));
    }

    #[test]
    fn a_wildcard_route_under_a_wildcard_listener_is_isolated_too() {
        // *.a.x.test under *.x.test is kept as itself ...
        assert_eq!(compute_hosts(&s(&["*.a.x.test"]), Some("*.x.test"), &[]), s(&["*.a.x.test"]));
        // ... unless another listener claims exactly that wildcard.
        assert!(compute_hosts(&s(&["*.a.x.test"]), Some("*.x.test"), &s(&["*.a.x.test"])).is_empty());
        // A broader wildcard route under a narrower wildcard listener yields the listener's name.
        assert_eq!(compute_hosts(&s(&["*.x.test"]), Some("*.a.x.test"), &[]), s(&["*.a.x.test"]));
        // A wildcard route under an exact listener it does not cover yields nothing.
        assert!(compute_hosts(&s(&["*.x.test"]), Some("api.y.test"), &[]).is_empty());
        assert!(compute_hosts(&s(&["*.x.test"]), Some("x.test"), &[]).is_empty());
    }
}
