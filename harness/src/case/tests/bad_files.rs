//! Case files that are not what they claim: devices, FIFOs, symlinks leaving the folder. Each
//! is refused with a located problem instead of hanging, growing without bound, or reading a
//! file the case does not own.

use std::os::unix::fs::symlink;
use std::path::Path;

use super::super::*;

const CASE: &str = "summary: s
manifests: [gateway.yaml]
expect:
  - {cilium: \">=1.19.0\", provenance: inferred, gateway: {Accepted: \"True\"}}
";

fn case_dir(root: &Path) -> std::path::PathBuf {
    let dir = root.join("c");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("case.yaml"), CASE).unwrap();
    dir
}

fn only_problem(dir: &Path) -> Problem {
    let problems = load(dir).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    problems.into_iter().next().unwrap()
}

#[test]
fn a_manifest_symlinked_to_dev_zero_is_refused_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = case_dir(tmp.path());
    symlink("/dev/zero", dir.join("gateway.yaml")).unwrap();
    let p = only_problem(&dir);
    assert_eq!((p.line, p.field.as_str()), (2, "manifests"));
    // Refused before any byte is read: the link leaves the folder (the reader would refuse the
    // device itself too, see `input::tests`).
    assert!(p.message.contains("resolves to /dev/zero, outside the case folder"), "{}", p.message);
}

#[test]
fn a_fifo_manifest_is_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = case_dir(tmp.path());
    let fifo = dir.join("gateway.yaml");
    crate::output::dest::testing::fifo(&fifo);
    let p = only_problem(&dir);
    assert!(p.message.contains("FIFO, not a regular file"), "{}", p.message);
}

#[test]
fn a_manifest_symlink_leaving_the_case_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = case_dir(tmp.path());
    std::fs::write(tmp.path().join("elsewhere.yaml"), "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n").unwrap();
    symlink(tmp.path().join("elsewhere.yaml"), dir.join("gateway.yaml")).unwrap();
    let p = only_problem(&dir);
    assert!(p.message.contains("outside the case folder"), "{}", p.message);
}

#[test]
fn an_oversized_case_file_names_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = CASE.to_string();
    text.push_str(&"#".repeat(crate::input::CASE_FILE.bytes as usize));
    std::fs::write(dir.join("case.yaml"), text).unwrap();
    let p = only_problem(&dir);
    assert!(p.file.ends_with("case.yaml"));
    assert!(p.message.contains("larger than the limit of 1048576 bytes (1 MiB)"), "{}", p.message);
}
