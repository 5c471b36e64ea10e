//! `check`'s inputs (issue #18 item 5): the one bounded reader for every input, a folder walk
//! that neither loops nor reads a file twice, duplicate objects refused at both places, every
//! typed `*List`, refusals located at the input's own file and line.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use super::super::read::{self, InputError, Inputs};

const GW: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\nspec:\n  gatewayClassName: cilium\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

use crate::output::dest::testing::fifo as mkfifo;

/// `read::read` on another thread: a read that blocks forever (a FIFO without a writer) is a
/// failure of the test, not a hung test run. Not a timing assertion: the read needs no time
/// beyond opening a handful of files; the bound only turns a hang into a failure.
fn read_or_hang(paths: Vec<PathBuf>) -> Result<Inputs, InputError> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(read::read(&paths));
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("reading the inputs blocked (a FIFO opened for reading waits for a writer)")
}

#[test]
fn a_fifo_given_by_name_or_met_in_a_folder_is_refused_at_once() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("pipe.yaml");
    mkfifo(&fifo);
    let e = read_or_hang(vec![fifo.clone()]).unwrap_err();
    assert_eq!(e.file, fifo.display().to_string());
    assert!(e.message.contains("FIFO, not a regular file") && e.message.contains("standard input"), "{e}");
    write(d.path(), "gw.yaml", GW);
    let e = read_or_hang(vec![d.path().to_path_buf()]).unwrap_err();
    assert!(e.file.ends_with("pipe.yaml") && e.message.contains("FIFO"), "{e}");
}

#[test]
fn a_device_given_by_name_is_refused_without_reading_it() {
    let e = read_or_hang(vec![PathBuf::from("/dev/zero")]).unwrap_err();
    assert!(e.message.contains("character device, not a regular file"), "{e}");
}

#[test]
fn symlinks_to_folders_are_not_followed_into_loops_or_twice() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "gw.yaml", GW);
    std::os::unix::fs::symlink(".", d.path().join("self")).unwrap();
    std::os::unix::fs::symlink(".", d.path().join("x")).unwrap();
    std::os::unix::fs::symlink(".", d.path().join("y")).unwrap();
    let got = read_or_hang(vec![d.path().to_path_buf()]).unwrap();
    assert_eq!(
        got.objects.len(),
        1,
        "one Gateway, read once: {:?}",
        got.objects.iter().map(|o| o.file.display().to_string()).collect::<Vec<_>>()
    );
    assert_eq!(got.sources, 1);
    assert_eq!(got.links_not_followed.len(), 3, "{:?}", got.links_not_followed);
    assert!(got.walk_notes().iter().all(|n| n.contains("not followed")), "{:?}", got.walk_notes());
}

#[test]
fn a_file_reached_by_two_names_is_read_once() {
    let d = tempfile::tempdir().unwrap();
    let gw = write(d.path(), "gw.yaml", GW);
    std::os::unix::fs::symlink("gw.yaml", d.path().join("again.yaml")).unwrap();
    let got = read_or_hang(vec![d.path().to_path_buf(), gw.clone(), gw]).unwrap();
    assert_eq!(got.objects.len(), 1);
    assert_eq!(got.read_once.len(), 3, "the link in the folder and the file given twice more: {:?}", got.read_once);
}

#[test]
fn two_objects_with_one_identity_are_an_error_naming_both_places() {
    let d = tempfile::tempdir().unwrap();
    let old = write(d.path(), "old.yaml", GW);
    let new = write(d.path(), "new.yaml", &format!("# the new layout\n{GW}"));
    let e = read_or_hang(vec![old.clone(), new.clone()]).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), (new.display().to_string().as_str(), 2), "{e}");
    assert!(e.message.contains("Gateway ns/gw is defined twice") && e.message.contains(&format!("{}:1", old.display())), "{e}");
    // Within one file too, and a namespace-less object is in `default`, as kubectl places it.
    let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n";
    let p = write(d.path(), "svc.yaml", &format!("{svc}---\napiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: default}}\n"));
    let e = read_or_hang(vec![p]).unwrap_err();
    assert!(e.message.contains("Service default/web is defined twice"), "{e}");
    // The same name in two namespaces, or two kinds, is two objects.
    let p = write(d.path(), "ok.yaml", &format!("{GW}---\n{}---\n{}", GW.replace("namespace: ns", "namespace: other"), svc));
    assert_eq!(read_or_hang(vec![p]).unwrap().objects.len(), 3);
}

