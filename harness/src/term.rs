//! Text from the outside world (certificate subjects, SNIs, dump names, Envoy's error text,
//! server names) made safe for a terminal or a text file a terminal will show: control
//! characters are written as escapes, so an `ESC [ 2 J` inside a certificate subject clears
//! nobody's screen and a `\r` cannot overwrite the verdict printed before it.
//!
//! Every human output calls [`line`] (one-line fields) or [`text`] (multi-line blocks); JSON
//! output needs neither (serde_json escapes control characters itself).

use std::borrow::Cow;
use std::fmt::Write;

/// Characters a terminal acts on rather than prints: C0 controls, DEL, C1 controls, and the
/// Unicode bidirectional overrides and isolates that reorder what is displayed.
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if keep(c) || !is_unsafe(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// For a one-line field: every control character escaped, newlines included.
pub fn line(s: &str) -> Cow<'_, str> {
    escape(s, |_| false)
}

/// For a block of lines: newlines and tabs kept, every other control character escaped.
pub fn text(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n' || c == '\t')
}

/// A value quoted as a Rust string literal: `"CN=x\" \u{20}sha256=…"`. Quotes and backslashes
/// are escaped, and so is every control, bidi or otherwise unprintable character, so the value
/// ends at its closing quote and cannot forge the fields after it. For values from outside
/// (certificate subjects, HTTP reason phrases, error texts) and for arguments echoed in errors.
///
/// Two spaces in a row are written ` \u{20}`: human lines separate their fields with two spaces,
/// and a reader (or a script) that splits on them without reading quotes must not find a field
/// inside a value either (issue 36: a subject `CN=x"  sha256=0…` read as a second fingerprint).
pub fn quoted(s: &str) -> String {
    let q = format!("{s:?}");
    if q.contains("  ") { q.replace("  ", " \\u{20}") } else { q }
}

/// A value in a table cell (or a comma-separated list in one): [`quoted`] when it holds
/// whitespace, a quote or a comma, which a reader would take for a column break or a list
/// separator; else only its control characters escaped ([`line`]).
pub fn cell(s: &str) -> Cow<'_, str> {
    if s.chars().any(|c| c.is_whitespace() || c == '"' || c == ',') { Cow::Owned(quoted(s)) } else { line(s) }
}

/// A `name=value` field's value: as is when it is a plain token (letters, digits and
/// `.-_:/*[]@+,`), else [`quoted`]. A plain token holds no space, quote or `=`-led text that a
/// reader could take for another field.
pub fn field(s: &str) -> Cow<'_, str> {
    let plain = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || ".-_:/*[]@+,".contains(c));
    if plain { Cow::Borrowed(s) } else { Cow::Owned(quoted(s)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_would_act_on() {
        assert_eq!(line("api.example.test"), "api.example.test");
        assert!(matches!(line("plain"), Cow::Borrowed(_)));
        assert_eq!(line("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(line("ok\rFAIL\n"), "ok\\rFAIL\\n");
        assert_eq!(line("x\u{7f}\u{9b}y"), "x\\u{7f}\\u{9b}y");
        assert_eq!(line("evil\u{202E}txt"), "evil\\u{202e}txt");
        assert_eq!(text("one\n\ttwo\u{7}\n"), "one\n\ttwo\\u{7}\n");
        // Non-ASCII letters are text, not control.
        assert_eq!(line("bücher.example"), "bücher.example");
    }

    #[test]
    fn quoted_values_end_at_their_quote() {
        assert_eq!(quoted("CN=x\"  sha256=0"), "\"CN=x\\\" \\u{20}sha256=0\"");
        // No two spaces in a row, however many there were: a split on them finds no field inside.
        assert_eq!(quoted("a     b"), "\"a \\u{20} \\u{20} b\"");
        assert!(!quoted("x\"  y=1   z").contains("  "));
        assert_eq!(quoted("a\u{1b}[2J\u{202e}b\\"), "\"a\\u{1b}[2J\\u{202e}b\\\\\"");
        assert_eq!(field("web"), "web");
        assert_eq!(field("127.0.0.1:443"), "127.0.0.1:443");
        assert_eq!(field("web  sha256=0"), "\"web \\u{20}sha256=0\"");
        assert_eq!(field(""), "\"\"");
        assert_eq!(cell("listener-1"), "listener-1");
        assert_eq!(cell("a  b"), "\"a \\u{20}b\"");
        assert_eq!(cell("a,b"), "\"a,b\"");
    }
}
