//! The one plain-text table layout every human table uses (`check`, `envoy summarize`,
//! `explain`, `versions`, `run --list`): each column as wide as its widest cell (counted in
//! characters), two spaces between columns, no trailing spaces, one line per row; fitted to
//! [`WIDTH`] columns unless the command was given `--wide`. And the one way a long list of
//! names on one line is wrapped ([`wrap`]).

/// What human output fits: tables are narrowed to it (long cells end in [`ELLIPSIS`]) and long
/// lists of names wrapped at it.
pub const WIDTH: usize = 120;

/// The mark of a cell cut to fit; `--wide` prints the whole cell.
pub const ELLIPSIS: char = '…';

/// A column is never narrowed below this many characters (nor below its header).
const MIN_COLUMN: usize = 12;

/// `rows[0]` is usually the header; rows may be ragged (a short row simply ends early). Every
/// cell whole, however wide the table.
pub fn render<S: AsRef<str>>(rows: &[Vec<S>]) -> String {
    render_fit(rows, None)
}

/// [`render`], fitted to `width` characters when given: the widest column is narrowed first, one
/// character at a time, never below [`MIN_COLUMN`] or its header's width; a cell longer than its
/// column is cut and ends in [`ELLIPSIS`]. `None`: every cell whole (`--wide`).
pub fn render_fit<S: AsRef<str>>(rows: &[Vec<S>], width: Option<usize>) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths: Vec<usize> =
        (0..columns).map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.as_ref().chars().count()).max().unwrap_or(0)).collect();
    if let Some(max) = width {
        let floor: Vec<usize> = (0..columns)
            .map(|i| rows.first().and_then(|r| r.get(i)).map(|c| c.as_ref().chars().count()).unwrap_or(0).max(MIN_COLUMN))
            .collect();
        let total = |w: &[usize]| w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
        while total(&widths) > max {
            let Some(i) = (0..columns).filter(|&i| widths[i] > floor[i]).max_by_key(|&i| (widths[i], i)) else { break };
            widths[i] -= 1;
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let cell = cut(cell.as_ref(), widths[i]);
            let n = cell.chars().count();
            line.push_str(&cell);
            if i + 1 < row.len() {
                line.extend(std::iter::repeat_n(' ', widths[i] - n + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `cell` in at most `width` characters, ending in [`ELLIPSIS`] when cut.
fn cut(cell: &str, width: usize) -> String {
    if cell.chars().count() <= width {
        return cell.to_string();
    }
    let mut s: String = cell.chars().take(width.saturating_sub(1)).collect();
    s.push(ELLIPSIS);
    s
}

/// The width a command's tables fit: [`WIDTH`], or none with `--wide`.
pub fn width(wide: bool) -> Option<usize> {
    (!wide).then_some(WIDTH)
}

/// `text` (a sentence, or a list of names joined by `, `) wrapped at spaces to lines of at
/// most `width` characters, the first line starting with `first` and the others with `rest`.
/// A word longer than a line stays whole on a line of its own. No trailing newline.
pub fn wrap_with(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
    lines.join("\n")
}

/// `head` and a list of names on as many lines as [`WIDTH`] needs, the names after the first
/// line indented: `layout-gate kind 1.19.5: ... left out: a, b,\n  c, d`.
pub fn list_line<S: AsRef<str>>(head: &str, names: &[S]) -> String {
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    wrap_with(&names.join(", "), WIDTH, &format!("{head} "), "  ")
}

/// Every line of `text` longer than `width` wrapped ([`wrap_with`]), its continuation indented
/// two more spaces than the line itself; shorter lines as they are. Keeps a final newline.
pub fn wrap_block(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent: String = body.chars().take_while(|c| *c == ' ').collect();
        out.push_str(&wrap_with(body.trim_start(), width, &indent, &format!("{indent}  ")));
        out.push_str(nl);
    }
    out
}

/// [`wrap_with`] with the same indent on every line.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    wrap_with(text, width, indent, indent)
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn columns_fit_their_widest_cell() {
        let t = render(&[vec!["NAME", "STATE", "SNI"], vec!["listener", "active", "*"], vec!["l", "warming", "é.example"]]);
        assert_eq!(t, "NAME      STATE    SNI\nlistener  active   *\nl         warming  é.example\n");
        // Empty trailing cells leave no trailing spaces.
        assert_eq!(render(&[vec!["a", ""], vec!["bb", ""]]), "a\nbb\n");
        assert_eq!(render::<&str>(&[]), "");
    }

    /// At a fixed width, no terminal involved: a table wider than 120 columns is narrowed to
    /// 120, its longest cells cut with an ellipsis; `--wide` (no width) keeps every cell whole.
    #[test]
    fn tables_fit_120_columns_unless_wide() {
        let long = "passthrough -> backend default/kubernetes, cozy-kubevirt/vm-exportproxy, cozy-kubevirt-cdi/cdi-uploadproxy";
        let rows = vec![
            vec!["PORT".to_string(), "SNI".into(), "ACTION".into(), "1.19.6".into()],
            vec!["443".to_string(), "vm-exportproxy.example.org".into(), long.into(), "Secret cozystack-gateway-tls".into()],
        ];
        let fitted = super::render_fit(&rows, Some(super::WIDTH));
        assert!(fitted.lines().all(|l| l.chars().count() <= 120), "{fitted}");
        assert!(fitted.contains('…'), "{fitted}");
        assert!(fitted.contains("vm-exportproxy.example.org"), "the narrow columns stay whole: {fitted}");
        let wide = super::render_fit(&rows, super::width(true));
        assert!(wide.contains(long) && !wide.contains('…'));
        assert!(wide.lines().any(|l| l.chars().count() > 120));
    }

    #[test]
    fn long_lists_wrap_with_an_indent() {
        let names: Vec<String> = (0..40).map(|i| format!("cilium/gateway-case-{i:02}")).collect();
        let w = super::wrap(&names.join(", "), 60, "  ");
        assert!(w.lines().count() > 1 && w.lines().all(|l| l.starts_with("  ") && l.chars().count() <= 60), "{w}");
        assert_eq!(w.split_whitespace().collect::<Vec<_>>().join(" "), names.join(", "));
        assert_eq!(super::wrap_with("a b", 80, "x: ", "   "), "x: a b");
        let block = format!("short\n    {}\n", names.join(", "));
        let w = super::wrap_block(&block, 60);
        assert!(w.starts_with("short\n    cilium/") && w.ends_with('\n'), "{w}");
        assert!(w.lines().skip(2).all(|l| l.starts_with("      ") && l.chars().count() <= 60), "{w}");
        let l = super::list_line("layout-gate kind 1.19.5: no expectation at this version, left out:", &names);
        assert!(l.starts_with("layout-gate kind 1.19.5: no expectation at this version, left out: cilium/gateway-case-00,"), "{l}");
        assert!(l.lines().count() > 1 && l.lines().skip(1).all(|x| x.starts_with("  ") && x.chars().count() <= super::WIDTH), "{l}");
    }
}
