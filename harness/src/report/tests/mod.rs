//! Report tests: goldens over real and hand-written evidence, and every kind of bad input.
//!
//! Test data lives in `harness/tests/data/report/`:
//! * `real/fixture-lane-*`: a real fixture-lane run (`cargo test --test e2e --
//!   pipeline::fixture::worked_example_passes`), copied as written;
//! * `real/model-lane-*`: real model-lane runs on every pinned version (`layout-gate run --lane
//!   model`), copied as written;
//! * `handwritten/kind-fixture-*`: hand-written kind-lane evidence (not real runs; their
//!   environment says so), four versions with differences between them, 1.20.1 in two shards;
//! * `handwritten/handwritten-model-1.19.6`: hand-written model-lane evidence that differs from
//!   the kind fixture of its version, for "model against observation";
//! * `bad/`: an unknown schema, a truncated file, a run folder without evidence.json, and a
//!   rerun of kind 1.19.6 that disagrees with `runs/kind-fixture-1.19.6`;
//! * `golden/`: the expected report.md and report.json, and report.html and report.svg of the
//!   with-problems input (`LAYOUT_GATE_BLESS=1` rewrites them).

mod bad_input;
mod fixtures;
mod golden;
mod labels;
mod merge;
mod paste;
mod real;
mod trust;

use std::path::{Path, PathBuf};

use super::{Report, load_all};

pub(super) fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/report")
}

/// Paths as the report shows them: relative to the test data folder, so goldens do not depend
/// on where the repository is checked out.
pub(super) fn show(p: &Path) -> String {
    let base = data_dir();
    match p.strip_prefix(&base) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => p.display().to_string(),
    }
}

pub(super) fn report_of(args: &[PathBuf]) -> Report {
    Report::build(load_all(args, &show))
}

/// The report of folders under the test data folder, by name.
pub(crate) fn report_of_data(names: &[&str]) -> Report {
    report_of(&names.iter().map(|n| data_dir().join(n)).collect::<Vec<_>>())
}
