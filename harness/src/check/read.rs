//! What `check` is pointed at: files, folders (recursively, `*.yaml`, `*.yml`, `*.json`) and
//! `-` for standard input; multi-document YAML and `List` objects. The kinds the model takes are
//! kept; every other kind is counted, so a whole `helm template` output can be piped in.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::case::manifests::{self, Object};

/// The most a single input (a file or standard input) may hold; a larger one is refused rather
/// than read without bound.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// The kinds `check` reads: what the model takes, plus the objects that say which Services,
/// Secrets and namespaces exist.
pub const TAKEN_KINDS: &[&str] =
    &["Gateway", "HTTPRoute", "TLSRoute", "GRPCRoute", "ListenerSet", "XListenerSet", "ReferenceGrant", "Service", "Secret", "Namespace"];

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
}

/// Reads every path (`-` is standard input, read at most once).
pub fn read(paths: &[PathBuf]) -> Result<Inputs, InputError> {
    let mut inputs = Inputs::default();
    let mut stdin_read = false;
    for p in paths {
        if p.as_os_str() == "-" {
            if stdin_read {
                return Err(located("-", 0, "input", "standard input given twice".into()));
            }
            stdin_read = true;
            let text = read_bounded(std::io::stdin().lock(), "-")?;
            take(&mut inputs, Path::new("-"), &text)?;
            continue;
        }
        let meta = std::fs::metadata(p).map_err(|e| located(&p.display().to_string(), 0, "path", format!("cannot read: {e}")))?;
        if meta.is_dir() {
            let files = walk(p)?;
            if files.is_empty() {
                return Err(located(&p.display().to_string(), 0, "path", "no *.yaml, *.yml or *.json files in this folder".into()));
            }
            for f in files {
                read_file(&mut inputs, &f)?;
            }
        } else {
            read_file(&mut inputs, p)?;
        }
    }
    Ok(inputs)
}

fn located(file: &str, line: u64, field: &str, message: String) -> InputError {
    InputError { file: file.to_string(), line, column: if line == 0 { 0 } else { 1 }, field: field.into(), message }
}

fn read_file(inputs: &mut Inputs, path: &Path) -> Result<(), InputError> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| located(&name, 0, "path", format!("cannot read: {e}")))?;
    let text = read_bounded(f, &name)?;
    take(inputs, path, &text)
}

fn read_bounded(r: impl Read, name: &str) -> Result<String, InputError> {
    let mut buf = Vec::new();
    r.take(MAX_INPUT_BYTES + 1).read_to_end(&mut buf).map_err(|e| located(name, 0, "input", format!("cannot read: {e}")))?;
    if buf.len() as u64 > MAX_INPUT_BYTES {
        return Err(located(name, 0, "input", format!("larger than {} MiB; split it", MAX_INPUT_BYTES / (1024 * 1024))));
    }
    String::from_utf8(buf)
        .map_err(|e| located(name, 0, "input", format!("not UTF-8 text (byte {}), so not YAML or JSON", e.utf8_error().valid_up_to())))
}

/// Every manifest file below `dir`, sorted, so the order (and the output) is stable.
fn walk(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| located(&d.display().to_string(), 0, "path", format!("cannot list: {e}")))?;
        for e in entries {
            let p = e.map_err(|e| located(&d.display().to_string(), 0, "path", format!("cannot list: {e}")))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().and_then(|x| x.to_str()).is_some_and(|x| matches!(x, "yaml" | "yml" | "json")) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn take(inputs: &mut Inputs, path: &Path, text: &str) -> Result<(), InputError> {
    inputs.sources += 1;
    let objects = manifests::parse_text(path, text).map_err(|p| InputError {
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

/// A `List` (what `kubectl get -o yaml` prints) becomes its items, each with the List's line.
fn flatten(o: Object) -> Result<Vec<Object>, InputError> {
    if !(o.kind == "List" || (o.kind.ends_with("List") && o.value.get("items").is_some())) {
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
