//! `report.svg` and the pictures of `report.html`: a case × version heat map (the matrix at a
//! glance, coloured by status, Δ where a case's facts changed since the lane's previous
//! version), and per case an SNI × version grid coloured by which certificate answers.
//!
//! Self-contained SVG: no fonts, images or styles from outside, every text escaped, every
//! cell with a `<title>` naming what it shows (a tooltip in a browser, words for a screen
//! reader). Sizes come from character counts of a monospace font, so nothing is measured at
//! render time and the output is a pure function of the report.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::Report;
use super::column::Column;
use super::facts::{CaseFacts, FactKind};
use super::glance::{self, LaneGlance, Status, certificate_of};
use super::merge::{CaseRow, Cell};

const FONT: &str = "DejaVu Sans Mono, Menlo, Consolas, monospace";
/// Width of one character at 12 px in the fonts above (DejaVu Sans Mono is 0.602 em).
const CHAR_W: f64 = 7.3;
const ROW_H: u32 = 24;
const GAP: u32 = 28;

/// One picture: an `id` for the HTML page, a heading, and its SVG content at (0, 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Picture {
    pub id: String,
    pub title: String,
    pub width: u32,
    pub height: u32,
    body: String,
}

impl Picture {
    /// The picture as an `<svg>` element to put inline in HTML.
    pub fn inline(&self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{}\" role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"{FONT}\" font-size=\"12\">\n<title>{}</title>\n{}</svg>",
            esc(&self.id),
            esc(&self.title),
            self.width,
            self.height,
            self.width,
            self.height,
            esc(&self.title),
            self.body
        )
    }
}

/// Status colours: (fill, text).
pub fn status_colours(s: Status) -> (&'static str, &'static str) {
    match s {
        Status::Pass { .. } => ("#2da44e", "#ffffff"),
        Status::OwnInference { .. } => ("#aceebb", "#116329"),
        Status::Fail { .. } => ("#cf222e", "#ffffff"),
        Status::Error => ("#953800", "#ffffff"),
        Status::Disagree => ("#d4a72c", "#24292f"),
        Status::NotRun => ("#eaeef2", "#57606a"),
        Status::LeftOut => ("#ffffff", "#8c959f"),
    }
}

/// The statuses a legend explains: every kind, and "left out" only where a cell is.
pub fn legend(lanes: &[super::glance::LaneGlance]) -> Vec<Status> {
    let mut v = vec![Status::Pass { checks: 0 }, Status::Fail { failures: 0, checks: 0 }, Status::Error, Status::Disagree, Status::NotRun];
    if super::glance::left_out(lanes) > 0 {
        v.push(Status::LeftOut);
    }
    if super::glance::own_inference(lanes) > 0 {
        v.insert(1, Status::OwnInference { checks: 0 });
    }
    v
}

/// Certificate colours, assigned in order of first appearance within a case.
const PALETTE: [&str; 10] = ["#0969da", "#8250df", "#bf3989", "#1a7f37", "#bc4c00", "#0550ae", "#6639ba", "#116329", "#a40e26", "#4d2d00"];
/// No certificate: greys, one per way of answering nothing, the same in every grid.
const NOTHING_RESET: (&str, &str) = ("#d8dee4", "#24292f");
const NOTHING_REFUSED: (&str, &str) = ("#afb8c1", "#1f2328");
const NOTHING_OTHER: (&str, &str) = ("#8c959f", "#ffffff");
const NOT_CHECKED: (&str, &str) = ("#ffffff", "#57606a");
const STRANGER: (&str, &str) = ("#24292f", "#ffffff");
/// A Conflicted listener, under the answers of its case.
const CONFLICTED: (&str, &str) = ("#fff8c5", "#7d4e00");

/// Every picture of the report: the heat map, then one grid per case that probed anything.
pub fn pictures(r: &Report) -> Vec<Picture> {
    let lanes = glance::lanes(r);
    let mut out = Vec::new();
    if let Some(h) = heat_map(&lanes) {
        out.push(h);
    }
    let colours = answer_colours(r);
    for row in r.matrix.cases.values() {
        if let Some(g) = answer_grid(r, row, &colours) {
            out.push(g);
        }
    }
    out
}

