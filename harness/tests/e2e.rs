//! The `e2e` test target: one central list of trials, run by libtest-mimic.
//!
//! Like the Gateway API conformance suite, every trial is one value in [`TRIALS`], with a
//! `::`-separated name so `cargo test --test e2e -- envoy::` or `-- envoy::sni::` selects a
//! group. Trials that need a real Envoy FAIL (never skip) when it is missing, with the install
//! command in the message: a green run always means the data path was exercised.

use libtest_mimic::{Arguments, Failed, Trial};

#[path = "e2e/check_trials.rs"]
mod check_trials;
#[path = "e2e/envoy_rig.rs"]
mod envoy_rig;
#[path = "e2e/envoy_trials.rs"]
mod envoy_trials;
#[path = "e2e/kind_trials.rs"]
mod kind_trials;
#[path = "e2e/model_trials.rs"]
mod model_trials;
#[path = "e2e/pipeline_trials.rs"]
mod pipeline_trials;

/// One trial: a name and a function that passes or says why not.
struct TrialDef {
    name: &'static str,
    run: fn() -> Result<(), String>,
}

const TRIALS: &[TrialDef] = &[
    // SNI routing through a real Envoy with Cilium-shaped chains.
    TrialDef { name: "envoy::sni::exact_beats_wildcard", run: envoy_trials::sni_exact_beats_wildcard },
    TrialDef { name: "envoy::sni::wildcard_terminated_by_envoy", run: envoy_trials::sni_wildcard_terminated_by_envoy },
    TrialDef { name: "envoy::sni::no_matching_chain_resets", run: envoy_trials::sni_no_matching_chain_resets },
    TrialDef { name: "envoy::sni::default_chain_answers_unknown_sni", run: envoy_trials::sni_default_chain_answers_unknown_sni },
    // What the live config dump says, read through the summarizer.
    TrialDef { name: "envoy::dump::static_chains_summarized", run: envoy_trials::dump_static_chains_summarized },
    // How Envoy refuses duplicate matchers.
    TrialDef { name: "envoy::reject::static_duplicate_refuses_to_start", run: envoy_trials::reject_static_duplicate_refuses_to_start },
    TrialDef {
        name: "envoy::reject::lds_duplicate_error_state_keeps_serving",
        run: envoy_trials::reject_lds_duplicate_error_state_keeps_serving,
    },
    // The whole pipeline (case, certificates, Envoy, probes, dump, judge, evidence) on a
    // hand-written Cilium-shaped config: the fixture lane.
    TrialDef { name: "pipeline::fixture::worked_example_passes", run: pipeline_trials::fixture_case_passes },
    TrialDef { name: "pipeline::fixture::missing_chain_is_reported", run: pipeline_trials::fixture_case_missing_chain_fails },
];

fn main() {
    let args = Arguments::from_args();
    let mut trials: Vec<Trial> = TRIALS
        .iter()
        .map(|t| {
            let run = t.run;
            Trial::test(t.name, move || run().map_err(Failed::from))
        })
        .collect();
    // One trial per case and Cilium version in each lane, named `model::<version>::<case>`
    // and `kind::<version>::<case>`.
    trials.extend(model_trials::trials());
    trials.extend(kind_trials::trials());
    // `check::<case>`: check on every case's manifests against the model lane's own answers.
    trials.extend(check_trials::trials());
    libtest_mimic::run(&args, trials).exit();
}
