//! Reads a case and checks it, collecting every problem with file, line, column and field
//! rather than stopping at the first. [`load`] reads a case folder, [`load_text`] a case held in
//! memory (what `check` derives); both go through the same sections, in the order a reader meets
//! them in `case.yaml`: the header, certificates, backends, manifests, then the expectations
//! ([`super::expect`]) against what the manifests hold ([`super::layout`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::expect::{declared, groups};
use super::layout::Layout;
use super::manifests::{self, Object};
use super::model::*;
use super::problem::{Ctx, Problem, key_on_line, short_yaml_message};
use super::raw::*;
use super::template::{self, Vars};
use super::walk::{CASE_FILE, case_name, discover_with_links};
use super::{api_schema, lint_rules, provenance, refs, scope};
use crate::render::certs::CertSpec;
use crate::types::{BackendName, CertName, DnsName};

pub const DEFAULT_APEX: &str = "example.test";
/// The Gateway's name when the case does not set `gateway:`; `{gateway}` renders to it.
pub const DEFAULT_GATEWAY: &str = "gw";

/// Where a case's manifests are read from.
enum Manifests<'a> {
    /// Files of the case folder (inside it after symlinks, bounded in size).
    Folder,
    /// Text in memory, by file name.
    Memory(&'a BTreeMap<String, String>),
}

/// One case to load: its `case.yaml` text, and where its manifests are.
struct Source<'a> {
    /// The case folder: where its manifests are read (from [`Manifests::Folder`]) and the
    /// folder every problem names.
    dir: &'a Path,
    name: String,
    /// Where document references resolve (the repository holding the case).
    repo_root: Option<PathBuf>,
    text: &'a str,
    manifests: Manifests<'a>,
}

impl Source<'_> {
    /// The text of manifest `relative`, or why it cannot be had.
    fn manifest(&self, relative: &str) -> Result<String, String> {
        match self.manifests {
            Manifests::Folder => crate::input::read_text_inside(self.dir, relative, crate::input::MANIFEST).map_err(|e| e.reason()),
            Manifests::Memory(files) => files.get(relative).cloned().ok_or_else(|| "no such manifest in memory".to_string()),
        }
    }
}

/// Loads and checks the case in `dir` (a folder holding `case.yaml`).
pub fn load(dir: &Path) -> Result<Case, Vec<Problem>> {
    // Inside the case folder like its manifests, opened once.
    let text = crate::input::read_text_inside(dir, CASE_FILE, crate::input::CASE_FILE).map_err(|e| {
        vec![Problem {
            file: dir.join(CASE_FILE),
            line: 0,
            column: 0,
            field: "case.yaml".into(),
            message: format!("cannot read: {}", e.reason()),
        }]
    })?;
    load_source(Source { dir, name: case_name(dir), repo_root: refs::repo_root_above(dir), text: &text, manifests: Manifests::Folder })
}

/// Loads and checks a case held in memory: `case_yaml`, and its manifests by the file names it
/// lists, as the files of folder `dir`, which is never read (it names the case and locates
/// every problem: `dir/case.yaml`, `dir/NAME`). Checked exactly as [`load`] checks a folder,
/// so a case written out and loaded from disk is the same case. Document references (`ref:`)
/// resolve against no repository.
pub fn load_text(dir: &Path, case_yaml: &str, manifests: &BTreeMap<String, String>) -> Result<Case, Vec<Problem>> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    load_source(Source { dir, name, repo_root: None, text: case_yaml, manifests: Manifests::Memory(manifests) })
}