/// One colour per certificate (or answer) over the whole report, so `api-backend` is the same
/// colour in every case's grid: named ones from the palette in order of first appearance
/// (cases by name, then subjects, then columns), no certificate in greys.
fn answer_colours(r: &Report) -> BTreeMap<String, (&'static str, &'static str)> {
    let mut colours = BTreeMap::new();
    let mut named = 0usize;
    for row in r.matrix.cases.values() {
        let facts: Vec<&CaseFacts> = row.cells.values().filter_map(Cell::observed).map(|(f, _)| f).collect();
        let mut subjects: Vec<&super::facts::FactKey> =
            facts.iter().flat_map(|f| f.facts.keys().filter(|k| k.kind == FactKind::Answer)).collect();
        subjects.sort();
        subjects.dedup();
        for k in subjects {
            for f in &facts {
                let Some(v) = f.facts.get(k) else { continue };
                let cert = certificate_of(v);
                if colours.contains_key(cert) {
                    continue;
                }
                let c = if cert == "nothing (reset)" {
                    NOTHING_RESET
                } else if cert == "nothing (refused)" {
                    NOTHING_REFUSED
                } else if cert.starts_with("nothing") {
                    NOTHING_OTHER
                } else if cert.starts_with("an unknown") {
                    STRANGER
                } else {
                    named += 1;
                    (PALETTE[(named - 1) % PALETTE.len()], "#ffffff")
                };
                colours.insert(cert.to_string(), c);
            }
        }
    }
    colours
}

/// `report.svg`: every picture stacked, each under its heading.
pub fn render(r: &Report) -> String {
    let pictures = pictures(r);
    let width = pictures.iter().map(|p| p.width).max().unwrap_or(320).max(320);
    let mut body = String::new();
    let mut y = 16u32;
    let _ = writeln!(
        body,
        "<text x=\"8\" y=\"{y}\" font-size=\"15\" font-weight=\"bold\">layout-gate report: kind columns are gate evidence; model columns are predictions</text>"
    );
    y += 14;
    if pictures.is_empty() {
        let _ = writeln!(body, "<text x=\"8\" y=\"{}\">No case was read.</text>", y + 16);
        y += 24;
    }
    for p in &pictures {
        y += 18;
        let _ = writeln!(body, "<text x=\"8\" y=\"{y}\" font-size=\"13\" font-weight=\"bold\">{}</text>", esc(&p.title));
        y += 6;
        let _ = writeln!(body, "<g transform=\"translate(0,{y})\">\n{}</g>", p.body);
        y += p.height + GAP;
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{y}\" viewBox=\"0 0 {width} {y}\" font-family=\"{FONT}\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{body}</svg>\n"
    )
}

