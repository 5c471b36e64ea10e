//! The agent's CEC table across a case's steps (rules::REFUSED_CEC_KEEPS_GENERATION): a
//! generation refused when parsed leaves the one before it served, deleting the CEC then too.

use super::*;
use crate::lanes::model::history::AgentTable;

/// Each step of the catalogue case at `v`, predicted alone and through the table: the number of
/// Envoy listeners each serves.
fn served(v: &str, with_history: bool) -> Vec<usize> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let case = case::load(&root.join("refused-update-keeps-generation")).unwrap_or_else(|p| panic!("{p:#?}"));
    let v = CiliumVersion::parse(v).unwrap();
    let mut table = AgentTable::default();
    (0..case.step_count())
        .map(|i| {
            let gws = input::read(&case.at_step(i)).unwrap().gateways;
            let mut ps: Vec<_> = gws.into_iter().map(|g| (g.clone(), predict(&g, &v))).collect();
            if with_history {
                let kept = table.step(&mut ps, &v);
                assert!(kept.is_empty(), "no Gateway is deleted here");
            }
            ps.iter().map(|(_, p)| p.envoy.len()).sum()
        })
        .collect()
}

#[test]
fn a_refused_update_keeps_the_generation_before_it() {
    // 1.20: step 2's CEC has two chains with one match and is refused when parsed; alone it
    // serves nothing, through the table the first step's two listeners.
    assert_eq!(served("1.20.2", false), [2, 0, 2]);
    assert_eq!(served("1.20.2", true), [2, 2, 2]);
    // 1.19.6: the agent parses it and Envoy refuses the listener; the NACK revert puts back
    // the first step's generation (rules::NACK_REVERT_RESTORES_GENERATION).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let case = case::load(&root.join("refused-update-keeps-generation")).unwrap_or_else(|p| panic!("{p:#?}"));
    let v = CiliumVersion::parse("1.19.6").unwrap();
    let mut table = AgentTable::default();
    let mut notes = Vec::new();
    for i in 0..case.step_count() {
        let gws = input::read(&case.at_step(i)).unwrap().gateways;
        let mut ps: Vec<_> = gws.into_iter().map(|g| (g.clone(), predict(&g, &v))).collect();
        table.step(&mut ps, &v);
        let chains: usize = ps.iter().flat_map(|(_, p)| &p.envoy).map(|l| l.chains.len()).sum();
        notes.push((chains, ps[0].1.notes.iter().any(|(id, _)| id == crate::lanes::model::rules::NACK_REVERT_RESTORES_GENERATION.id)));
    }
    // Step 2 serves step 1's chains (one passthrough, one HTTPS, one plain), and says why.
    assert_eq!(notes[1], (notes[0].0, true), "{notes:?}");
    assert!(!notes[0].1 && !notes[2].1, "{notes:?}");
}

#[test]
fn a_deleted_gateway_whose_last_update_was_refused_stays_served() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let case = case::load(&root.join("refused-update-keeps-generation")).unwrap_or_else(|p| panic!("{p:#?}"));
    let v = CiliumVersion::parse("1.20.2").unwrap();
    let mut table = AgentTable::default();
    for i in 0..2 {
        let gws = input::read(&case.at_step(i)).unwrap().gateways;
        let mut ps: Vec<_> = gws.into_iter().map(|g| (g.clone(), predict(&g, &v))).collect();
        table.step(&mut ps, &v);
    }
    // The Gateway deleted after its refused update: still served, and said.
    let kept = table.step(&mut [], &v);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].1.envoy.len(), 2);
    assert!(kept[0].1.notes.iter().any(|(id, _)| id == crate::lanes::model::rules::REFUSED_CEC_KEEPS_GENERATION.id));
    // Deleted once more with nothing refused since: gone.
    let mut table = AgentTable::default();
    let gws = input::read(&case.at_step(0)).unwrap().gateways;
    let mut ps: Vec<_> = gws.into_iter().map(|g| (g.clone(), predict(&g, &v))).collect();
    table.step(&mut ps, &v);
    assert!(table.step(&mut [], &v).is_empty());
}
