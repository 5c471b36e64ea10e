//! Bounded fuzzing (proptest, a fixed number of cases per target so CI time stays fixed) of the
//! parsers that take input from outside: the case loader, the dump summarizer, and `check`'s
//! inputs (one file, a folder with links, a `*List`, raw bytes, and the derivation after them). Inputs
//! are real files with random edits (so most reach deep into the parsers) and raw random
//! bytes. The properties: no panic, and every error names the file it is about.

use proptest::prelude::*;

use crate::observe::envoy_dump::summarize_bytes;

const CASES: u32 = 192;

fn data(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect("fixture")
}

/// One edit: replace the byte range at `at` (scaled to the text) with `with`.
fn edit(text: &str, at: f64, len: usize, with: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let start = ((bytes.len() as f64) * at) as usize;
    let end = (start + len).min(bytes.len());
    bytes.splice(start..end, with.bytes());
    String::from_utf8_lossy(&bytes).into_owned()
}

fn snippet() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(":".to_string()),
        Just("\n- ".to_string()),
        Just("{".to_string()),
        Just("]".to_string()),
        Just("\"".to_string()),
        Just("{apex}".to_string()),
        Just("{secret:".to_string()),
        Just("*.".to_string()),
        Just(" &a *a ".to_string()),
        Just("\u{1b}[2J".to_string()),
        Just("99999999999999999999".to_string()),
        "[ -~]{0,12}",
    ]
}

fn edits() -> impl Strategy<Value = Vec<(f64, usize, String)>> {
    prop::collection::vec((0.0f64..1.0, 0usize..24, snippet()), 1..4)
}

/// The documents of a multi-document YAML text as one `kind: List` (`kubectl get -o yaml`).
fn list_of(text: &str) -> String {
    let mut out = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for doc in text.split("\n---\n") {
        let body: Vec<&str> = doc.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
        for (i, l) in body.iter().enumerate() {
            out.push_str(if i == 0 { "- " } else { "  " });
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_case_loader_never_panics_and_names_the_file(case_edits in edits(), manifest_edits in edits()) {
        let mut case = data("cases/dns01-default/case.yaml");
        for (at, len, with) in &case_edits {
            case = edit(&case, *at, *len, with);
        }
        let mut gateway = data("cases/dns01-default/gateway.yaml");
        for (at, len, with) in &manifest_edits {
            gateway = edit(&gateway, *at, *len, with);
        }
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("c");
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("case.yaml"), &case).expect("write");
        std::fs::write(dir.join("gateway.yaml"), &gateway).expect("write");
        std::fs::write(dir.join("routes.yaml"), data("cases/dns01-default/routes.yaml")).expect("write");
        if let Err(problems) = crate::case::load(&dir) {
            prop_assert!(!problems.is_empty());
            for p in problems {
                prop_assert!(p.file.starts_with(&dir), "{p}");
                prop_assert!(!p.message.is_empty(), "{p}");
            }
        }
    }

    #[test]
    fn the_dump_summarizer_never_panics_and_names_the_input(dump_edits in edits(), yaml in any::<bool>()) {
        let base = if yaml { data("harness/tests/data/envoy-dumps/cec-worked-example-list.yaml") } else { data("harness/tests/data/envoy-dumps/envoy-lds-v4-dynamic.json") };
        let mut text = base;
        for (at, len, with) in &dump_edits {
            text = edit(&text, *at, *len, with);
        }
        if let Err(e) = summarize_bytes(text.as_bytes(), "fuzz-dump", yaml) {
            prop_assert!(e.to_string().starts_with("fuzz-dump"), "{e}");
        }
    }

    #[test]
    fn check_reads_an_edited_file_and_names_it(edits in edits(), as_list in any::<bool>()) {
        let mut text = data("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml");
        if as_list {
            text = list_of(&text);
        }
        for (at, len, with) in &edits {
            text = edit(&text, *at, *len, with);
        }
        let tmp = tempfile::tempdir().expect("tmp");
        let p = tmp.path().join("in.yaml");
        std::fs::write(&p, &text).expect("write");
        let named = p.display().to_string();
        match crate::check::read::read(std::slice::from_ref(&p)) {
            Err(e) => prop_assert_eq!(&e.file, &named, "{}", e),
            Ok(inputs) => {
                // The derivation names the input too: never a folder of its own.
                if let Err(e) = crate::check::derive::derive(&inputs.objects) {
                    prop_assert!(e.file == named || e.file == "(input)", "{}", e);
                }
            }
        }
    }

    #[test]
    fn check_walks_a_folder_with_links_once(edits in edits(), links in prop::collection::vec((0usize..3, any::<bool>()), 0..4)) {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        let mut text = data("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml");
        for (at, len, with) in &edits {
            text = edit(&text, *at, *len, with);
        }
        std::fs::create_dir_all(root.join("a/b")).expect("dir");
        std::fs::write(root.join("a/b/in.yaml"), &text).expect("write");
        // Links to folders above them (loops) and to the file (a second name).
        for (i, (depth, to_file)) in links.iter().enumerate() {
            let at = [root.to_path_buf(), root.join("a"), root.join("a/b")][*depth].join(format!("l{i}.yaml"));
            let target = if *to_file { root.join("a/b/in.yaml") } else { root.to_path_buf() };
            std::os::unix::fs::symlink(target, at).expect("link");
        }
        match crate::check::read::read(&[root.to_path_buf()]) {
            Ok(inputs) => prop_assert_eq!(inputs.sources, 1, "one file, read once"),
            Err(e) => prop_assert!(e.file.starts_with(&root.display().to_string()), "{}", e),
        }
    }

    #[test]
    fn check_takes_raw_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let tmp = tempfile::tempdir().expect("tmp");
        let p = tmp.path().join("raw.json");
        std::fs::write(&p, &bytes).expect("write");
        if let Err(e) = crate::check::read::read(std::slice::from_ref(&p)) {
            prop_assert_eq!(&e.file, &p.display().to_string(), "{}", e);
        }
    }

    #[test]
    fn the_dump_summarizer_takes_raw_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512), yaml in any::<bool>()) {
        if let Err(e) = summarize_bytes(&bytes, "raw", yaml) {
            prop_assert!(e.to_string().starts_with("raw"), "{e}");
        }
    }
}