fn text_w(chars: usize) -> u32 {
    (chars as f64 * CHAR_W).ceil() as u32
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn fit(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut t: String = text.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Column headers for `columns` starting at `x0`, each `cw` wide: the lane above its first
/// version, the version under it. Returns the height used.
fn headers(s: &mut String, columns: &[&Column], x0: u32, cw: u32) -> u32 {
    let mut last_lane = None;
    for (i, c) in columns.iter().enumerate() {
        let x = x0 + i as u32 * cw;
        if last_lane != Some(c.lane) {
            // The lane's words when they fit over its columns, else its name alone.
            let span = columns[i..].iter().take_while(|o| o.lane == c.lane).count() as u32 * cw;
            let long = match c.lane {
                crate::evidence::Lane::Kind => "kind: gate evidence",
                crate::evidence::Lane::Operator => "operator: Cilium's operator",
                crate::evidence::Lane::Model => "model: prediction",
                crate::evidence::Lane::Fixture => "fixture: self-check",
            };
            let label = if text_w(long.chars().count()) + 8 <= span { long } else { c.lane.as_str() };
            let _ = writeln!(s, "<text x=\"{}\" y=\"14\" font-weight=\"bold\">{}</text>", x + 4, esc(label));
            if last_lane.is_some() {
                let _ = writeln!(s, "<line x1=\"{x}\" y1=\"2\" x2=\"{x}\" y2=\"36\" stroke=\"#57606a\"/>");
            }
            last_lane = Some(c.lane);
        }
        let _ = writeln!(s, "<text x=\"{}\" y=\"32\" text-anchor=\"middle\">{}</text>", x + cw / 2, esc(&c.version_label()));
    }
    40
}

fn heat_map(lanes: &[LaneGlance]) -> Option<Picture> {
    // Rows: every case of any lane; columns: every lane's columns side by side.
    let columns: Vec<&Column> = lanes.iter().flat_map(|l| &l.columns).collect();
    let mut cases: BTreeMap<&str, Vec<Option<&glance::GlanceCell>>> = BTreeMap::new();
    for (li, l) in lanes.iter().enumerate() {
        let offset: usize = lanes[..li].iter().map(|l| l.columns.len()).sum();
        for row in &l.rows {
            let cells = cases.entry(row.case.as_str()).or_insert_with(|| vec![None; columns.len()]);
            for (i, c) in row.cells.iter().enumerate() {
                cells[offset + i] = Some(c);
            }
        }
    }
    if cases.is_empty() {
        return None;
    }
    let label_w = text_w(cases.keys().map(|c| c.chars().count()).max().unwrap_or(4)) + 16;
    let cw = 96u32;
    let mut s = String::new();
    let top = headers(&mut s, &columns, label_w, cw);
    for (ri, (case, cells)) in cases.iter().enumerate() {
        let y = top + ri as u32 * ROW_H;
        let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label_w - 8, y + 16, esc(case));
        for (ci, c) in cells.iter().enumerate() {
            let x = label_w + ci as u32 * cw;
            // A case a lane never ran is "not run" in that lane's columns.
            let (status, changed) = c.map_or((Status::NotRun, false), |c| (c.status, c.changed));
            let (fill, ink) = status_colours(status);
            let column = columns[ci];
            let tip = format!(
                "{case} on {column}: {} ({}){}",
                status.words(),
                status.meaning(),
                if changed { "; some fact differs from the previous version" } else { "" }
            );
            let _ = writeln!(
                s,
                "<g class=\"cell {}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\" fill=\"{fill}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\">{}</text>{}</g>",
                status.class(),
                esc(&tip),
                x + 1,
                y + 1,
                cw - 2,
                ROW_H - 2,
                x + cw / 2,
                y + 16,
                esc(&status.words()),
                if changed {
                    format!("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-weight=\"bold\" fill=\"{ink}\">Δ</text>", x + cw - 4, y + 16)
                } else {
                    String::new()
                }
            );
        }
    }
    let mut height = top + cases.len() as u32 * ROW_H + 10;
    // Legend.
    let legend = legend(lanes);
    let mut x = 8u32;
    let mut legend_w = 8u32;
    for st in legend {
        let (fill, _) = status_colours(st);
        let word = match st {
            Status::Fail { .. } => "FAIL n/m".to_string(),
            other => other.words(),
        };
        let _ = writeln!(s, "<rect x=\"{x}\" y=\"{}\" width=\"14\" height=\"14\" rx=\"2\" fill=\"{fill}\"/>", height);
        let _ = writeln!(s, "<text x=\"{}\" y=\"{}\">{}</text>", x + 18, height + 12, esc(&word));
        x += 18 + text_w(word.chars().count()) + 16;
        legend_w = x;
    }
    let _ = writeln!(
        s,
        "<text x=\"{x}\" y=\"{}\" font-weight=\"bold\">Δ</text><text x=\"{}\" y=\"{}\">changed since previous version</text>",
        height + 12,
        x + 12,
        height + 12
    );
    legend_w += 12 + text_w(30) + 8;
    height += 24;
    Some(Picture {
        id: "heat-map".into(),
        title: "Case × version: pass, fail, not run".into(),
        width: (label_w + columns.len() as u32 * cw + 8).max(legend_w),
        height,
        body: s,
    })
}

/// Which certificate answers each (port, SNI) of one case, per version of every lane.
fn answer_grid(r: &Report, row: &CaseRow, colour: &BTreeMap<String, (&'static str, &'static str)>) -> Option<Picture> {
    let columns: Vec<&Column> = r.matrix.columns.keys().filter(|c| row.cells.contains_key(*c)).collect();
    let facts: Vec<Option<&CaseFacts>> = columns.iter().map(|c| row.cells.get(*c).and_then(Cell::observed).map(|(f, _)| f)).collect();
    let mut subjects: Vec<&super::facts::FactKey> =
        facts.iter().flatten().flat_map(|f| f.facts.keys().filter(|k| k.kind == FactKind::Answer)).collect();
    subjects.sort();
    subjects.dedup();
    if subjects.is_empty() {
        return None;
    }
    // The legend lists this grid's answers in order of first appearance (rows, then columns).
    let mut order: Vec<String> = Vec::new();
    for k in &subjects {
        for f in facts.iter().flatten() {
            if let Some(v) = f.facts.get(*k) {
                let cert = certificate_of(v).to_string();
                if !order.contains(&cert) {
                    order.push(cert);
                }
            }
        }
    }
    let conflicted: std::collections::BTreeSet<&str> =
        facts.iter().flatten().flat_map(|f| f.conflicted.keys().map(String::as_str)).collect();
    let label_chars =
        subjects.iter().map(|k| k.subject.chars().count()).chain(conflicted.iter().map(|l| "listener ".len() + l.chars().count()));
    let label_w = text_w(label_chars.max().unwrap_or(4)) + 16;
    let longest = order.iter().map(|c| c.chars().count()).max().unwrap_or(8);
    let cw = text_w(longest.clamp(8, 22)) + 12;
    let max_chars = ((cw - 8) as f64 / CHAR_W) as usize;
    let mut s = String::new();
    let top = headers(&mut s, &columns, label_w, cw);
    for (ri, k) in subjects.iter().enumerate() {
        let y = top + ri as u32 * ROW_H;
        let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label_w - 8, y + 16, esc(&k.subject));
        for (ci, f) in facts.iter().enumerate() {
            let x = label_w + ci as u32 * cw;
            let column = columns[ci];
            match f.and_then(|f| f.facts.get(*k)) {
                Some(v) => {
                    let cert = certificate_of(v);
                    let (fill, ink) = colour.get(cert).copied().unwrap_or(NOT_CHECKED);
                    let _ = writeln!(
                        s,
                        "<g class=\"answer\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\" fill=\"{fill}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\">{}</text></g>",
                        esc(&format!("{} on {column}: {v}", k.subject)),
                        x + 1,
                        y + 1,
                        cw - 2,
                        ROW_H - 2,
                        x + cw / 2,
                        y + 16,
                        esc(&fit(cert, max_chars))
                    );
                }
                None => {
                    let why = if matches!(row.cells.get(column), Some(Cell::Disagreeing { .. })) { "runs disagree" } else { "not checked" };
                    let _ = writeln!(
                        s,
                        "<g class=\"answer none\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\" fill=\"#ffffff\" stroke=\"#d0d7de\" stroke-dasharray=\"3 2\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#57606a\">{}</text></g>",
                        esc(&format!("{} on {column}: {why}", k.subject)),
                        x + 1,
                        y + 1,
                        cw - 2,
                        ROW_H - 2,
                        x + cw / 2,
                        y + 16,
                        why
                    );
                }
            }
        }
    }
    // Below the answers, every listener Conflicted on some version, marked where it is.
    for (li, l) in conflicted.iter().enumerate() {
        let y = top + (subjects.len() + li) as u32 * ROW_H;
        let name = format!("listener {l}");
        let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label_w - 8, y + 16, esc(&name));
        for (ci, f) in facts.iter().enumerate() {
            let Some(f) = f else { continue };
            let x = label_w + ci as u32 * cw;
            let (tip, word, (fill, ink)) = match f.conflicted.get(*l) {
                Some(v) => (
                    format!(
                        "{name} on {}: {}",
                        columns[ci],
                        crate::words::condition(
                            "Conflicted",
                            v.split('/').next().unwrap_or(v),
                            crate::words::conflicted_reason(v).unwrap_or("")
                        )
                    ),
                    "Conflicted",
                    CONFLICTED,
                ),
                None => (format!("{name} on {}: not Conflicted", columns[ci]), "-", NOT_CHECKED),
            };
            let _ = writeln!(
                s,
                "<g class=\"listener{}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\" fill=\"{fill}\" stroke=\"{}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\">{word}</text></g>",
                if word == "Conflicted" { " conflicted" } else { "" },
                esc(&tip),
                x + 1,
                y + 1,
                cw - 2,
                ROW_H - 2,
                if word == "Conflicted" { "#9a6700" } else { "#d0d7de" },
                x + cw / 2,
                y + 16,
            );
        }
    }
    let grid_w = label_w + columns.len() as u32 * cw + 8;
    // Legend: one swatch per certificate, wrapped to the grid's width (at least 480 px).
    let wrap = grid_w.max(480);
    let mut y = top + (subjects.len() + conflicted.len()) as u32 * ROW_H + 10;
    let mut x = 8u32;
    let mut widest = 0u32;
    for cert in &order {
        let w = 18 + text_w(cert.chars().count()) + 16;
        if x + w > wrap && x > 8 {
            x = 8;
            y += 20;
        }
        let (fill, _) = colour.get(cert).copied().unwrap_or(NOT_CHECKED);
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"{y}\" width=\"14\" height=\"14\" rx=\"2\" fill=\"{fill}\" stroke=\"#57606a\" stroke-width=\"0.5\"/>"
        );
        let _ = writeln!(s, "<text x=\"{}\" y=\"{}\">{}</text>", x + 18, y + 12, esc(cert));
        x += w;
        widest = widest.max(x);
    }
    if !conflicted.is_empty() {
        let w = 18 + text_w("Conflicted listener".len()) + 16;
        if x + w > wrap && x > 8 {
            x = 8;
            y += 20;
        }
        let (fill, _) = CONFLICTED;
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"{y}\" width=\"14\" height=\"14\" rx=\"2\" fill=\"{fill}\" stroke=\"#9a6700\" stroke-width=\"0.5\"/>"
        );
        let _ = writeln!(s, "<text x=\"{}\" y=\"{}\">Conflicted listener</text>", x + 18, y + 12);
        x += w;
        widest = widest.max(x);
    }
    Some(Picture {
        id: format!("answers-{}", row.name),
        title: if conflicted.is_empty() {
            format!("{}: which certificate answers each name, per version", row.name)
        } else {
            format!("{}: which certificate answers each name, and which listener is Conflicted, per version", row.name)
        },
        width: grid_w.max(widest),
        height: y + 24,
        body: s,
    })
}

