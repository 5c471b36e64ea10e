//! The hand-written evidence fixtures (`make-handwritten.py`) carry expectations and
//! observations (kind runs: raw recordings); their conditions and Envoy facts are the replay's
//! of the recordings, their verdicts, outcomes and digests the judge's and the seal's, made here
//! (`LAYOUT_GATE_BLESS=1`) and checked on every run, so a fixture can never claim what its own
//! observations do not give.

use std::path::PathBuf;

use super::data_dir;
use crate::evidence::{Evidence, digest, rejudge};

fn fixture_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [data_dir().join("handwritten"), data_dir().join("bad")] {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let f = e.path().join("evidence.json");
            let name = e.file_name().to_string_lossy().into_owned();
            // These two are broken on purpose.
            if f.is_file() && name != "truncated" && name != "unknown-schema" {
                files.push(f);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn handwritten_fixtures_are_judged_and_sealed() {
    let files = fixture_files();
    assert!(files.len() >= 7, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut ev: Evidence = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        // A kind case's conditions and Envoy facts are what its recordings give (as the kind
        // lane writes them): the replay, not the script, decides them.
        let replayed: Vec<_> =
            ev.cases.iter().map(|c| c.recording.is_some().then(|| crate::lanes::cluster::replay::replay_case(&ev, c))).collect();
        for (c, r) in ev.cases.iter_mut().zip(replayed) {
            if let Some(r) = r {
                let probes = std::mem::take(&mut c.observed.probes);
                c.observed = crate::evidence::Observed { probes, ..r.observed };
            }
        }
        rejudge::correct(&mut ev);
        for c in &mut ev.cases {
            c.served_by = rejudge::served_by_map(&c.observed.probes);
        }
        let mut doc = serde_json::to_value(&ev).unwrap();
        digest::seal(&mut doc);
        crate::golden::assert(&f, &(serde_json::to_string_pretty(&doc).unwrap() + "\n"));
    }
}