fn load_source(src: Source) -> Result<Case, Vec<Problem>> {
    let file = src.dir.join(CASE_FILE);
    let raw = parse(&file, src.text)?;
    let mut cx = Ctx { file: file.clone(), problems: Vec::new(), repo_root: src.repo_root.clone() };
    let apex = header(&mut cx, &raw, src.text);
    cx.problems.extend(lint_rules::check_case(&raw, &file, &apex));
    if raw.summary.value.trim().is_empty() {
        cx.at(&raw.summary.referenced, "summary", "must say what the case answers");
    }
    let (certificates, certificate_namespaces) = certificates(&mut cx, &raw, &apex);
    let cert_names: BTreeSet<CertName> = certificates.iter().map(|c| c.name.clone()).collect();
    let (backends, backend_namespaces) = backends(&mut cx, &raw, &cert_names);
    let backend_app_protocols = app_protocols(&mut cx, &raw);
    let gateway_name = gateway_name(&mut cx, &raw);
    let lint_vars = Vars { apex: apex.clone(), namespace: scope::LINT_NAMESPACE.into(), gateway: gateway_name.clone() };
    let first = read_manifests(&mut cx, &raw, &src, &lint_vars, &cert_names);
    let manifest_files: Vec<ManifestFile> = first.iter().map(|(f, _)| f.clone()).collect();
    let objects: Vec<Object> = first.iter().flat_map(|(_, os)| os.iter().cloned()).collect();
    let sc =
        StepContext { src: &src, lint_vars: &lint_vars, cert_names: &cert_names, backends: &backends, apex: &apex, gateway: &gateway_name };
    let (steps, step_objects) = steps(&mut cx, &raw, &first, &sc);
    let step_files: Vec<ManifestFile> = steps.iter().flat_map(|s| s.apply.iter().cloned()).collect();
    let every_file: Vec<ManifestFile> = manifest_files.iter().chain(&step_files).cloned().collect();
    let every_object: Vec<Object> = objects.iter().chain(&step_objects).cloned().collect();
    manifest_rules(&mut cx, &raw, &every_file, &every_object, &lint_vars);
    // Which listeners and backends present each certificate, for which names.
    let presenters = lint_rules::presenters(&every_object, &certificates, &backends);
    cx.problems.extend(lint_rules::probe_certificates(&raw, &file, &apex, &presenters));

    // The Gateway the expectations speak of, and what the manifests hold.
    let gateway_at = raw.gateway.as_ref().map(|g| g.referenced).unwrap_or(raw.manifests.referenced);
    let layout = Layout::read(&mut cx, &objects, &gateway_name, gateway_at, !manifest_files.is_empty());
    let groups = groups(&mut cx, "expect", &raw.expect, &layout, &apex, &cert_names, &backends);

    if !cx.problems.is_empty() {
        return Err(cx.problems);
    }
    let (hash, file_digests) = fingerprints(src.text, &every_file);
    Ok(Case {
        name: src.name,
        dir: src.dir.to_path_buf(),
        file,
        summary: raw.summary.value.trim().to_string(),
        refs: raw.refs.iter().map(|r| r.value.clone()).collect(),
        apex,
        gateway: gateway_name,
        certificates,
        backends,
        backend_namespaces,
        backend_app_protocols,
        certificate_namespaces,
        manifests: manifest_files,
        groups,
        hash,
        file_digests,
        cluster_scoped: raw.cluster_scoped.iter().map(|k| k.value.clone()).collect(),
        steps,
    })
}

/// `case.yaml` as written; a syntax or type error is the one problem, named by the key on its
/// line.
fn parse(file: &Path, text: &str) -> Result<RawCase, Vec<Problem>> {
    serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
        let field = key_on_line(text, line).unwrap_or_else(|| "yaml".into());
        vec![Problem { file: file.to_path_buf(), line, column, field, message: short_yaml_message(&e) }]
    })
}

