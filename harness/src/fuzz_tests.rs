//! Bounded fuzzing (proptest, a fixed number of cases per target so CI time stays fixed) of what
//! takes input from outside: the case loader and the dump summarizer (real files with random
//! edits, so most reach deep into the parsers, and raw random bytes: no panic, and every error
//! names the file it is about; a dump's ports and repeated keys), the probe's human line and
//! every echo of an argument (no value forges a field or reaches the terminal raw), the names
//! of temporary folders another process may have left, and output destinations (nothing but
//! nothing or a file of ours is ever replaced).

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
        Just("\"port_value\": 70000".to_string()),
        Just("\"name\": \"x\", \"name\": \"y\", ".to_string()),
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

    /// Any port_value: a summary exactly when it is 1-65535, else an error at the field.
    #[test]
    fn dump_ports_are_1_to_65535(port in prop_oneof![0u64..70000, any::<u64>()]) {
        let doc = format!(
            r#"{{"configs": [{{"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump.DynamicListener", "name": "l",
            "active_state": {{"listener": {{"name": "l", "address": {{"socket_address": {{"address": "127.0.0.1", "port_value": {port}}}}}}}}}}}]}}"#
        );
        match summarize_bytes(doc.as_bytes(), "d", false) {
            Ok(s) => {
                let read = (1..=65535).contains(&port) && s.listeners[0].addresses == [format!("127.0.0.1:{port}")];
                prop_assert!(read, "port {} summarized as {:?}", port, s.listeners[0].addresses);
            }
            Err(e) => {
                prop_assert!(!(1..=65535).contains(&port));
                prop_assert!(e.to_string().contains("port_value: "), "{e}");
            }
        }
    }

    /// A key repeated in any object of a real dump, read or skipped by the summary: an error
    /// naming the key.
    #[test]
    fn a_repeated_key_anywhere_is_an_error(at in 0.0f64..1.0, key in "[a-z_]{1,12}") {
        let text = data("harness/tests/data/envoy-dumps/envoy-lds-v4-dynamic.json");
        let opens: Vec<usize> = text.match_indices('{').map(|(i, _)| i + 1).collect();
        let i = opens[((opens.len() as f64) * at) as usize % opens.len()];
        let doc = format!("{}\"{key}\": 1, \"{key}\": 2, {}", &text[..i], &text[i..]);
        let e = summarize_bytes(doc.as_bytes(), "d", false).expect_err("a repeated key").to_string();
        prop_assert!(e.starts_with("d: "), "{e}");
        prop_assert!(e.contains(&format!("duplicate key `{key}`")) || e.contains(&format!("duplicate field `{key}`")), "{e}");
    }

    /// Whatever a certificate subject, a backend's name or a reason phrase holds, the human
    /// line keeps one field per name, the subject reads back as quoted, and no control or bidi
    /// character reaches the terminal.
    #[test]
    fn the_probe_line_cannot_be_forged(subject in any::<String>(), served_by in any::<String>(), label in any::<String>()) {
        use crate::observe::probe::report::{answer, certificate, fields_of};
        use crate::observe::probe::{HttpExchange, Outcome, render_human};
        let mut o = certificate(&subject);
        if let Outcome::Certificate(h) = &mut o.outcome {
            h.http = Some(HttpExchange::Answered(answer("OK", Some(&served_by))));
        }
        let line = render_human(&o, &label);
        prop_assert!(!line.chars().any(|c| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')), "{line:?}");
        let fields = fields_of(&line);
        for name in ["sni=", "subject=", "sha256=", "alpn="] {
            prop_assert_eq!(fields.iter().filter(|f| f.starts_with(name)).count(), 1, "{} in {:?}", name, fields);
        }
        let quoted_subject = format!("subject={}", crate::term::quoted(&subject));
        prop_assert!(fields.contains(&quoted_subject), "{fields:?}");
    }

    /// An argument echoed in an error: one quoted token, nothing a terminal acts on.
    #[test]
    fn echoed_arguments_are_one_inert_token(arg in any::<String>()) {
        use crate::observe::probe::report::fields_of;
        for shown in [crate::term::quoted(&arg), crate::term::field(&arg).into_owned(), crate::term::cell(&arg).into_owned()] {
            prop_assert!(!shown.chars().any(|c| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')), "{shown:?}");
            prop_assert_eq!(fields_of(&format!("x={shown}  y=1")).len(), 2, "{}", shown);
        }
    }

    /// Names in a temporary folder come from anyone: parsing never panics, and a name the tool
    /// makes reads back as its owner.
    #[test]
    fn scratch_names_parse_or_are_ignored(name in any::<String>(), pid in 1u32.., start in any::<u64>(), label in "[a-z0-9-]{0,12}") {
        let _ = crate::scratch::Owner::of_name(&name);
        let owner = crate::scratch::Owner { pid, start };
        let made = format!("layout-gate-model-{}-{label}-Ab12Cd", owner.token());
        prop_assert_eq!(crate::scratch::Owner::of_name(&made), Some(("model", owner)));
    }

    /// Whatever is at an output path, a file is placed only over nothing or a file of ours,
    /// and anything else is left as it was.
    #[test]
    fn output_paths_replace_only_nothing_or_our_files(kind in 0u8..5) {
        use crate::output::dest::{Found, place_file, testing};
        let tmp = tempfile::tempdir().expect("tmp");
        let dest = tmp.path().join("out");
        match kind {
            0 => {}
            1 => std::fs::write(&dest, "old").expect("file"),
            2 => std::os::unix::fs::symlink(tmp.path().join("target"), &dest).expect("link"),
            3 => testing::fifo(&dest),
            _ => std::fs::create_dir(&dest).expect("dir"),
        }
        let before = Found::at(&dest).expect("look");
        let staged = tmp.path().join(".staged");
        std::fs::write(&staged, "new").expect("staged");
        let replaceable = matches!(before, Found::Nothing | Found::File { ours: true });
        match place_file(&staged, &dest) {
            Ok(()) => {
                prop_assert!(replaceable, "placed over {:?}", before);
                prop_assert_eq!(std::fs::read_to_string(&dest).expect("read"), "new");
            }
            Err(_) => {
                prop_assert!(!replaceable, "refused over {:?}", before);
                prop_assert_eq!(Found::at(&dest).expect("look"), before);
                prop_assert!(!tmp.path().join("target").exists());
            }
        }
    }
}
