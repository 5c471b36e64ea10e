//! Lint of the parts the Cilium fixtures brought: refs that must resolve, `chains:` kinds, and
//! case folders grouped one level down (`cases/cilium/<fixture>`).

use std::path::Path;

use super::super::*;

const GATEWAY: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: {gateway}, namespace: {namespace}}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: \"*.{apex}\", tls: {certificateRefs: [{name: {secret:wild}}]}}
";

fn case_text(reference: &str, envoy: &str) -> String {
    format!(
        "summary: a test case
certificates:
  wild: [\"*.{{apex}}\"]
manifests: [gateway.yaml]
expect:
  - cilium: \"*\"
    provenance: source
    ref: {reference}
    listeners:
      https: {{Accepted: \"True\"}}
    envoy:
{envoy}
"
    )
}

const CHAINS: &str = "      listener: {chains: [{kind: http}, {kind: https, server_names: [\"*.{apex}\"]}]}";

fn write(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("case.yaml"), text).unwrap();
    std::fs::write(dir.join("gateway.yaml"), GATEWAY).unwrap();
}

#[test]
fn an_unresolvable_ref_is_refused_at_its_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    write(&dir, &case_text("\"outside-notes.md §4\"", CHAINS));
    let problems = load(&dir).expect_err("a ref to a file outside the repository must be refused");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!((p.line, p.column, p.field.as_str()), (8, 10, "expect[0].ref"), "{p}");
    assert!(p.message.contains("outside-notes.md"), "{p}");
    // The same case with an upstream issue loads.
    write(&dir, &case_text("cilium#44889", CHAINS));
    load(&dir).unwrap_or_else(|p| panic!("{p:#?}"));
}

#[test]
fn chains_parse_and_a_wrong_kind_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    write(&dir, &case_text("cilium#44889", CHAINS));
    let case = load(&dir).unwrap();
    let applied = case.applied(&CiliumVersion::parse("1.20.1").unwrap());
    let chains = applied.envoy[0].1.chains.clone().unwrap();
    assert_eq!(chains[0], ChainExpect { kind: ChainKind::Http, server_names: vec![] });
    assert_eq!(chains[1], ChainExpect { kind: ChainKind::Https, server_names: vec!["*.example.test".into()] });
    write(&dir, &case_text("cilium#44889", "      listener: {chains: [{kind: terminate}]}"));
    let problems = load(&dir).unwrap_err();
    assert!(
        problems.iter().any(|p| p.field == "expect[0].envoy.listener.chains.kind" && p.message.contains("http, https or tcp_proxy")),
        "{problems:#?}"
    );
    write(&dir, &case_text("cilium#44889", "      listener: {filter_chains: 3, chains: [{kind: http}]}"));
    let problems = load(&dir).unwrap_err();
    assert!(problems.iter().any(|p| p.message.contains("filter_chains is 3 but chains lists 1")), "{problems:#?}");
}

#[test]
fn grouped_case_folders_load_under_their_group_name() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cases");
    write(&root.join("top"), &case_text("cilium#44889", CHAINS));
    write(&root.join("cilium").join("fixture-a"), &case_text("cilium#44889", CHAINS));
    let names: Vec<String> = lint(&root).unwrap().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["cilium/fixture-a", "top"]);
    // The name does not depend on which folder lint was pointed at.
    let names: Vec<String> = lint(&root.join("cilium")).unwrap().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["cilium/fixture-a"]);
    let one = load(&root.join("cilium").join("fixture-a")).unwrap();
    assert_eq!((one.name.as_str(), one.slug().as_str()), ("cilium/fixture-a", "cilium-fixture-a"));
}