/// The case's references, its placeholders and its apex (the default when it names none or a
/// bad one).
fn header(cx: &mut Ctx, raw: &RawCase, text: &str) -> String {
    for r in &raw.refs {
        provenance::check_ref(cx, "refs", r);
    }
    // Vocabulary, alerts and contradicting probes: see lint_rules.rs.

    // Only {apex} may appear in case.yaml: namespaces and Secrets exist only in manifests.
    for p in template::placeholders(text) {
        if p.name != "apex" {
            cx.problems.push(Problem {
                file: cx.file.clone(),
                line: p.line as u64,
                column: p.column as u64,
                field: "placeholder".into(),
                message: format!("only {{apex}} may be used in case.yaml, not {{{}}}", p.name),
            });
        }
    }
    match &raw.apex {
        Some(a) => match DnsName::new(a.value.clone()) {
            Ok(d) if !d.as_str().starts_with('*') => d.to_string(),
            _ => {
                cx.at(&a.referenced, "apex", format!("{:?} is not a DNS name", a.value));
                DEFAULT_APEX.to_string()
            }
        },
        None => DEFAULT_APEX.to_string(),
    }
}

/// The certificates (`certificates:`), and those placed in another namespace of the case
/// (`certificate_namespaces:`).
fn certificates(cx: &mut Ctx, raw: &RawCase, apex: &str) -> (Vec<CertSpec>, BTreeMap<CertName, String>) {
    let mut certificates = Vec::new();
    let mut cert_names = BTreeSet::new();
    for (cname, names) in &raw.certificates {
        let field = format!("certificates.{cname}");
        let cert = match CertName::new(cname.clone()) {
            Ok(c) if c.as_str() != "nothing" => c,
            Ok(_) => {
                cx.at(&names.referenced, &field, "\"nothing\" is reserved for probes that expect no certificate");
                continue;
            }
            Err(e) => {
                cx.at(&names.referenced, &field, e.0);
                continue;
            }
        };
        let mut dns = Vec::new();
        for n in &names.value {
            match DnsName::new(template::render_apex(&n.value, apex)) {
                Ok(d) => dns.push(d),
                Err(e) => cx.at(&n.referenced, &field, e.0),
            }
        }
        if names.value.is_empty() {
            cx.at(&names.referenced, &field, "a certificate needs at least one DNS name");
        }
        cert_names.insert(cert.clone());
        certificates.push(CertSpec { name: cert, dns_names: dns });
    }

    // Certificates placed in another namespace of the case.
    let mut certificate_namespaces = BTreeMap::new();
    for (cname, suffix) in &raw.certificate_namespaces {
        let field = format!("certificate_namespaces.{cname}");
        match CertName::new(cname.clone()) {
            Ok(c) if cert_names.contains(&c) => match namespace_suffix(&suffix.value) {
                Ok(()) => {
                    certificate_namespaces.insert(c, suffix.value.clone());
                }
                Err(m) => cx.at(&suffix.referenced, &field, m),
            },
            _ => cx.at(&suffix.referenced, &field, format!("{cname:?} is not a certificate of this case (certificates:)")),
        }
    }
    (certificates, certificate_namespaces)
}

/// The `appProtocol` each backend's Service port carries (`backends.<name>.app_protocol`): a
/// single token of printable characters (a Kubernetes protocol like `kubernetes.io/h2c`, or an
/// IANA service name).
fn app_protocols(cx: &mut Ctx, raw: &RawCase) -> BTreeMap<BackendName, String> {
    let mut out = BTreeMap::new();
    for (bname, b) in &raw.backends {
        let Some(ap) = &b.value.app_protocol else { continue };
        let Ok(name) = BackendName::new(bname.clone()) else { continue };
        let v = ap.value.as_str();
        if v.is_empty() || v.len() > 63 + 253 || !v.bytes().all(|c| c.is_ascii_graphic()) {
            cx.at(
                &ap.referenced,
                format!("backends.{bname}.app_protocol"),
                format!("{v:?} is not an appProtocol; write one like kubernetes.io/h2c"),
            );
            continue;
        }
        out.insert(name, v.to_string());
    }
    out
}

