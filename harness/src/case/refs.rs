//! Where an expectation, a case or a model rule comes from, in a form a reader can follow from
//! this repository alone. A `ref` value is one or more references separated by `, ` or `; `;
//! each reference is exactly one of:
//!
//! - an upstream issue or pull request: `owner/repo#N`, or a short form of the catalogue
//!   (`cilium#N`, `cozystack#N`, `gateway-api#N`, `envoy#N`; see [`SHORT_FORMS`]);
//! - an upstream file at a tag or a 40-hex commit: `cilium@v1.19.6:operator/pkg/x.go`, optionally
//!   followed by `:Function` (or `:Type.Method`, or several as `:A,B`) or `#L10` / `#L10-L20`;
//!   the repository is a short form or `owner/repo`;
//! - a Markdown document inside this repository: `docs/cilium-translation.md`, optionally
//!   `#anchor` (checked against the document's headings, GitHub-style) or `§N` (a heading
//!   numbered `N.`); the file must exist.
//!
//! A reference may be followed by a short gloss in parentheses (`cilium#44889 (backport
//! cilium#46826)`); the gloss is not read, the reference before it must resolve. Anything else
//! (free text, a file outside the repository, a bare file name, a short commit) is refused, so
//! every citation resolves. Longer free text belongs in `note`.

use std::fmt;
use std::path::Path;

/// The short repository names the catalogue uses, and the repositories they stand for.
pub const SHORT_FORMS: &[(&str, &str)] = &[
    ("cilium", "cilium/cilium"),
    ("cozystack", "cozystack/cozystack"),
    ("gateway-api", "kubernetes-sigs/gateway-api"),
    ("envoy", "envoyproxy/envoy"),
];

/// One classified reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    /// An issue or PR: the full `owner/repo` and its number.
    Issue { repo: String, number: u64 },
    /// A file at a tag or commit, with an optional function or line range.
    File { repo: String, rev: String, path: String, within: Option<String> },
    /// A document of this repository, with an optional heading anchor or section number.
    Doc { path: String, section: Option<Section> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Section {
    Anchor(String),
    Number(u32),
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ref::Issue { repo, number } => write!(f, "{repo}#{number}"),
            Ref::File { repo, rev, path, within } => {
                write!(f, "{repo}@{rev}:{path}")?;
                match within {
                    Some(w) if w.starts_with('#') => write!(f, "{w}"),
                    Some(w) => write!(f, ":{w}"),
                    None => Ok(()),
                }
            }
            Ref::Doc { path, section: None } => f.write_str(path),
            Ref::Doc { path, section: Some(Section::Anchor(a)) } => write!(f, "{path}#{a}"),
            Ref::Doc { path, section: Some(Section::Number(n)) } => write!(f, "{path} §{n}"),
        }
    }
}

const GRAMMAR: &str = "write owner/repo#N, cilium#N / cozystack#N / gateway-api#N / envoy#N, \
cilium@<tag or 40-hex commit>:<path>[:Function | #L1-L2], or a document of this repository like \
docs/cilium-translation.md#anchor (or § N); several are separated by \", \" or \"; \", each may carry a gloss in parentheses; free text goes in `note`";

/// Splits a `ref` value into its references and classifies each; `repo_root` is where document
/// paths are resolved (and their headings read). The error says which part failed and why.
pub fn classify_all(value: &str, repo_root: Option<&Path>) -> Result<Vec<Ref>, String> {
    let parts = split_outside_parens(value)?;
    if parts.iter().all(|p| p.is_empty()) {
        return Err(format!("an empty ref; {GRAMMAR}"));
    }
    parts.iter().map(|p| classify(strip_gloss(p), repo_root)).collect()
}

