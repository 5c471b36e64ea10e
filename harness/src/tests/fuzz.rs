//! Bounded fuzzing (proptest, a fixed number of cases per target so CI time stays fixed) of what
//! takes input from outside: the case loader and lint (with the documents a case cites), the
//! dump summarizer (a dump's ports and repeated keys), `report`'s evidence reader, the run
//! selection, `check`'s inputs (one file, a folder with links, a `*List`, raw bytes, and the
//! derivation after them), the probe's human line and every echo of an argument (no value
//! forges a field or reaches the terminal raw), the names of temporary folders another process
//! may have left, and output destinations (nothing but nothing or a file of ours is ever
//! replaced). Inputs are real files with random edits (so most reach deep into the parsers) and
//! raw random bytes. The properties: no panic, every error names the file it is about, a
//! relabelled run is never shown under another lane, and a selection is empty exactly when no
//! chosen version has a case.

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
        // What issue 18's lint findings were made of.
        Just("kube-system".to_string()),
        Just("WWW.X".to_string()),
        Just("\"*\"".to_string()),
        Just("listeners: []".to_string()),
        Just("\ncluster_scoped: [ClusterRoleBinding]\n".to_string()),
        Just("\n    observed: {lane: kind, cilium: \"9.9.9\", date: \"2026-13-45\", run: r}\n".to_string()),
        Just("\n  - {cilium: \">=1.19.0\", provenance: inferred}\n".to_string()),
        Just("ref: docs/doc.md".to_string()),
        Just("\"port_value\": 70000".to_string()),
        Just("\"name\": \"x\", \"name\": \"y\", ".to_string()),
        "[ -~]{0,12}",
    ]
}

/// Writes `doc` as the run folder `name` under `root`, resealed when asked.
fn run_folder(root: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("evidence.json"), text).expect("write");
    dir
}

/// The catalogue's multi-port fixtures (1.20 only), loaded once for every generated selection.
fn multi_port_fixtures() -> &'static [crate::case::Case] {
    static CASES: std::sync::OnceLock<Vec<crate::case::Case>> = std::sync::OnceLock::new();
    CASES.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
        let selection = crate::run::Selection::new(&["cilium/gateway-multi-port-*".to_string()], &[]).expect("globs");
        crate::run::select(&root, &selection, None).expect("cases")
    })
}

