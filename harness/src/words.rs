//! The words `check` and `report` both print for the same things: how a handshake that got no
//! certificate ended, a condition's value, a group of Conflicted listeners, the verdict of one
//! version against another. One place, so the two commands never name one fact two ways. Pure
//! string functions; it imports nothing of the crate, so every stage may use it.

/// The verdict of a version against the one before it (or the baseline): nothing differs.
pub const NO_CHANGE: &str = "no change";
/// Conditions differ, every answer is the same.
pub const STATUS_ONLY_REGRESSION: &str = "status-only regression";
/// Some name on some port stops answering or is answered by someone else.
pub const TRAFFIC_REGRESSION: &str = "traffic regression";
/// The version the others are judged against.
pub const BASELINE: &str = "baseline";
/// Said after a status-only regression.
pub const TRAFFIC_UNCHANGED: &str = "traffic unchanged";

/// The verdict word for what differs: answers (`traffic`), conditions (`status`), or neither.
pub fn verdict(traffic: bool, status: bool) -> &'static str {
    match (traffic, status) {
        (true, _) => TRAFFIC_REGRESSION,
        (false, true) => STATUS_ONLY_REGRESSION,
        (false, false) => NO_CHANGE,
    }
}

/// No certificate answered: `nothing (reset)`, `nothing (alert unrecognized_name)`.
pub fn nothing(how: &str, alert: Option<&str>) -> String {
    match alert {
        Some(a) => format!("nothing ({how} {a})"),
        None => format!("nothing ({how})"),
    }
}

/// A condition's value: `True/ProtocolConflict`, or `True` without a reason.
pub fn condition_value(status: &str, reason: &str) -> String {
    if reason.is_empty() { status.to_string() } else { format!("{status}/{reason}") }
}

/// A condition with its type: `Conflicted True/ProtocolConflict`.
pub fn condition(type_: &str, status: &str, reason: &str) -> String {
    format!("{type_} {}", condition_value(status, reason))
}

/// `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Listeners that are Conflicted for one reason: `https and tls-api Conflicted (ProtocolConflict)`.
pub fn conflicted(listeners: &[String], reason: &str) -> String {
    if reason.is_empty() { format!("{} Conflicted", and_list(listeners)) } else { format!("{} Conflicted ({reason})", and_list(listeners)) }
}

/// Listeners that were Conflicted and are not any more.
pub fn no_longer_conflicted(listeners: &[String]) -> String {
    format!("{} no longer Conflicted", and_list(listeners))
}

/// An Envoy listener by name: `Envoy listener named "listener"`. Cilium names its one listener
/// `listener`, so the bare name would read "listener listener".
pub fn envoy_listener(name: &str) -> String {
    format!("Envoy listener named \"{name}\"")
}

/// The reason of a Conflicted value (`True/ProtocolConflict` -> `ProtocolConflict`), or `None`
/// when the value does not say Conflicted is True.
pub fn conflicted_reason(value: &str) -> Option<&str> {
    match value.split_once('/') {
        Some(("True", reason)) => Some(reason),
        None if value == "True" => Some(""),
        _ => None,
    }
}

/// Replaces `a.b.c.d:port` with `<address>`: the local addresses a lane binds differ from run to
/// run and would make every two runs disagree.
pub fn mask_addresses(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        match address_len(&bytes[i..]) {
            Some(n) if i == 0 || !bytes[i - 1].is_ascii_alphanumeric() => {
                out.push_str("<address>");
                i += n;
            }
            _ => {
                // Push the whole UTF-8 character starting here.
                let ch = text[i..].chars().next().unwrap_or(' ');
                out.push(ch);
                i += ch.len_utf8().max(1);
            }
        }
    }
    out
}

/// Length of an IPv4 `a.b.c.d:port` at the start of `b`, if one is there.
fn address_len(b: &[u8]) -> Option<usize> {
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = 0;
    for part in 0..4 {
        let n = digits(i);
        if n == 0 || n > 3 {
            return None;
        }
        i += n;
        let sep = if part < 3 { b'.' } else { b':' };
        if b.get(i) != Some(&sep) {
            return None;
        }
        i += 1;
    }
    let n = digits(i);
    if n == 0 || n > 5 { None } else { Some(i + n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_words() {
        assert_eq!(nothing("reset", None), "nothing (reset)");
        assert_eq!(nothing("alert", Some("unrecognized_name")), "nothing (alert unrecognized_name)");
        assert_eq!(condition("Conflicted", "True", "ProtocolConflict"), "Conflicted True/ProtocolConflict");
        assert_eq!(condition_value("True", ""), "True");
        assert_eq!(conflicted(&["https".into(), "tls-api".into()], "ProtocolConflict"), "https and tls-api Conflicted (ProtocolConflict)");
        assert_eq!(conflicted_reason("True/HostnameConflict"), Some("HostnameConflict"));
        assert_eq!(conflicted_reason("absent"), None);
        assert_eq!(verdict(false, true), "status-only regression");
        assert_eq!(verdict(true, true), "traffic regression");
        assert_eq!(verdict(false, false), "no change");
    }
}
