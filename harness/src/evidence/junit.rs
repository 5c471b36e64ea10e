//! `junit.xml`: one testsuite per case, one testcase per verdict, for CI test reporting.

use std::fmt::Write;

use super::Evidence;

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even when escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

pub fn render_junit(ev: &Evidence) -> String {
    let cilium = ev.cilium.as_ref().map(|c| c.version.as_str()).unwrap_or("n/a");
    // A case that was not run is an error, never a pass or a skip: CI must not go green on it.
    let total: usize = ev.cases.iter().map(|c| c.verdicts.len().max(1)).sum::<usize>() + ev.not_run.len();
    let failures: usize = ev.cases.iter().map(|c| c.verdicts.iter().filter(|v| !v.passed()).count()).sum();
    let errors = ev.cases.iter().filter(|c| c.error.is_some()).count() + ev.not_run.len();
    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        s,
        r#"<testsuites name="layout-gate {} cilium {}" tests="{total}" failures="{failures}" errors="{errors}">"#,
        ev.lane.as_str(),
        esc(cilium)
    );
    for c in &ev.cases {
        let f = c.verdicts.iter().filter(|v| !v.passed()).count();
        let suite = format!("{}/{}/{}", ev.lane.as_str(), cilium, c.name);
        let _ = writeln!(
            s,
            r#"  <testsuite name="{}" tests="{}" failures="{f}" errors="{}" time="{:.3}" timestamp="{}">"#,
            esc(&suite),
            c.verdicts.len().max(1),
            usize::from(c.error.is_some()),
            c.duration_ms as f64 / 1000.0,
            esc(&ev.started_at)
        );
        let _ = writeln!(
            s,
            r#"    <properties><property name="lane" value="{}"/><property name="case_hash" value="{}"/></properties>"#,
            ev.lane.as_str(),
            esc(&c.hash)
        );
        if let Some(e) = &c.error {
            let _ = writeln!(s, r#"    <testcase classname="{}" name="run"><error message="{}"/></testcase>"#, esc(&suite), esc(e));
        }
        for v in &c.verdicts {
            let name = format!("{} [{}]", v.subject, v.provenance);
            if v.passed() {
                let _ = writeln!(s, r#"    <testcase classname="{}" name="{}"/>"#, esc(&suite), esc(&name));
            } else {
                let _ = writeln!(
                    s,
                    r#"    <testcase classname="{}" name="{}"><failure message="{}">{}</failure></testcase>"#,
                    esc(&suite),
                    esc(&name),
                    esc(v.detail.lines().next().unwrap_or("")),
                    esc(&v.detail)
                );
            }
        }
        let _ = writeln!(s, "  </testsuite>");
    }
    for c in &ev.not_run {
        let suite = format!("{}/{}/{}", ev.lane.as_str(), cilium, c.name);
        let _ = writeln!(
            s,
            r#"  <testsuite name="{}" tests="1" failures="0" errors="1" time="0.000" timestamp="{}">"#,
            esc(&suite),
            esc(&ev.started_at)
        );
        let _ = writeln!(
            s,
            r#"    <testcase classname="{}" name="run"><error message="{}"/></testcase>"#,
            esc(&suite),
            esc(&format!("not run: {}", c.reason))
        );
        let _ = writeln!(s, "  </testsuite>");
    }
    let _ = writeln!(s, "</testsuites>");
    s
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(esc("a<b>&\"'\u{1}"), "a&lt;b&gt;&amp;&quot;&apos;?");
    }
}
