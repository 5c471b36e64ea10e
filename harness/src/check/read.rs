//! What `check` is pointed at: files, folders (recursively, `*.yaml`, `*.yml`, `*.json`) and
//! `-` for standard input; multi-document YAML and `List` objects (`kind: List` and every typed
//! `*List`). The kinds the model takes are kept; every other kind is counted, so a whole
//! `helm template` output can be piped in.
//!
//! Every file goes through the tool's one reader ([`crate::input`]): regular files only (a FIFO
//! or a device given by name, or met in a folder, is refused at once instead of blocking or
//! reading without end), at most [`MAX_INPUT_BYTES`]. A folder walk does not follow symlinks to
//! folders (`ln -s . self` would otherwise loop, or read every file again), and a file reached
//! by two names is read once. Two objects of the same kind, namespace and name are an error
//! naming both places: `kubectl apply` would keep the last one silently, and which layout the
//! user meant is theirs to say.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::case::manifests::{self, Object};
use crate::input::{self, FileId, Limit};

/// The most a single input (a file or standard input) may hold; a larger one is refused rather
/// than read without bound.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

const INPUT_LIMIT: Limit = Limit { bytes: MAX_INPUT_BYTES, knob: None };

/// The kinds `check` reads: what the model takes, plus the objects that say which Services,
/// Secrets and namespaces exist.
pub const TAKEN_KINDS: &[&str] =
    &["Gateway", "HTTPRoute", "TLSRoute", "GRPCRoute", "ListenerSet", "XListenerSet", "ReferenceGrant", "Service", "Secret", "Namespace"];

/// Kinds that live outside any namespace (their `metadata.namespace` is ignored).
const CLUSTER_SCOPED: &[&str] = &["Namespace"];

/// A bad input, located: the file (or `-`), the line, the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub field: String,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}: {}", self.file, self.line, self.column, self.field, self.message)
    }
}

impl std::error::Error for InputError {}

/// Everything read: the objects kept, in input order, and what was skipped.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub objects: Vec<Object>,
    /// `apiVersion kind` -> how many objects of it were skipped.
    pub skipped: BTreeMap<String, usize>,
    /// How many files (or standard input) were read.
    pub sources: usize,
    /// Symlinks to folders met inside a folder, not followed.
    pub links_not_followed: Vec<PathBuf>,
    /// Names of files already read under another name (a symlink, a path given twice): not
    /// read again.
    pub read_once: Vec<PathBuf>,
}

impl Inputs {
    /// One line saying what was skipped, or `None` when nothing was.
    pub fn skipped_line(&self) -> Option<String> {
        if self.skipped.is_empty() {
            return None;
        }
        let n: usize = self.skipped.values().sum();
        let kinds: Vec<String> = self.skipped.iter().map(|(k, c)| format!("{k} x{c}")).collect();
        Some(format!("skipped {n} object(s) of kinds the model does not take: {}", kinds.join(", ")))
    }

    /// What the folder walk left alone, as lines for standard error.
    pub fn walk_notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for l in &self.links_not_followed {
            out.push(format!("{}: a symlink to a folder, not followed (give the folder itself to read it)", l.display()));
        }
        for f in &self.read_once {
            out.push(format!("{}: the same file as one already read, not read twice", f.display()));
        }
        out
    }
}

/// Reads every path (`-` is standard input, read at most once).
pub fn read(paths: &[PathBuf]) -> Result<Inputs, InputError> {
    let mut r = Reader::default();
    let mut stdin_read = false;
    for p in paths {
        if p.as_os_str() == "-" {
            if stdin_read {
                return Err(located("-", 0, "input", "standard input given twice".into()));
            }
            stdin_read = true;
            let text = read_bounded(std::io::stdin().lock(), "-")?;
            r.take(Path::new("-"), &text)?;
            continue;
        }
        // A path given by name is followed (a symlink to a folder is the folder the user meant);
        // inside a folder, only files are.
        let meta = std::fs::metadata(p).map_err(|e| located(&p.display().to_string(), 0, "path", format!("cannot read: {e}")))?;
        if meta.is_dir() {
            let files = r.walk(p)?;
            if files.is_empty() {
                return Err(located(&p.display().to_string(), 0, "path", "no *.yaml, *.yml or *.json files in this folder".into()));
            }
            for f in files {
                r.read_file(&f)?;
            }
        } else {
            r.read_file(p)?;
        }
    }
    no_duplicates(&r.inputs.objects)?;
    Ok(r.inputs)
}