/// A repository with a `docs/` folder and one case citing `docs/<doc>`; `make` puts the
/// document in place. The problems of the case.
fn with_document(make: impl FnOnce(&Path)) -> Vec<Problem> {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("docs")).unwrap();
    std::fs::write(repo.join("Cargo.toml"), "[package]\n").unwrap();
    make(&repo.join("docs"));
    let dir = repo.join("cases").join("c");
    write(&dir, &case_text("docs/doc.md", CHAINS));
    load(&dir).err().unwrap_or_default()
}

fn one_ref_problem(problems: &[Problem]) -> &Problem {
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!((p.line, p.column, p.field.as_str()), (8, 10, "expect[0].ref"), "{p}");
    p
}

#[test]
fn a_document_ref_is_read_when_it_is_a_regular_file_of_the_repository() {
    assert_eq!(with_document(|docs| std::fs::write(docs.join("doc.md"), "# Doc\n").unwrap()), vec![]);
}

#[test]
fn a_document_ref_linked_to_dev_zero_is_a_located_error_not_an_endless_read() {
    let p = with_document(|docs| std::os::unix::fs::symlink("/dev/zero", docs.join("doc.md")).unwrap());
    let p = one_ref_problem(&p);
    assert!(p.message.contains("resolves to /dev/zero, outside the repository"), "{p}");
}

#[test]
fn a_document_ref_to_a_device_inside_the_repository_is_refused_by_its_kind() {
    // A device node cannot be made without privileges; a FIFO is the special file a pull
    // request can bring. Opened without blocking and refused by what it is.
    let p = with_document(|docs| {
        crate::output::dest::testing::fifo(&docs.join("doc.md"));
    });
    let p = one_ref_problem(&p);
    assert!(p.message.contains("a FIFO, not a regular file"), "{p}");
}

#[test]
fn a_document_ref_larger_than_the_cap_is_refused() {
    let p = with_document(|docs| {
        let big = "# Doc\n".to_string() + &"x".repeat(crate::input::DOCUMENT.bytes as usize);
        std::fs::write(docs.join("doc.md"), big).unwrap();
    });
    let p = one_ref_problem(&p);
    assert!(p.message.contains("larger than the limit of 4194304 bytes (4 MiB)"), "{p}");
}

#[test]
fn a_document_ref_linked_outside_the_repository_is_refused() {
    let p = with_document(|docs| {
        let outside = docs.parent().unwrap().parent().unwrap().join("elsewhere.md");
        std::fs::write(&outside, "# Elsewhere\n").unwrap();
        std::os::unix::fs::symlink(&outside, docs.join("doc.md")).unwrap();
    });
    let p = one_ref_problem(&p);
    assert!(p.message.contains("outside the repository"), "{p}");
}

/// A folder symlinked under `cases/` is not followed: the case it points at counts once, and
/// the link is named so nobody believes it runs twice (or loops).
#[test]
fn directory_symlinks_under_cases_are_not_followed_into_duplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cases");
    write(&root.join("top"), &case_text("cilium#44889", CHAINS));
    write(&root.join("cilium").join("fixture-a"), &case_text("cilium#44889", CHAINS));
    std::os::unix::fs::symlink("top", root.join("again")).unwrap();
    std::os::unix::fs::symlink(".", root.join("self")).unwrap();
    std::os::unix::fs::symlink("../top", root.join("cilium").join("again")).unwrap();
    std::os::unix::fs::symlink("cilium", root.join("group-again")).unwrap();
    let found: Vec<String> = discover(&root).unwrap().iter().map(|d| d.strip_prefix(&root).unwrap().display().to_string()).collect();
    assert_eq!(found, ["cilium/fixture-a", "top"]);
    let problems = lint(&root).unwrap_err();
    let mut named: Vec<String> = problems.iter().map(|p| p.file.strip_prefix(&root).unwrap().display().to_string()).collect();
    named.sort();
    assert_eq!(named, ["again", "cilium/again", "group-again", "self"], "{problems:#?}");
    assert!(problems.iter().all(|p| p.message.contains("symbolic link to a folder")), "{problems:#?}");
}