/// XML text and attribute escaping; XML 1.0 forbids most control characters even escaped.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::report_of_data;

    /// Parses `xml` to the end with quick-xml: an unescaped `<` or `&` is an error.
    fn well_formed(xml: &str) -> Result<usize, String> {
        let mut reader = quick_xml::Reader::from_str(xml);
        let mut elements = 0;
        loop {
            match reader.read_event() {
                Ok(quick_xml::events::Event::Eof) => return Ok(elements),
                Ok(quick_xml::events::Event::Start(_) | quick_xml::events::Event::Empty(_)) => elements += 1,
                Ok(_) => {}
                Err(e) => return Err(format!("at byte {}: {e}", reader.buffer_position())),
            }
        }
    }

    #[test]
    fn the_picture_is_well_formed_self_contained_and_escapes_names() {
        let mut r = report_of_data(&["handwritten", "bad"]);
        // A case name with markup in it (evidence is input) must come out as text.
        let mut row = r.matrix.cases.remove("http01-default").unwrap();
        row.name = "x<b>&\"'y".into();
        r.matrix.cases.insert(row.name.clone(), row);
        let svg = render(&r);
        well_formed(&svg).unwrap_or_else(|e| panic!("report.svg is not well-formed XML {e}:\n{svg}"));
        assert!(svg.contains("x&lt;b&gt;&amp;&quot;&#39;y"), "{svg}");
        for external in ["href", "<image", "@import", "url("] {
            assert!(!svg.contains(external), "report.svg refers to something outside it ({external})");
        }
        // Every picture inline in the page parses on its own too.
        for p in pictures(&r) {
            well_formed(&p.inline()).unwrap_or_else(|e| panic!("{}: {e}", p.id));
        }
        let html = r.html();
        for external in ["<script", "<link", "src=", "@import", "url(", "href=\"http", "href=\"//"] {
            assert!(!html.contains(external), "report.html refers to something outside it ({external})");
        }
        assert!(!html.contains("x<b>"), "an unescaped case name in report.html");
    }

    #[test]
    fn the_heat_map_has_one_cell_per_case_and_column_and_marks_changes() {
        let r = report_of_data(&["handwritten"]);
        let heat = &pictures(&r)[0];
        assert_eq!(heat.id, "heat-map");
        let body = heat.inline();
        assert_eq!(body.matches("<g class=\"cell ").count(), r.matrix.cases.len() * r.matrix.columns.len());
        // http01-default ran on kind 1.20.1 only: the other kind columns are not run.
        assert!(body.contains("<title>http01-default on kind 1.19.5: not run"), "{body}");
        assert!(
            body.contains("<title>dns01-default on kind 1.19.7: FAIL 2/19 (failed expectations of all checked); some fact differs"),
            "{body}"
        );
    }

    #[test]
    fn one_certificate_has_one_colour_in_every_grid() {
        let r = report_of_data(&["handwritten"]);
        let colours = answer_colours(&r);
        let grids: Vec<Picture> = pictures(&r).into_iter().filter(|p| p.id.starts_with("answers-")).collect();
        assert_eq!(grids.len(), 2);
        let fill = colours["gateway-wildcard"].0;
        for g in &grids {
            let cell = g.body.find("on kind 1.20.1: gateway-wildcard").or_else(|| g.body.find(": gateway-wildcard")).unwrap();
            let rest = &g.body[cell..];
            assert!(rest[..rest.find("</g>").unwrap()].contains(&format!("fill=\"{fill}\"")), "{}", g.id);
        }
        assert_eq!(colours["nothing (reset)"], NOTHING_RESET);
    }

    #[test]
    fn escapes_and_fits() {
        assert_eq!(esc("<a href='x'>&\u{1}"), "&lt;a href=&#39;x&#39;&gt;&amp;?");
        assert_eq!(fit("gateway-wildcard", 8), "gateway…");
        assert_eq!(fit("short", 8), "short");
    }
}