/// The backends (`backends:`), and those placed in another namespace of the case.
#[allow(clippy::type_complexity)]
fn backends(
    cx: &mut Ctx,
    raw: &RawCase,
    cert_names: &BTreeSet<CertName>,
) -> (BTreeMap<BackendName, Backend>, BTreeMap<BackendName, String>) {
    let mut backends = BTreeMap::new();
    let mut backend_namespaces = BTreeMap::new();
    for (bname, b) in &raw.backends {
        let field = format!("backends.{bname}");
        let Ok(name) = BackendName::new(bname.clone()).map_err(|e| cx.at(&b.referenced, &field, e.0)) else { continue };
        if let Some(suffix) = &b.value.namespace_suffix {
            match namespace_suffix(&suffix.value) {
                Ok(()) => {
                    backend_namespaces.insert(name.clone(), suffix.value.clone());
                }
                Err(m) => {
                    cx.at(&suffix.referenced, format!("{field}.namespace_suffix"), m);
                    continue;
                }
            }
        }
        let backend = match &b.value.tls {
            None => Backend::Http,
            Some(c) => match CertName::new(c.value.clone()) {
                Ok(c) if cert_names.contains(&c) => Backend::Tls { cert: c },
                _ => {
                    cx.at(
                        &c.referenced,
                        format!("{field}.tls"),
                        format!("{:?} is not a declared certificate{}", c.value, declared(cert_names)),
                    );
                    continue;
                }
            },
        };
        backends.insert(name, backend);
    }
    (backends, backend_namespaces)
}

/// The Gateway the expectations speak of (`gateway:`, or [`DEFAULT_GATEWAY`]).
fn gateway_name(cx: &mut Ctx, raw: &RawCase) -> String {
    match &raw.gateway {
        Some(g) => match BackendName::new(g.value.clone()) {
            Ok(_) => g.value.clone(),
            Err(_) => {
                cx.at(
                    &g.referenced,
                    "gateway",
                    format!("{:?} is not a valid object name (lower-case letters, digits, inner hyphens)", g.value),
                );
                DEFAULT_GATEWAY.to_string()
            }
        },
        None => DEFAULT_GATEWAY.to_string(),
    }
}

/// Manifests: read, render with lint-time values, parse. Each file as written, and every
/// object of those that parse.
fn read_manifests(
    cx: &mut Ctx,
    raw: &RawCase,
    src: &Source,
    lint_vars: &Vars,
    cert_names: &BTreeSet<CertName>,
) -> Vec<(ManifestFile, Vec<Object>)> {
    let mut files = Vec::new();
    if raw.manifests.value.is_empty() {
        cx.at(&raw.manifests.referenced, "manifests", "a case needs at least one manifest (the Gateway)");
    }
    for m in &raw.manifests.value {
        files.extend(read_manifest(cx, "manifests", m, src, lint_vars, cert_names));
    }
    files
}

/// One manifest file `m` names (under `field`): read, checked for placeholders, parsed. None
/// when it cannot be read (a problem says why).
fn read_manifest(
    cx: &mut Ctx,
    field: &str,
    m: &S<String>,
    src: &Source,
    lint_vars: &Vars,
    cert_names: &BTreeSet<CertName>,
) -> Option<(ManifestFile, Vec<Object>)> {
    let path = src.dir.join(&m.value);
    if m.value.contains("..") || Path::new(&m.value).is_absolute() {
        cx.at(&m.referenced, field, format!("{:?} must be a file inside the case folder", m.value));
        return None;
    }
    let mtext = match src.manifest(&m.value) {
        Ok(t) => t,
        Err(reason) => {
            cx.at(&m.referenced, field, format!("cannot read {}: {reason}", path.display()));
            return None;
        }
    };
    for te in template::check(&mtext, cert_names) {
        cx.problems.push(Problem {
            file: path.clone(),
            line: te.line as u64,
            column: te.column as u64,
            field: "placeholder".into(),
            message: te.message,
        });
    }
    let mut objects = Vec::new();
    match manifests::parse_file(&path, &mtext, lint_vars) {
        Ok(objs) => objects = objs,
        Err(p) if p.field == "placeholder" => {} // already reported by check above
        Err(p) => cx.problems.push(Problem { file: p.file, line: p.line, column: p.column, field: p.field, message: p.message }),
    }
    Some((ManifestFile { path, text: mtext }, objects))
}

