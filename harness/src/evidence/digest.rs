//! The digest an evidence file carries of its own content.
//!
//! `sha256:<hex>` over the compact JSON of the document with the `digest` field removed. The
//! reader recomputes it from the file as read (a generic JSON value, so a field this build does
//! not know still counts), and a mismatch means the file was changed after it was written: by
//! hand, by a tool, or by a broken copy. It is a seal against accidents and casual edits, not a
//! signature: someone who rewrites the digest too is caught by re-judging instead.

use serde_json::Value;
use sha2::Digest;

const FIELD: &str = "digest";

/// The digest of `doc` (an evidence document as JSON), ignoring its own `digest` field.
pub fn content_digest(doc: &Value) -> String {
    let bytes = match doc {
        Value::Object(map) if map.contains_key(FIELD) => {
            let mut m = map.clone();
            m.remove(FIELD);
            serde_json::to_vec(&Value::Object(m))
        }
        other => serde_json::to_vec(other),
    }
    .unwrap_or_default();
    format!("sha256:{}", crate::types::Fingerprint(sha2::Sha256::digest(&bytes).into()).hex())
}

/// What the reader found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DigestCheck {
    Matches,
    Missing,
    Differs { recorded: String, computed: String },
}

/// Checks the `digest` field of a document as read.
pub fn check_digest(doc: &Value) -> DigestCheck {
    let Some(recorded) = doc.get(FIELD).and_then(Value::as_str) else { return DigestCheck::Missing };
    let computed = content_digest(doc);
    if recorded == computed { DigestCheck::Matches } else { DigestCheck::Differs { recorded: recorded.to_string(), computed } }
}

/// Sets the digest of `doc` (whatever it held before).
pub fn seal(doc: &mut Value) {
    let d = content_digest(doc);
    if let Value::Object(m) = doc {
        m.insert(FIELD.into(), Value::String(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_change_but_the_digest_itself_breaks_the_seal() {
        let mut doc = serde_json::json!({"lane": "model", "cases": [{"outcome": "pass"}], "digest": null});
        assert_eq!(check_digest(&doc), DigestCheck::Missing);
        seal(&mut doc);
        assert_eq!(check_digest(&doc), DigestCheck::Matches);
        // Pretty-printing and reading back (as evidence.json is written) keeps it.
        let back: Value = serde_json::from_str(&serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        assert_eq!(check_digest(&back), DigestCheck::Matches);
        let mut flipped = back.clone();
        flipped["lane"] = "kind".into();
        assert!(matches!(check_digest(&flipped), DigestCheck::Differs { .. }));
        let mut added = back;
        added["unknown"] = 1.into();
        assert!(matches!(check_digest(&added), DigestCheck::Differs { .. }));
    }
}
