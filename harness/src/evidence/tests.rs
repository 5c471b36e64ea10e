//! Run ids and writing: nothing finished is lost to a collision.

use std::collections::BTreeSet;

use super::*;

fn minimal(run_id: String) -> Evidence {
    Evidence {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo { name: "layout-gate".into(), version: "0".into(), git_commit: None },
        run_id,
        lane: Lane::Model,
        status: RunStatus::NotRun { reason: "test".into() },
        selected: Some(Vec::new()),
        not_run: Vec::new(),
        interrupted: false,
        cilium: Some(CiliumInfo { version: "1.19.6".into(), source: "test".into() }),
        started_at: now_rfc3339(),
        finished_at: now_rfc3339(),
        phases: Vec::new(),
        environment: BTreeMap::new(),
        certificates: Vec::new(),
        cases: Vec::new(),
        digest: None,
    }
}

#[test]
fn run_ids_made_in_the_same_millisecond_differ_and_name_the_shard() {
    let ids: BTreeSet<String> = (0..2000).map(|_| run_id(Lane::Model, Some("1.19.6"), None)).collect();
    assert_eq!(ids.len(), 2000, "run ids collided");
    let id = run_id(Lane::Kind, Some("1.20.1"), Some("2/3"));
    assert!(id.contains("-kind-1.20.1-shard-2of3-"), "{id}");
    assert!(!id.contains('/'), "{id}");
    // Milliseconds, so ids still sort by time.
    assert!(id.as_bytes()[15] == b'.' && id[16..19].bytes().all(|b| b.is_ascii_digit()), "{id}");
}

/// The random part alone tells 20,000 runs apart: with the six hex digits it had, about twelve
/// of them collided (20,000^2 / 2 / 2^24), whatever the clock did.
#[test]
fn run_id_random_parts_do_not_collide() {
    let parts: BTreeSet<String> = (0..20_000).map(|_| super::random_suffix()).collect();
    assert_eq!(parts.len(), 20_000, "random parts collided");
    assert!(parts.iter().all(|p| p.len() == 12 && p.bytes().all(|b| b.is_ascii_hexdigit())), "{:?}", parts.first());
}

#[test]
fn two_runs_started_at_once_into_one_folder_both_land() {
    let root = tempfile::tempdir().unwrap();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (root, barrier) = (root.path().to_path_buf(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let ev = minimal(run_id(Lane::Model, Some("1.19.6"), Some("1/2")));
                write_run(&root, &ev).map(|_| ev.run_id)
            })
        })
        .collect();
    let ids: Vec<String> = handles.into_iter().map(|h| h.join().unwrap().expect("every run lands")).collect();
    for id in &ids {
        assert!(root.path().join(id).join("evidence.json").is_file(), "{id}");
    }
    let on_disk = std::fs::read_dir(root.path()).unwrap().count();
    assert_eq!(on_disk, 4);
}

#[test]
fn written_evidence_is_sealed() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_run(root.path(), &minimal(run_id(Lane::Model, None, None))).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("evidence.json")).unwrap()).unwrap();
    assert_eq!(check_digest(&doc), DigestCheck::Matches);
    assert_eq!(doc["status"], "not_run");
    assert_eq!(doc["reason"], "test");
}

/// `--evidence-dir` through a symbolic link is refused (its target gets nothing), and a run
/// folder is never renamed over whatever holds its name, an empty folder included.
#[test]
fn evidence_goes_into_a_real_folder_and_over_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("evidence");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let e = write_run(&link, &minimal(run_id(Lane::Model, None, None))).unwrap_err().to_string();
    assert!(e.contains("is a symbolic link"), "{e}");
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
    let ev = minimal(run_id(Lane::Model, None, None));
    let fifo = real.join(&ev.run_id);
    crate::output::dest::testing::fifo(&fifo);
    assert!(write_run(&real, &ev).is_err());
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 1, "no staged folder left");
}