/// What the case checks its steps with, besides each step's own text.
struct StepContext<'a> {
    src: &'a Source<'a>,
    lint_vars: &'a Vars,
    cert_names: &'a BTreeSet<CertName>,
    backends: &'a BTreeMap<BackendName, Backend>,
    apex: &'a str,
    gateway: &'a str,
}

/// The later steps (`steps:`): each names what it does, applies files (none already present
/// holding an object it applies: an update in place is not a step yet) or deletes files an
/// earlier step applied, and its expectations are checked against what exists after it. The
/// objects of every file a step applies are returned too, for the case-wide manifest rules.
fn steps(cx: &mut Ctx, raw: &RawCase, first: &[(ManifestFile, Vec<Object>)], sc: &StepContext) -> (Vec<Step>, Vec<Object>) {
    let mut present: Vec<(ManifestFile, Vec<Object>)> = first.to_vec();
    let mut out = Vec::new();
    let mut applied_objects = Vec::new();
    for (si, step) in raw.steps.iter().enumerate() {
        let sf = format!("steps[{si}]");
        let at = step.referenced;
        let step = &step.value;
        if step.name.value.trim().is_empty() {
            cx.at(&step.name.referenced, format!("{sf}.name"), "must say what the step does");
        }
        if step.apply.is_empty() && step.delete.is_empty() {
            cx.at(&at, &sf, "a step applies or deletes at least one manifest (apply:, delete:)");
        }
        let mut delete = Vec::new();
        for d in &step.delete {
            let path = sc.src.dir.join(&d.value);
            match present.iter().position(|(f, _)| f.path == path) {
                Some(i) => {
                    present.remove(i);
                    delete.push(path);
                }
                None => cx.at(
                    &d.referenced,
                    format!("{sf}.delete"),
                    format!("{:?} is not applied at this step (an earlier step must apply it, and none delete it since)", d.value),
                ),
            }
        }
        let mut apply = Vec::new();
        for m in &step.apply {
            let Some((file, objs)) = read_manifest(cx, &format!("{sf}.apply"), m, sc.src, sc.lint_vars, sc.cert_names) else { continue };
            if present.iter().any(|(f, _)| f.path == file.path) {
                cx.at(&m.referenced, format!("{sf}.apply"), format!("{:?} is already applied (an earlier step applied it)", m.value));
                continue;
            }
            let clash = objs.iter().find_map(|o| {
                present
                    .iter()
                    .flat_map(|(_, os)| os)
                    .find(|p| p.kind == o.kind && p.name == o.name && p.namespace == o.namespace)
                    .map(|_| o)
            });
            if let Some(o) = clash {
                cx.at(
                    &m.referenced,
                    format!("{sf}.apply"),
                    format!(
                        "{} {} is already applied by an earlier step: updating an object in place is not a step (delete its file first)",
                        o.kind, o.name
                    ),
                );
                continue;
            }
            applied_objects.extend(objs.iter().cloned());
            present.push((file.clone(), objs));
            apply.push(file);
        }
        let objects: Vec<Object> = present.iter().flat_map(|(_, os)| os.iter().cloned()).collect();
        let layout = Layout::read(cx, &objects, sc.gateway, at, !present.is_empty());
        let groups = groups(cx, &format!("{sf}.expect"), &step.expect, &layout, sc.apex, sc.cert_names, sc.backends);
        out.push(Step { name: step.name.value.trim().to_string(), line: at.line(), apply, delete, groups });
    }
    (out, applied_objects)
}

