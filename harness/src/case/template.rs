//! `{placeholder}` substitution in case files and manifests.
//!
//! Placeholders: `{apex}`, `{namespace}`, `{gateway}` and `{secret:CERT}` (the Secret holding a
//! declared certificate). Anything else in braces that looks like a placeholder is an error, so
//! a typo such as `{apx}` cannot reach a cluster. YAML flow mappings (`{a: b}`) are left alone:
//! a placeholder has no spaces and no colon other than the one after `secret`.

use std::collections::BTreeSet;

use crate::types::CertName;

/// The values a run substitutes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vars {
    pub apex: String,
    pub namespace: String,
    pub gateway: String,
}

/// A placeholder found in a text, with its 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    pub name: String,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct TemplateError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// The Secret name a certificate is stored under. One place decides it so the kind lane and
/// every manifest agree.
pub fn secret_name(cert: &CertName) -> String {
    format!("{cert}-tls")
}

fn is_placeholder_body(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b':')
}

/// Every placeholder in `text`, in order.
pub fn placeholders(text: &str) -> Vec<Placeholder> {
    let mut out = Vec::new();
    for (li, line) in text.lines().enumerate() {
        let mut rest = line;
        let mut offset = 0;
        while let Some(start) = rest.find('{') {
            let after = &rest[start + 1..];
            let Some(end) = after.find('}') else { break };
            let body = &after[..end];
            if is_placeholder_body(body) {
                out.push(Placeholder { name: body.to_string(), line: li + 1, column: offset + start + 1 });
            }
            offset += start + 1;
            rest = &rest[start + 1..];
        }
    }
    out
}

/// Checks every placeholder against the known names and the declared certificates.
pub fn check(text: &str, certs: &BTreeSet<CertName>) -> Vec<TemplateError> {
    let mut errs = Vec::new();
    for p in placeholders(text) {
        let problem = match p.name.split_once(':') {
            None if matches!(p.name.as_str(), "apex" | "namespace" | "gateway") => None,
            None => Some(format!("unknown placeholder {{{}}}; known: {{apex}}, {{namespace}}, {{gateway}}, {{secret:CERT}}", p.name)),
            Some(("secret", cert)) => match CertName::new(cert) {
                Ok(c) if certs.contains(&c) => None,
                _ => Some(format!(
                    "{{secret:{cert}}} names no declared certificate; declared: {}",
                    certs.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
                )),
            },
            Some((other, _)) => Some(format!("unknown placeholder {{{other}:...}}; only {{secret:CERT}} takes an argument")),
        };
        if let Some(message) = problem {
            errs.push(TemplateError { line: p.line, column: p.column, message });
        }
    }
    errs
}

/// Substitutes every placeholder. Call [`check`] first; an unknown placeholder here is an error
/// too, never left in place.
pub fn render(text: &str, vars: &Vars) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len());
    for (li, line) in text.split_inclusive('\n').enumerate() {
        let mut rest = line;
        let mut col = 0;
        while let Some(start) = rest.find('{') {
            let after = &rest[start + 1..];
            let end = match after.find('}') {
                Some(end) if is_placeholder_body(&after[..end]) => end,
                _ => {
                    out.push_str(&rest[..start + 1]);
                    col += start + 1;
                    rest = after;
                    continue;
                }
            };
            out.push_str(&rest[..start]);
            let body = &after[..end];
            let value = match body.split_once(':') {
                None => match body {
                    "apex" => vars.apex.clone(),
                    "namespace" => vars.namespace.clone(),
                    "gateway" => vars.gateway.clone(),
                    _ => {
                        return Err(TemplateError {
                            line: li + 1,
                            column: col + start + 1,
                            message: format!("unknown placeholder {{{body}}}"),
                        });
                    }
                },
                Some(("secret", cert)) => match CertName::new(cert) {
                    Ok(c) => secret_name(&c),
                    Err(e) => return Err(TemplateError { line: li + 1, column: col + start + 1, message: e.0 }),
                },
                Some(_) => {
                    return Err(TemplateError {
                        line: li + 1,
                        column: col + start + 1,
                        message: format!("unknown placeholder {{{body}}}"),
                    });
                }
            };
            out.push_str(&value);
            col += start + 2 + end;
            rest = &after[end + 1..];
        }
        out.push_str(rest);
    }
    Ok(out)
}

/// Renders a value that only knows `{apex}` (certificate names, probe SNIs), before a
/// namespace exists.
pub fn render_apex(text: &str, apex: &str) -> String {
    text.replace("{apex}", apex)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        Vars { apex: "example.test".into(), namespace: "lg-a1".into(), gateway: "gw".into() }
    }

    #[test]
    fn substitutes_known_placeholders_and_leaves_flow_maps() {
        let t = "hostname: \"*.{apex}\"\nns: {namespace}\ntls: {mode: Terminate, certificateRefs: [{name: {secret:wild}}]}\n";
        let r = render(t, &vars()).unwrap();
        assert_eq!(r, "hostname: \"*.example.test\"\nns: lg-a1\ntls: {mode: Terminate, certificateRefs: [{name: wild-tls}]}\n");
    }

    #[test]
    fn unknown_placeholders_are_located() {
        let certs: BTreeSet<_> = [CertName::new("wild").unwrap()].into();
        let errs = check("a: {apex}\nb: x.{apx}\nc: {secret:nope}\n", &certs);
        assert_eq!(errs.len(), 2);
        assert_eq!((errs[0].line, errs[0].column), (2, 6));
        assert!(errs[0].message.contains("{apx}"));
        assert_eq!((errs[1].line, errs[1].column), (3, 4));
        assert!(errs[1].message.contains("wild"));
        assert!(render("x: {apx}", &vars()).is_err());
    }
}