fn located(file: &str, line: u64, field: &str, message: String) -> InputError {
    InputError { file: file.to_string(), line, column: if line == 0 { 0 } else { 1 }, field: field.into(), message }
}

#[derive(Default)]
struct Reader {
    inputs: Inputs,
    files: BTreeSet<FileId>,
    folders: BTreeSet<(u64, u64)>,
}

impl Reader {
    fn read_file(&mut self, path: &Path) -> Result<(), InputError> {
        let name = path.display().to_string();
        let (bytes, id) = input::read_bytes_identified(path, INPUT_LIMIT).map_err(|e| {
            let hint = match e {
                input::ReadError::NotRegular { kind: "FIFO", .. } => "; to read a pipe, give `-` and pipe it to standard input",
                _ => "",
            };
            located(&name, 0, "path", format!("{}{hint}", e.reason()))
        })?;
        if !self.files.insert(id) {
            self.inputs.read_once.push(path.to_path_buf());
            return Ok(());
        }
        let text = text_of(bytes, &name)?;
        self.take(path, &text)
    }

    /// Every manifest file below `dir`, sorted, so the order (and the output) is stable. Symlinks
    /// to files are kept (read once by identity); symlinks to folders are not followed, and a
    /// folder reached twice (a bind mount, the same folder given twice) is listed once.
    fn walk(&mut self, dir: &Path) -> Result<Vec<PathBuf>, InputError> {
        use std::os::unix::fs::MetadataExt;
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let cannot = |e: std::io::Error| located(&d.display().to_string(), 0, "path", format!("cannot list: {e}"));
            let meta = std::fs::metadata(&d).map_err(cannot)?;
            if !self.folders.insert((meta.dev(), meta.ino())) {
                continue;
            }
            for e in std::fs::read_dir(&d).map_err(cannot)? {
                let e = e.map_err(cannot)?;
                let p = e.path();
                let t = e.file_type().map_err(cannot)?;
                if t.is_dir() {
                    stack.push(p);
                    continue;
                }
                if t.is_symlink() && std::fs::metadata(&p).is_ok_and(|m| m.is_dir()) {
                    self.inputs.links_not_followed.push(p);
                    continue;
                }
                if p.extension().and_then(|x| x.to_str()).is_some_and(|x| matches!(x, "yaml" | "yml" | "json")) {
                    out.push(p);
                }
            }
        }
        out.sort();
        self.inputs.links_not_followed.sort();
        Ok(out)
    }

    fn take(&mut self, path: &Path, text: &str) -> Result<(), InputError> {
        let inputs = &mut self.inputs;
        inputs.sources += 1;
        let objects = manifests::parse_text_large(path, text).map_err(|p| InputError {
            file: p.file.display().to_string(),
            line: p.line,
            column: p.column,
            field: p.field,
            message: p.message,
        })?;
        for o in objects {
            for item in flatten(o)? {
                if TAKEN_KINDS.contains(&item.kind.as_str()) {
                    inputs.objects.push(item);
                } else {
                    *inputs.skipped.entry(format!("{} {}", item.api_version, item.kind)).or_default() += 1;
                }
            }
        }
        Ok(())
    }
}

fn read_bounded(r: impl Read, name: &str) -> Result<String, InputError> {
    let mut buf = Vec::new();
    r.take(MAX_INPUT_BYTES + 1).read_to_end(&mut buf).map_err(|e| located(name, 0, "input", format!("cannot read: {e}")))?;
    if buf.len() as u64 > MAX_INPUT_BYTES {
        return Err(located(name, 0, "input", format!("larger than {} MiB; split it", MAX_INPUT_BYTES / (1024 * 1024))));
    }
    text_of(buf, name)
}

fn text_of(buf: Vec<u8>, name: &str) -> Result<String, InputError> {
    String::from_utf8(buf)
        .map_err(|e| located(name, 0, "input", format!("not UTF-8 text (byte {}), so not YAML or JSON", e.utf8_error().valid_up_to())))
}

/// Where an object is, for messages: `file:line`.
fn place(o: &Object) -> String {
    format!("{}:{}", o.file.display(), o.line)
}