/// Splits at `, ` and `; ` that are not inside a parenthesized gloss.
fn split_outside_parens(value: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let bytes = value.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b',' | b';' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                parts.push(value[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err(format!("{value:?}: a ')' without its '('"));
        }
    }
    if depth != 0 {
        return Err(format!("{value:?}: a '(' without its ')'"));
    }
    parts.push(value[start..].trim());
    Ok(parts)
}

/// A reference may carry a short gloss in parentheses after it (`cilium#44889 (backport
/// cilium#46826)`); the reference before it is what must resolve.
fn strip_gloss(part: &str) -> &str {
    match part.find(" (") {
        Some(i) if part.ends_with(')') => part[..i].trim_end(),
        _ => part,
    }
}

/// Classifies one reference.
pub fn classify(s: &str, repo_root: Option<&Path>) -> Result<Ref, String> {
    let bad = |why: &str| Err(format!("{s:?} is not a reference this repository can resolve ({why}); {GRAMMAR}"));
    if s.is_empty() {
        return bad("empty");
    }
    if s.chars().any(char::is_whitespace) && !s.contains(" §") {
        return bad("it contains spaces");
    }
    // A document: a relative `.md` path, optionally #anchor or §N.
    if let Some(r) = doc_ref(s) {
        let (path, section) = r?;
        return check_doc(s, path, section, repo_root);
    }
    // owner/repo#N or short#N.
    if let Some((repo, num)) = s.split_once('#')
        && !repo.contains('@')
    {
        let Some(repo) = repo_name(repo) else { return bad("unknown repository; use owner/repo or a short form") };
        return match num.parse::<u64>() {
            Ok(n) if n > 0 && num.bytes().all(|b| b.is_ascii_digit()) => Ok(Ref::Issue { repo, number: n }),
            _ => bad("the issue number is not a number"),
        };
    }
    // repo@rev:path[:Function | #Lx[-Ly]]
    if let Some((repo, rest)) = s.split_once('@') {
        let Some(repo) = repo_name(repo) else { return bad("unknown repository; use owner/repo or a short form") };
        let Some((rev, rest)) = rest.split_once(':') else { return bad("a file reference needs :<path> after the tag or commit") };
        if !is_tag(rev) && !is_commit(rev) {
            return bad("the revision is neither a tag like v1.19.6 nor a 40-hex commit");
        }
        let (path, within) = match rest.split_once(':') {
            Some((p, func)) => {
                if func.is_empty() || !func.chars().all(|c| c.is_ascii_alphanumeric() || "_.()*,".contains(c)) {
                    return bad("the function after the path is not a Go or C++ identifier (several: A,B)");
                }
                (p, Some(func.to_string()))
            }
            None => match rest.split_once('#') {
                Some((p, lines)) if is_line_range(lines) => (p, Some(format!("#{lines}"))),
                Some(_) => return bad("a line range is #L10 or #L10-L20"),
                None => (rest, None),
            },
        };
        if path.is_empty() || path.starts_with('/') || path.split('/').any(|c| c.is_empty() || c == "..") {
            return bad("the path must be a relative file path in the upstream repository");
        }
        return Ok(Ref::File { repo, rev: rev.to_string(), path: path.to_string(), within });
    }
    bad("not an issue, an upstream file at a revision, or a document of this repository")
}

/// `Some` when `s` looks like a document reference; the inner result says whether its section
/// part is well-formed.
fn doc_ref(s: &str) -> Option<Result<(&str, Option<Section>), String>> {
    let (path, section) = if let Some((p, n)) = s.split_once(" §").or_else(|| s.split_once('§')) {
        let n = n.trim();
        let sec = match n.parse::<u32>() {
            Ok(v) if n.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(Section::Number(v))),
            _ => Err(format!("{s:?}: a section is written §N with one number, e.g. §4")),
        };
        (p.trim(), sec)
    } else if let Some((p, a)) = s.split_once('#') {
        (p, Ok(Some(Section::Anchor(a.to_string()))))
    } else {
        (s, Ok(None))
    };
    if !path.ends_with(".md") || path.contains('@') {
        return None;
    }
    Some(section.map(|sec| (path, sec)))
}

