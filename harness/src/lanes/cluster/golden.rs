//! Golden files of the kind lane under `harness/tests/data/kind/`. `LAYOUT_GATE_BLESS=1 cargo
//! test --lib lanes` rewrites them; otherwise a difference fails with a line diff.

use std::path::{Path, PathBuf};

pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/kind")
}

pub fn check_golden(name: &str, actual: &str) {
    crate::golden::assert(&dir().join(name), actual);
}