#[test]
fn every_typed_list_is_read_as_its_items() {
    let d = tempfile::tempdir().unwrap();
    let items: String = GW.lines().map(|l| format!("  {l}\n")).collect::<String>().replacen("  apiVersion", "- apiVersion", 1);
    let p = write(
        d.path(),
        "list.yaml",
        &format!("apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayList\nmetadata: {{resourceVersion: \"1\"}}\nitems:\n{items}"),
    );
    let got = read_or_hang(vec![p]).unwrap();
    assert_eq!(got.objects.iter().map(|o| (o.kind.as_str(), o.name.as_str())).collect::<Vec<_>>(), [("Gateway", "gw")]);
    let p = write(d.path(), "routes.json", r#"{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRouteList","items":[]}"#);
    assert!(read_or_hang(vec![p]).unwrap().objects.is_empty());
}

#[test]
fn a_refused_hostname_is_located_in_the_input_never_in_a_temporary_file() {
    let d = tempfile::tempdir().unwrap();
    for bad in ["a.example.org.", "a\\u0001b.example.org"] {
        let text = GW.replace("protocol: HTTP}", &format!("protocol: HTTP, hostname: \"{bad}\"}}"));
        let p = write(d.path(), "gw.yaml", &text);
        let inputs = read::read(std::slice::from_ref(&p)).unwrap();
        let e = super::super::derive::derive(&inputs.objects).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), (p.display().to_string().as_str(), 1), "{bad}: {e}");
        assert!(e.message.contains("does not match the Gateway API's pattern"), "{e}");
    }
}

/// A Gateway name the API server refuses (a control character: an OSC title; upper case) is
/// the input's error at its file, line and field, its name escaped; a name Kubernetes allows
/// and the case format cannot carry is said as check's own limit, there too. Both read "the
/// case derived from the input does not load (a layout-gate bug ...): derived case.yaml:3".
#[test]
fn a_gateway_name_check_cannot_use_is_located_in_the_input() {
    let d = tempfile::tempdir().unwrap();
    for (name, says) in [
        ("gw\\u001b]0;pwned\\u0007", "is not a valid Kubernetes object name"),
        ("GW", "is not a valid Kubernetes object name"),
        ("gw.v2", "cannot predict one named otherwise yet"),
    ] {
        let text = format!("\n{}", GW.replace("{name: gw,", &format!("{{name: \"{name}\",")));
        let p = write(d.path(), "gw.yaml", &text);
        let inputs = read::read(std::slice::from_ref(&p)).unwrap();
        let e = super::super::derive::derive(&inputs.objects).unwrap_err();
        assert_eq!((e.file.as_str(), e.line, e.field.as_str()), (p.display().to_string().as_str(), 2, "metadata.name"), "{name}: {e}");
        assert!(e.message.contains(says) && !e.to_string().contains('\u{1b}'), "{name}: {e}");
    }
}

#[test]
fn a_problem_of_the_derived_manifests_is_located_at_its_origin() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "in.yaml", &format!("# a comment\n{GW}"));
    let inputs = read::read(std::slice::from_ref(&p)).unwrap();
    let [derived] = super::super::derive::derive(&inputs.objects).unwrap().try_into().unwrap();
    let dir = d.path().join("case");
    // The derived text names its origin above each document; a problem at any line of that
    // document is the input's, at the origin.
    let line_in_file =
        derived.manifests.lines().position(|l| l.contains("listeners")).unwrap() as u64 + 1 + super::super::casefile::MANIFEST_HEADER_LINES;
    let problem = crate::case::Problem {
        file: dir.join(super::super::casefile::MANIFESTS),
        line: line_in_file,
        column: 3,
        field: "Gateway gw: spec".into(),
        message: "refused".into(),
    };
    let e = super::super::predict::relocated(&derived, &dir, &[problem]).to_string();
    assert_eq!(e, format!("{}:2: Gateway gw: spec: refused", p.display()));
    assert!(!e.contains(&dir.display().to_string()), "{e}");
}

#[test]
fn more_documents_than_the_parser_default_budget_are_read() {
    // serde-saphyr's default budget stops at 1,024 documents; a platform's thousand Gateways
    // with their routes are twice that.
    let d = tempfile::tempdir().unwrap();
    let text: Vec<String> = (0..1100).map(|i| GW.replace("name: gw", &format!("name: gw{i}"))).collect();
    let p = write(d.path(), "many.yaml", &text.join("---\n"));
    assert_eq!(read_or_hang(vec![p]).unwrap().objects.len(), 1100);
}