fn check_doc(s: &str, path: &str, section: Option<Section>, repo_root: Option<&Path>) -> Result<Ref, String> {
    if path.starts_with('/') || path.split('/').any(|c| c.is_empty() || c == "..") {
        return Err(format!("{s:?}: a document path is relative to the repository root and stays inside it"));
    }
    let Some(root) = repo_root else {
        return Err(format!("{s:?}: cannot check a document reference without the repository root (no Cargo.toml above the case)"));
    };
    // Bounded like every file a case names: a regular file inside the repository once links
    // are resolved, at most DOCUMENT bytes (a `docs/x.md` linked to /dev/zero or a FIFO is
    // refused, not read without end or waited on).
    let text = crate::input::read_document(root, path)
        .map_err(|e| format!("{s:?}: {path} is not a document of this repository ({}: {})", e.path().display(), e.reason()))?;
    if let Some(sec) = &section {
        let heads = headings(&text);
        let found = match sec {
            Section::Anchor(a) => heads.iter().any(|h| &slug(h) == a),
            Section::Number(n) => heads.iter().any(|h| numbered(h) == Some(*n)),
        };
        if !found {
            let known: Vec<String> = heads.iter().map(|h| format!("#{}", slug(h))).collect();
            return Err(format!("{s:?}: {path} has no such heading; its anchors: {}", known.join(", ")));
        }
    }
    Ok(Ref::Doc { path: path.to_string(), section })
}

fn repo_name(r: &str) -> Option<String> {
    if let Some((_, full)) = SHORT_FORMS.iter().find(|(short, _)| *short == r) {
        return Some(full.to_string());
    }
    let (owner, name) = r.split_once('/')?;
    let ok = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    (ok(owner) && ok(name) && !name.contains('/')).then(|| r.to_string())
}

fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `v1.19.6`, `v1.20.0-rc.1`, `1.4.1`: a release tag.
fn is_tag(s: &str) -> bool {
    let core = s.strip_prefix('v').unwrap_or(s);
    let (nums, pre) = core.split_once('-').unwrap_or((core, ""));
    let parts: Vec<&str> = nums.split('.').collect();
    parts.len() >= 2
        && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && pre.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
}

fn is_line_range(s: &str) -> bool {
    let line = |p: &str| p.strip_prefix('L').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    match s.split_once('-') {
        Some((a, b)) => line(a) && line(b),
        None => line(s),
    }
}

