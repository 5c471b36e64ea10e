//! The one plain-text table layout every human table uses (`envoy summarize`, `explain`,
//! `versions`, `run --list`): each column as wide as its widest cell (counted in characters),
//! two spaces between columns, no trailing spaces, one line per row.

/// `rows[0]` is usually the header; rows may be ragged (a short row simply ends early).
pub fn render<S: AsRef<str>>(rows: &[Vec<S>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..columns).map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.as_ref().chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let cell = cell.as_ref();
            line.push_str(cell);
            if i + 1 < row.len() {
                line.extend(std::iter::repeat_n(' ', widths[i] - cell.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
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
}