fn real_model_run() -> String {
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/report/real");
    let mut dirs: Vec<_> = std::fs::read_dir(&real).expect("real").flatten().map(|e| e.path()).collect();
    dirs.sort();
    let dir =
        dirs.into_iter().find(|d| d.to_string_lossy().contains("model-lane") && d.to_string_lossy().ends_with("-1.19.6")).expect("run");
    std::fs::read_to_string(dir.join("evidence.json")).expect("evidence")
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
    fn the_case_loader_never_panics_and_names_the_file(case_edits in edits(), manifest_edits in edits(), doc in prop::collection::vec(any::<u8>(), 0..256)) {
        let mut case = data("cases/dns01-default/case.yaml");
        for (at, len, with) in &case_edits {
            case = edit(&case, *at, *len, with);
        }
        let mut gateway = data("cases/dns01-default/gateway.yaml");
        for (at, len, with) in &manifest_edits {
            gateway = edit(&gateway, *at, *len, with);
        }
        // In a repository of its own, citing a document of random bytes: lint reads it through
        // the bounded reader and locates any refusal in case.yaml.
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::write(tmp.path().join("Cargo.toml"), "[package]\n").expect("write");
        std::fs::create_dir_all(tmp.path().join("docs")).expect("docs");
        std::fs::write(tmp.path().join("docs/doc.md"), &doc).expect("write");
        let dir = tmp.path().join("cases").join("c");
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("case.yaml"), &case).expect("write");
        std::fs::write(dir.join("gateway.yaml"), &gateway).expect("write");
        std::fs::write(dir.join("routes.yaml"), data("cases/dns01-default/routes.yaml")).expect("write");
        if let Err(problems) = crate::case::lint(&dir) {
            prop_assert!(!problems.is_empty());
            for p in problems {
                prop_assert!(p.file.starts_with(&dir), "{p}");
                prop_assert!(!p.message.is_empty(), "{p}");
            }
        }
    }

    /// Random edits of a real run's evidence, resealed or not: the report never panics, and
    /// every problem names the run folder (or the pins).
    #[test]
    fn the_report_reads_edited_evidence_without_panicking_and_names_the_file(run_edits in edits(), reseal in any::<bool>()) {
        let mut text = real_model_run();
        for (at, len, with) in &run_edits {
            text = edit(&text, *at, *len, with);
        }
        if reseal && let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(&text) {
            crate::evidence::digest::seal(&mut doc);
            text = serde_json::to_string_pretty(&doc).expect("json");
        }
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = run_folder(tmp.path(), "run", &text);
        let shown = |p: &std::path::Path| p.display().to_string();
        let loaded = crate::report::load_all(std::slice::from_ref(&dir), &shown);
        for p in &loaded.problems {
            prop_assert!(p.place().starts_with(&shown(&dir)), "{p}");
        }
        let _ = crate::report::Report::build(loaded).markdown();
    }

    /// The selection is refused exactly when no chosen version has a case (by default), or
    /// some chosen version has none (asked by name).
    #[test]
    fn a_selection_is_empty_exactly_when_no_chosen_version_has_a_case(
        chosen in prop::sample::subsequence(vec!["1.19.5", "1.19.6", "1.19.7", "1.20.1"], 1..=4),
        explicit in any::<bool>(),
    ) {
        let cases = multi_port_fixtures();
        let v = |s: &str| crate::case::CiliumVersion::parse(s).expect("version");
        let chosen: Vec<_> = chosen.iter().map(|s| v(s)).collect();
        let pinned: Vec<_> = ["1.19.5", "1.19.6", "1.19.7", "1.20.1"].iter().map(|s| v(s)).collect();
        let has = |x: &crate::case::CiliumVersion| cases.iter().any(|c| c.expects_at(x));
        let want_error = if explicit { !chosen.iter().all(has) } else { !chosen.iter().any(has) };
        prop_assert_eq!(crate::run::nothing_to_run(cases, &chosen, explicit, &pinned).is_some(), want_error);
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

proptest! {
    // 64 cases: about every combination once (2 x 4 x 4 x 2), each a whole report.
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// A real model run relabelled (any lane, any version, its probes anywhere) and resealed:
    /// whatever the forger chose, it is never shown under another lane.
    #[test]
    fn a_relabelled_run_is_never_shown_under_another_lane(
        lane in prop_oneof![Just("kind"), Just("fixture")],
        version in prop_oneof![Just("1.19.5"), Just("1.19.6"), Just("1.20.1"), Just("9.9.9")],
        address in prop_oneof![Just("127.0.0.1:443"), Just("172.18.255.200:443"), Just("10.0.0.1:8443"), Just("[::1]:443")],
        run_id in prop_oneof![Just(false), Just(true)],
    ) {
        let mut doc: serde_json::Value = serde_json::from_str(&real_model_run()).expect("json");
        doc["lane"] = lane.into();
        doc["cilium"]["version"] = version.into();
        if run_id {
            doc["run_id"] = doc["run_id"].as_str().unwrap_or_default().replace("-model-", &format!("-{lane}-")).into();
        }
        for c in doc["cases"].as_array_mut().into_iter().flatten() {
            for p in c["observed"]["probes"].as_array_mut().into_iter().flatten() {
                p["address"] = address.into();
                for o in p["observations"].as_array_mut().into_iter().flatten() {
                    o["addr"] = address.into();
                }
            }
        }
        crate::evidence::digest::seal(&mut doc);
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = run_folder(tmp.path(), "forged", &serde_json::to_string_pretty(&doc).expect("json"));
        let r = crate::report::Report::build(crate::report::load_all(&[dir], &|p: &std::path::Path| p.display().to_string()));
        prop_assert!(r.matrix.columns.keys().all(|c| c.lane == crate::evidence::Lane::Model), "{:?}", r.matrix.columns.keys().collect::<Vec<_>>());
        prop_assert!(!r.problems.is_empty());
    }
}