/// The rules over the manifests' objects: the API's own limits and patterns (64 listeners,
/// lower-case RFC 1123 hostnames, ...), fields the API does not know, and the declared
/// cluster-scoped kinds.
fn manifest_rules(cx: &mut Ctx, raw: &RawCase, manifest_files: &[ManifestFile], objects: &[Object], lint_vars: &Vars) {
    let rendered: BTreeMap<PathBuf, String> =
        manifest_files.iter().filter_map(|m| Some((m.path.clone(), template::render(&m.text, lint_vars).ok()?))).collect();
    cx.problems.extend(api_schema::check_objects(objects, &rendered));
    cx.problems.extend(lint_rules::check_unknown_manifest_fields(objects, &rendered));
    for k in &raw.cluster_scoped {
        if !k.value.starts_with(|c: char| c.is_ascii_uppercase()) || !k.value.bytes().all(|b| b.is_ascii_alphanumeric()) {
            cx.at(&k.referenced, "cluster_scoped", format!("{:?} is not a kind (CamelCase, like ClusterRole)", k.value));
        }
    }
}

/// What evidence says of the text that was run: the SHA-256 over `case.yaml` and every
/// manifest (name and text), and each file's own SHA-256 by name.
fn fingerprints(text: &str, manifest_files: &[ManifestFile]) -> (String, BTreeMap<String, String>) {
    use sha2::Digest;
    let file_name = |m: &ManifestFile| m.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut h = sha2::Sha256::new();
    h.update(text.as_bytes());
    for m in manifest_files {
        h.update(file_name(m).as_bytes());
        h.update([0]);
        h.update(m.text.as_bytes());
    }
    let hash = crate::types::Fingerprint(h.finalize().into()).hex();
    let sha = |t: &str| crate::types::Fingerprint(sha2::Sha256::digest(t.as_bytes()).into()).hex();
    let mut digests = BTreeMap::from([(CASE_FILE.to_string(), sha(text))]);
    for m in manifest_files {
        digests.insert(file_name(m), sha(&m.text));
    }
    (hash, digests)
}

/// A backend's or certificate's namespace suffix: it lives only in a namespace the case owns
/// (`{namespace}-SUFFIX`), so a run never places one in a namespace it did not create.
fn namespace_suffix(suffix: &str) -> Result<(), String> {
    let ok = !suffix.is_empty()
        && suffix.len() <= NAMESPACE_SUFFIX_MAX
        && suffix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !suffix.starts_with('-')
        && !suffix.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{suffix:?}: it lives in `{{namespace}}-SUFFIX`; SUFFIX is 1-{} lower-case letters, digits and inner hyphens",
            NAMESPACE_SUFFIX_MAX
        ))
    }
}

/// Checks every case below `root`; the problems of all of them.
pub fn lint(root: &Path) -> Result<Vec<Case>, Vec<Problem>> {
    let (dirs, links) = discover_with_links(root).map_err(|e| {
        vec![Problem { file: root.to_path_buf(), line: 0, column: 0, field: "cases".into(), message: format!("cannot list cases: {e}") }]
    })?;
    if dirs.is_empty() {
        return Err(vec![Problem {
            file: root.to_path_buf(),
            line: 0,
            column: 0,
            field: "cases".into(),
            message: "no case folders (with a case.yaml) here".into(),
        }]);
    }
    let mut cases = Vec::new();
    // Folders that look like cases but would be skipped are problems: a case nobody runs is a
    // gap nobody sees.
    let mut problems = if root.join(CASE_FILE).is_file() { Vec::new() } else { lint_rules::skipped_case_folders(root) };
    problems.extend(links.into_iter().map(|file| {
        Problem {
            file,
            line: 0,
            column: 0,
            field: "cases".into(),
            message: "a symbolic link to a folder: not followed (the case it points at would count twice, or the walk would loop); \
                  move or copy the case here instead"
                .into(),
        }
    }));
    for d in dirs {
        match load(&d) {
            Ok(c) => {
                // Whether the case stays in its namespaces is a rule for cases that run on a
                // cluster (`lint`, `run`), not for every loaded case: `check` loads what a
                // platform rendered, wherever its objects live, to predict it.
                problems.extend(scope::check_case(&c));
                cases.push(c);
            }
            Err(p) => problems.extend(p),
        }
    }
    if problems.is_empty() { Ok(cases) } else { Err(problems) }
}