/// The identity of an object on a cluster: API group, kind, namespace (none for cluster-scoped
/// kinds; `default` when a namespaced object names none, as `kubectl apply` places it), name.
fn identity(o: &Object) -> (String, String, String, String) {
    let ns =
        if CLUSTER_SCOPED.contains(&o.kind.as_str()) { String::new() } else { o.namespace.clone().unwrap_or_else(|| "default".into()) };
    (o.group().to_string(), o.kind.clone(), ns, o.name.clone())
}

/// Two objects with one identity are an error at the second, naming the first. Kept rather
/// than merged: `kubectl apply` would keep the last silently, and a check of two layouts
/// (`old.yaml new.yaml`, both defining the Gateway) would otherwise answer for neither.
fn no_duplicates(objects: &[Object]) -> Result<(), InputError> {
    let mut seen: BTreeMap<(String, String, String, String), &Object> = BTreeMap::new();
    for o in objects {
        if let Some(first) = seen.insert(identity(o), o) {
            let (_, kind, ns, name) = identity(o);
            let what = if ns.is_empty() { format!("{kind} {name}") } else { format!("{kind} {ns}/{name}") };
            return Err(InputError {
                file: o.file.display().to_string(),
                line: o.line,
                column: 1,
                field: "metadata.name".into(),
                message: format!(
                    "{what} is defined twice: here and at {}; check one layout per call (kubectl apply would keep only the last, silently)",
                    place(first)
                ),
            });
        }
    }
    Ok(())
}

/// A `List` (what `kubectl get -o yaml` prints) becomes its items, each with the List's line.
fn flatten(o: Object) -> Result<Vec<Object>, InputError> {
    if !manifests::is_list(&o.kind, &o.value) {
        return Ok(vec![o]);
    }
    let at = |field: &str, message: String| InputError {
        file: o.file.display().to_string(),
        line: o.line,
        column: 1,
        field: field.into(),
        message,
    };
    let items = o.value.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let field = format!("items[{i}]");
        let text = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_string);
        let api_version = text("apiVersion").ok_or_else(|| at(&format!("{field}.apiVersion"), "missing or not a string".into()))?;
        let kind = text("kind").ok_or_else(|| at(&format!("{field}.kind"), "missing or not a string".into()))?;
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| manifests::is_list(&kind, &item).then(String::new))
            .ok_or_else(|| at(&format!("{field}.metadata.name"), format!("{kind} has no metadata.name")))?;
        let namespace = item.pointer("/metadata/namespace").and_then(Value::as_str).map(str::to_string);
        out.extend(flatten(Object { file: o.file.clone(), line: o.line, api_version, kind, name, namespace, value: item })?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        p
    }

    const GW: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\nspec:\n  gatewayClassName: cilium\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n";

    #[test]
    fn folders_lists_and_skipped_kinds() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "a/gw.yaml", &format!("{GW}---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: x}}\n"));
        write(
            d.path(),
            "b/list.json",
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"ns"}},{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}]}"#,
        );
        write(d.path(), "b/notes.txt", "not read");
        let got = read(&[d.path().to_path_buf()]).unwrap();
        let kinds: Vec<&str> = got.objects.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds, ["Gateway", "Service"]);
        assert_eq!(got.sources, 2);
        assert_eq!(
            got.skipped_line().unwrap(),
            "skipped 2 object(s) of kinds the model does not take: apps/v1 Deployment x1, v1 ConfigMap x1"
        );
    }

    #[test]
    fn a_file_that_is_not_yaml_is_located() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "broken.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: a\n");
        let e = read(std::slice::from_ref(&p)).unwrap_err();
        assert_eq!(e.file, p.display().to_string());
        assert_eq!(e.field, "yaml");
        assert!(e.line >= 3, "{e}");
        let p = write(d.path(), "prose.yaml", "just some words\n");
        let e = read(&[p]).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (1, "document"), "{e}");
        let p = write(d.path(), "bin.json", "");
        std::fs::write(&p, [0xff, 0xfe, 0x00]).unwrap();
        let e = read(&[p]).unwrap_err();
        assert!(e.message.contains("not UTF-8"), "{e}");
    }

    #[test]
    fn missing_path_and_empty_folder() {
        let d = tempfile::tempdir().unwrap();
        let e = read(&[d.path().join("nope.yaml")]).unwrap_err();
        assert!(e.message.starts_with("cannot read"), "{e}");
        let e = read(&[d.path().to_path_buf()]).unwrap_err();
        assert!(e.message.contains("no *.yaml"), "{e}");
    }
}
