//! Bounded fuzzing (proptest, a fixed number of cases per target so CI time stays fixed) of the
//! two parsers that take input from outside: the case loader and the dump summarizer. Inputs
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
    fn the_dump_summarizer_takes_raw_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512), yaml in any::<bool>()) {
        if let Err(e) = summarize_bytes(&bytes, "raw", yaml) {
            prop_assert!(e.to_string().starts_with("raw"), "{e}");
        }
    }
}
