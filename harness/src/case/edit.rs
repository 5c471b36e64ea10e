//! Surgical edits of a `case.yaml` text at the lines the loader located, so comments and layout
//! stay as written: a group's `provenance:` line, its `confirmed:` list, a one-line probe; and
//! the file replaced atomically. What to write is decided by the caller (`run --record` reads
//! it from a run's evidence).

/// Writes `entry` into the `confirmed:` list of the group starting at `group_line` (1-based):
/// the item for `version` is replaced, else one is added (and the list made, after the group's
/// `provenance:` line, when the group has none). Returns the 0-based line written.
pub fn upsert_confirmed(lines: &mut Vec<String>, group_line: u64, version: &str, entry: &str) -> Option<usize> {
    let GroupStart { start, dash, key_col } = group_start(lines, group_line)?;
    let indent = " ".repeat(key_col);
    let mut end = lines.len();
    let mut provenance = None;
    let mut confirmed = None;
    for (i, l) in lines.iter().enumerate().skip(start) {
        let col = l.len() - l.trim_start().len();
        if i > start && !l.trim().is_empty() && !l.trim_start().starts_with('#') && col < key_col {
            end = i;
            break;
        }
        if i > start && col == dash && l.trim_start().starts_with("- ") {
            end = i; // the next group
            break;
        }
        let body = if i == start { &l[key_col.min(l.len())..] } else { l.trim_start() };
        if i == start || col == key_col {
            if body.starts_with("provenance:") {
                provenance = Some(i);
            }
            if body.starts_with("confirmed:") {
                confirmed = Some(i);
            }
        }
    }
    let item = format!("{indent}  - {entry}");
    match confirmed {
        Some(c) => {
            // Its items: the lines after it indented deeper than the key.
            let mut last = c;
            for (i, l) in lines.iter().enumerate().take(end).skip(c + 1) {
                let col = l.len() - l.trim_start().len();
                if l.trim().is_empty() || col <= key_col {
                    break;
                }
                last = i;
                if l.contains(&format!("cilium: \"{version}\"")) {
                    lines[i] = item;
                    return Some(i);
                }
            }
            lines.insert(last + 1, item);
            Some(last + 1)
        }
        None => {
            let p = provenance?;
            lines.insert(p + 1, format!("{indent}confirmed:"));
            lines.insert(p + 2, item);
            Some(p + 2)
        }
    }
}

/// Replaces `path` with `text` through a temporary file beside it: never half-written.
pub fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Where a group's list item starts: its 0-based line, the column of its `-` and the column its
/// keys are written at (`- cilium: ...`).
struct GroupStart {
    start: usize,
    dash: usize,
    key_col: usize,
}

fn group_start(lines: &[String], group_line: u64) -> Option<GroupStart> {
    let start = (group_line as usize).checked_sub(1)?;
    let first = lines.get(start)?;
    let dash = first.find('-')?;
    let key_col = dash + 1 + first[dash + 1..].len() - first[dash + 1..].trim_start().len();
    Some(GroupStart { start, dash, key_col })
}

/// The line (0-based) of the group's own `provenance:` key and its indentation: the first
/// line from the group's start whose key sits at the indentation of `cilium:`.
pub fn provenance_line(lines: &[String], group_line: u64) -> Option<(usize, String)> {
    let GroupStart { start, key_col, .. } = group_start(lines, group_line)?;
    let indent = " ".repeat(key_col);
    for (i, l) in lines.iter().enumerate().skip(start) {
        if i > start {
            let col = l.len() - l.trim_start().len();
            if !l.trim().is_empty() && !l.trim_start().starts_with('#') && col < key_col {
                return None; // left the group
            }
        }
        let body = if i == start { &l[key_col.min(l.len())..] } else { l.trim_start() };
        if (i == start || l.starts_with(&indent)) && body.starts_with("provenance:") {
            return body.trim_start_matches("provenance:").trim().starts_with("inferred").then(|| (i, indent.clone()));
        }
    }
    None
}

/// Rewrites a one-line flow-mapping probe (`- {port: 443, sni: ..., answers: ...}  # comment`):
/// its answer (when `answer` is given), `provenance: observed` and the run that observed it;
/// every other key and the trailing comment stay.
pub fn edit_probe(line: &str, answer: Option<&str>, stamp: &str) -> Option<String> {
    let open = line.find("- {")? + 2;
    // Split the mapping's entries at top-level commas, outside quotes; nested collections
    // are not edited.
    let mut parts: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut close = None;
    for (i, ch) in line[open + 1..].char_indices() {
        match (quote, ch) {
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                cur.push(ch);
            }
            (None, '{' | '[') => return None,
            (None, '}') => {
                close = Some(open + 1 + i);
                break;
            }
            (None, ',') => parts.push(std::mem::take(&mut cur)),
            (None, c) => cur.push(c),
        }
    }
    let close = close?;
    parts.push(cur);
    let mut parts: Vec<String> = parts.into_iter().map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
    let key = |p: &str| p.split(':').next().unwrap_or("").trim().to_string();
    if let Some(a) = answer {
        let at = parts.iter().position(|p| key(p) == "answers")?;
        parts.retain(|p| !matches!(key(p).as_str(), "how" | "alert"));
        let at = at.min(parts.len());
        parts[at] = a.to_string();
    }
    parts.retain(|p| !matches!(key(p).as_str(), "provenance"));
    parts.push("provenance: observed".into());
    parts.push(format!("observed: {stamp}"));
    Some(format!("{}{{{}}}{}", &line[..open], parts.join(", "), &line[close + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_lines_keep_their_other_keys_and_comment() {
        let stamp = "{lane: kind, cilium: \"1.19.6\", date: \"2026-12-01\", run: r1}";
        let l = "      - {port: 443, sni: \"api.{apex}\", answers: nothing, how: reset, ref: x}   # why";
        assert_eq!(
            edit_probe(l, Some("answers: api-backend"), stamp).unwrap(),
            format!(
                "      - {{port: 443, sni: \"api.{{apex}}\", answers: api-backend, ref: x, provenance: observed, observed: {stamp}}}   # why"
            )
        );
        let l = "      - {port: 443, no_sni: true, answers: nothing, how: reset, provenance: inferred}";
        assert_eq!(
            edit_probe(l, None, stamp).unwrap(),
            format!("      - {{port: 443, no_sni: true, answers: nothing, how: reset, provenance: observed, observed: {stamp}}}")
        );
        assert_eq!(edit_probe("      - port: 443", None, stamp), None);
    }

    #[test]
    fn the_group_provenance_line_is_found_at_its_indentation() {
        let lines: Vec<String> = "expect:\n  - cilium: \"*\"\n    # a comment\n    provenance: inferred\n    probes:\n      - {port: 1, provenance: source}\n  - cilium: x\n    provenance: inferred\n"
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(provenance_line(&lines, 2), Some((3, "    ".into())));
        assert_eq!(provenance_line(&lines, 7), Some((7, "    ".into())));
    }
}
