//! Bytes to raw shapes.
//!
//! The fast path parses without tracking the field path; only when that fails is the input
//! parsed a second time through `serde_path_to_error` to name the field. Parsing is
//! deterministic, so the second pass fails at the same spot, and good dumps (the common case,
//! tens of MB on Cilium) do not pay for path bookkeeping.

use std::cell::RefCell;

use super::error::DumpError;
use super::parse::{ObjectOnly, RawRoot};

pub(super) fn decode(bytes: &[u8], origin: &str, yaml: bool) -> Result<RawRoot, DumpError> {
    if yaml { decode_yaml(bytes, origin) } else { decode_json(bytes, origin) }
}

fn decode_json(bytes: &[u8], origin: &str) -> Result<RawRoot, DumpError> {
    if let Err(d) = super::unique_keys::check(bytes) {
        return Err(json_error(origin, Some(d.path).filter(|p| !p.is_empty()), &d.error));
    }
    match serde_json::from_slice::<ObjectOnly<RawRoot>>(bytes) {
        Ok(root) => Ok(root.0),
        Err(fast_err) => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            let tracked = serde_path_to_error::deserialize::<_, ObjectOnly<RawRoot>>(&mut de)
                .map_err(|e| (Some(e.path().to_string()), e.into_inner()))
                .and_then(|root| de.end().map(|()| root).map_err(|e| (None, e)));
            let (path, err) = match tracked {
                Err(found) => found,
                // Cannot happen (same parser, same input); fall back to the first error.
                Ok(_) => (None, fast_err),
            };
            Err(json_error(origin, path, &err))
        }
    }
}

fn json_error(origin: &str, path: Option<String>, err: &serde_json::Error) -> DumpError {
    let mut message = err.to_string();
    // serde_json appends " at line L column C"; the location is reported in our own format.
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    if let Some(stripped) = message.strip_suffix(&suffix) {
        message = stripped.to_string();
    }
    if matches!(err.classify(), serde_json::error::Category::Syntax | serde_json::error::Category::Eof) {
        message = format!("not valid JSON: {message}");
    }
    let (line, column) = if err.line() == 0 { (None, None) } else { (Some(err.line()), Some(err.column())) };
    DumpError::Parse { origin: origin.to_string(), path: path.filter(|p| p != "."), message, line, column }
}

fn decode_yaml(bytes: &[u8], origin: &str) -> Result<RawRoot, DumpError> {
    match serde_saphyr::from_slice::<ObjectOnly<RawRoot>>(bytes) {
        Ok(root) => Ok(root.0),
        Err(fast_err) => {
            // The closure must return saphyr's own error, so the path is carried out beside it.
            let path = RefCell::new(None);
            let tracked = serde_saphyr::with_deserializer_from_slice(bytes, |de| {
                serde_path_to_error::deserialize::<_, ObjectOnly<RawRoot>>(de).map_err(|e| {
                    *path.borrow_mut() = Some(e.path().to_string());
                    e.into_inner()
                })
            });
            let err = match tracked {
                Err(e) => e,
                Ok(_) => fast_err,
            };
            Err(yaml_error(origin, path.into_inner(), &err))
        }
    }
}

fn yaml_error(origin: &str, path: Option<String>, err: &serde_saphyr::Error) -> DumpError {
    let bare = err.without_snippet();
    let location = bare.location();
    let mut message = bare.to_string();
    // saphyr may end its message with its own location; keep only ours.
    if let Some(loc) = &location {
        for suffix in
            [format!(" at line {}, column {}", loc.line(), loc.column()), format!(" at line {} column {}", loc.line(), loc.column())]
        {
            if let Some(stripped) = message.strip_suffix(&suffix) {
                message = stripped.to_string();
            }
        }
    }
    let (line, column) = match location {
        Some(loc) if loc.line() > 0 => (usize::try_from(loc.line()).ok(), usize::try_from(loc.column()).ok()),
        _ => (None, None),
    };
    // A key twice, said as the JSON reader says it: the key, at the object's path. (saphyr
    // names the key and suggests a policy option of its own, and the path it is tracked at ends
    // in `?`, the key it had not read yet.)
    let mut path = path;
    if let Some(key) = message.strip_prefix("duplicate mapping key: ") {
        let key = key.split(", set DuplicateKeyPolicy").next().unwrap_or(key).trim();
        message = format!("duplicate key `{key}`");
        path = path.map(|p| p.trim_end_matches('?').trim_end_matches('.').to_string()).filter(|p| !p.is_empty());
    }
    DumpError::Parse { origin: origin.to_string(), path: path.filter(|p| p != "."), message, line, column }
}