/// The text of every ATX heading outside fenced code.
fn headings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = t.bytes().take_while(|b| *b == b'#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
            out.push(t[hashes..].trim().trim_end_matches('#').trim().to_string());
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
pub fn slug(heading: &str) -> String {
    heading
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `4` for a heading `4. One Envoy listener or one per port`.
fn numbered(heading: &str) -> Option<u32> {
    let digits: String = heading.chars().take_while(char::is_ascii_digit).collect();
    let rest = &heading[digits.len()..];
    (!digits.is_empty() && (rest.starts_with('.') || rest.starts_with(' '))).then(|| digits.parse().ok()).flatten()
}

/// The repository root above `dir`: the nearest ancestor holding `Cargo.toml`.
pub fn repo_root_above(dir: &Path) -> Option<std::path::PathBuf> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors().find(|a| a.join("Cargo.toml").is_file()).map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn issues_and_short_forms() {
        assert_eq!(classify("cilium#46917", None).unwrap(), Ref::Issue { repo: "cilium/cilium".into(), number: 46917 });
        assert_eq!(classify("gateway-api#3000", None).unwrap(), Ref::Issue { repo: "kubernetes-sigs/gateway-api".into(), number: 3000 });
        assert_eq!(classify("envoy#1", None).unwrap(), Ref::Issue { repo: "envoyproxy/envoy".into(), number: 1 });
        assert_eq!(classify("cozystack/cozystack#3912", None).unwrap(), Ref::Issue { repo: "cozystack/cozystack".into(), number: 3912 });
        for bad in ["#3912", "cilium#", "cilium#12a", "ciliumx#1", "a/b/c#1", "cilium#0"] {
            assert!(classify(bad, None).is_err(), "{bad} classified");
        }
    }

    #[test]
    fn files_at_tags_and_commits() {
        let r = classify("cilium@v1.19.6:operator/pkg/gateway-api/gateway_reconcile.go:setListenerStatus", None).unwrap();
        assert_eq!(
            r,
            Ref::File {
                repo: "cilium/cilium".into(),
                rev: "v1.19.6".into(),
                path: "operator/pkg/gateway-api/gateway_reconcile.go".into(),
                within: Some("setListenerStatus".into())
            }
        );
        let c = "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/testdata/gateway/x/input/a.yaml";
        assert!(matches!(classify(c, None).unwrap(), Ref::File { within: None, .. }));
        assert!(
            matches!(classify("envoy@v1.36.0:source/common/x.cc#L10-L20", None).unwrap(), Ref::File { within: Some(w), .. } if w == "#L10-L20")
        );
        for bad in [
            "cilium@main:operator/x.go",
            "cilium@v1.19.6",
            "cilium@v1.19.6:",
            "cilium@v1.19.6:../x.go",
            "cilium@00159e53:operator/x.go",
            "cilium@v1.19.6:x.go#10",
            "cilium@v1.19.6:x.go:set listener",
        ] {
            assert!(classify(bad, None).is_err(), "{bad} classified");
        }
    }

    #[test]
    fn documents_are_checked_against_the_repository() {
        let root = root();
        assert!(classify("cases/README.md", Some(root)).is_ok());
        assert!(classify("cases/README.md#index", Some(root)).is_ok());
        let e = classify("cases/README.md#no-such-heading", Some(root)).unwrap_err();
        assert!(e.contains("no such heading") && e.contains("#index"), "{e}");
        assert!(classify("docs/nope.md", Some(root)).unwrap_err().contains("not a document of this repository"));
        assert!(classify("../x.md", Some(root)).is_err());
        assert!(classify("cases/README.md", None).is_err());
    }

    #[test]
    fn free_text_and_outside_files_are_refused() {
        let root = Some(root());
        for bad in ["outside-notes.md §4", "see the reference", "outside-notes.md", "Gateway API", ""] {
            assert!(classify_all(bad, root).is_err(), "{bad:?} classified");
        }
        let e = classify_all("cilium#47306, outside-notes.md §7", root).unwrap_err();
        assert!(e.contains("outside-notes.md"), "{e}");
        assert_eq!(classify_all("cilium#47306, cilium#47457; cozystack#3912", root).unwrap().len(), 3);
        // A gloss after a reference is allowed; the reference itself must still resolve.
        assert_eq!(classify_all("cozystack#3342 (live on 1.19.5), cilium#44889 (backport cilium#46826, 1.19.6)", root).unwrap().len(), 2);
        assert!(classify_all("outside-notes.md §4 (one listener)", root).is_err());
        assert!(classify_all("(only a gloss)", root).is_err());
        assert!(classify_all("cilium#1 (unbalanced", root).is_err());
        let two = "cilium@v1.19.6:operator/pkg/model/helpers.go:ComputeHosts,checkHostNameIsolation";
        assert_eq!(classify_all(two, root).unwrap().len(), 1);
    }

    #[test]
    fn slugs_follow_github() {
        assert_eq!(slug("4. One Envoy listener, or one per port"), "4-one-envoy-listener-or-one-per-port");
        assert_eq!(slug("`case.yaml`"), "caseyaml");
        assert_eq!(numbered("12. Reading"), Some(12));
        assert_eq!(numbered("Reading"), None);
    }
}
