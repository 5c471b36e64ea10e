//! Every rule's `source` must resolve from this repository alone, by the same grammar `lint`
//! applies to a case's `ref` (see `crate::case::refs`).

use super::super::rules;
use crate::case::refs;

#[test]
fn every_rule_source_classifies() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let bad: Vec<String> =
        rules::ALL.iter().filter_map(|r| refs::classify_all(r.source, Some(root)).err().map(|e| format!("rule {}: {e}", r.id))).collect();
    assert!(bad.is_empty(), "rule sources that do not resolve:\n{}", bad.join("\n"));
}
