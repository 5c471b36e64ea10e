//! Text into Markdown that renders as written on GitHub: evidence and reports carry names like
//! `*.example.test` and `server_names`, which must not turn into emphasis, links or table breaks.

/// Text for a table cell or list item: no `|`, no raw newlines, no HTML and no emphasis from
/// the evidence (`*.example.test` must not start italics).
pub fn cell(s: &str) -> String {
    let s = s.replace('\n', " ");
    let s = crate::term::line(&s);
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' | '*' | '_' | '`' | '\\' | '[' | ']' => {
                out.push('\\');
                out.push(ch);
            }
            _ => out.push(ch),
        }
    }
    out
}

/// Several lines in one table cell: each escaped as [`cell`], joined by `<br>`.
pub fn cell_lines<S: AsRef<str>>(lines: &[S]) -> String {
    lines.iter().map(|l| cell(l.as_ref())).collect::<Vec<_>>().join("<br>")
}

/// Inline code that survives backticks in its text, for lists and paragraphs.
pub fn code(s: &str) -> String {
    let s = s.replace('\n', " ");
    let s = crate::term::line(&s);
    if s.contains('`') { format!("`` {s} ``") } else { format!("`{s}`") }
}

/// Inline code inside a table cell: GitHub splits table cells on `|` even inside code spans
/// and unescapes `\|` there (outside tables the backslash would show).
pub fn tcode(s: &str) -> String {
    code(&s.replace('|', "\\|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_markup_and_keep_line_breaks_only_where_asked() {
        assert_eq!(cell("*.example.test | server_names <b>"), "\\*.example.test \\| server\\_names &lt;b&gt;");
        assert_eq!(cell("a\nb"), "a b");
        assert_eq!(cell_lines(&["*.a.test", "b|c"]), "\\*.a.test<br>b\\|c");
        assert_eq!(tcode("a|b"), "`a\\|b`");
        assert_eq!(code("x`y"), "`` x`y ``");
    }

    #[test]
    fn control_characters_never_reach_a_terminal_showing_the_file() {
        // A certificate subject or SNI carrying ESC [ 2 J would clear the screen of whoever
        // `cat`s summary.md or report.md.
        assert_eq!(cell("a\u{1b}[2Jb\r"), r"a\\u{1b}\[2Jb\\r");
        assert!(!code("x\u{1b}y").contains('\u{1b}'));
    }
}
