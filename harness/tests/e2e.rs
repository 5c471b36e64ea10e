//! The `e2e` test target: one central list of trials, run by libtest-mimic.
//!
//! Like the Gateway API conformance suite, every trial is one value in [`TRIALS`], with a
//! `::`-separated name so `cargo test --test e2e -- envoy::` or `-- envoy::sni::` selects a
//! group. Trials that need a real Envoy FAIL (never skip) when it is missing, with the install
//! command in the message: a green run always means the data path was exercised.

use libtest_mimic::{Arguments, Failed, Trial};

#[path = "e2e/check_cli_trials.rs"]
mod check_cli_trials;
#[path = "e2e/check_operator_trials.rs"]
mod check_operator_trials;
#[path = "e2e/check_trials.rs"]
mod check_trials;
#[path = "e2e/cli_trials.rs"]
mod cli_trials;
#[path = "e2e/conformance_trials.rs"]
mod conformance_trials;
#[path = "e2e/differential_trials.rs"]
mod differential_trials;
#[path = "e2e/docs_trials.rs"]
mod docs_trials;
#[path = "e2e/envoy_rig.rs"]
mod envoy_rig;
#[path = "e2e/envoy_trials.rs"]
mod envoy_trials;
#[path = "e2e/kind_trials.rs"]
mod kind_trials;
#[path = "e2e/live_hostile_trials.rs"]
mod live_hostile_trials;
#[path = "e2e/live_trials.rs"]
mod live_trials;
#[path = "e2e/local_only.rs"]
mod local_only;
#[path = "e2e/model_trials.rs"]
mod model_trials;
#[path = "e2e/netns_trials.rs"]
mod netns_trials;
#[path = "e2e/operator_agent_trials.rs"]
mod operator_agent_trials;
#[path = "e2e/operator_batch_trials.rs"]
mod operator_batch_trials;
#[path = "e2e/operator_rig.rs"]
mod operator_rig;
#[path = "e2e/operator_trials.rs"]
mod operator_trials;
#[path = "e2e/operator_warm_trials.rs"]
mod operator_warm_trials;
#[path = "e2e/pipeline_trials.rs"]
mod pipeline_trials;
#[path = "e2e/process_trials.rs"]
mod process_trials;
#[path = "e2e/report_trials.rs"]
mod report_trials;
#[path = "e2e/status_writer_trials.rs"]
mod status_writer_trials;
#[path = "e2e/workflow_trials.rs"]
mod workflow_trials;

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
    // The report as people and CI tools see it.
    TrialDef { name: "report::catalogue::summary_fits_30kb", run: report_trials::catalogue_summary_fits },
    TrialDef { name: "report::html::chromium_shows_the_matrix", run: report_trials::html_matrix_in_chromium },
    // Whatever kills a run, no Envoy outlives it and no private key stays on disk.
    // Nothing a trial sends leaves the machine: the guard every probe passes, end to end.
    TrialDef { name: "local_only::an_address_off_the_machine_is_refused", run: local_only::an_address_off_the_machine_is_refused },
    // The run's own network: namespaces with addresses of their own, nothing leaves, nothing is left.
    TrialDef {
        name: "netns::a_namespace_reaches_only_the_run_network_and_goes",
        run: netns_trials::a_namespace_reaches_only_the_run_network_and_goes,
    },
    TrialDef { name: "netns::what_a_killed_run_left_is_swept", run: netns_trials::what_a_killed_run_left_is_swept },
    TrialDef { name: "process::sigkill_leaves_no_envoy_and_no_key", run: process_trials::sigkill_leaves_no_envoy_and_no_key },
    TrialDef { name: "process::check_stopped_leaves_no_folder", run: process_trials::check_stopped_leaves_no_folder },
    TrialDef { name: "process::local_envoy_sigkill_leaves_nothing", run: process_trials::local_envoy_sigkill_leaves_nothing },
    // Ports handed to Envoy are held until it binds them: no run fails on another's port.
    TrialDef { name: "process::wide_check_never_races", run: process_trials::wide_check_never_races },
    // The binary as a user runs it: pipes, signals, the docs' examples.
    TrialDef { name: "cli::run::closed_stdout_keeps_evidence", run: cli_trials::closed_stdout_keeps_evidence },
    TrialDef { name: "cli::run::full_stdout_keeps_evidence", run: cli_trials::full_stdout_keeps_evidence },
    TrialDef { name: "cli::run::sigint_keeps_finished_cases", run: cli_trials::sigint_keeps_finished_cases },
    TrialDef { name: "cli::run::sigterm_keeps_finished_cases", run: cli_trials::sigterm_keeps_finished_cases },
    TrialDef { name: "cli::run::sighup_keeps_finished_cases", run: cli_trials::sighup_keeps_finished_cases },
    TrialDef { name: "cli::run::sigquit_keeps_finished_cases", run: cli_trials::sigquit_keeps_finished_cases },
    TrialDef { name: "cli::run::fail_fast_starts_no_new_case", run: cli_trials::fail_fast_starts_no_new_case },
    TrialDef { name: "cli::run::cases_without_an_expectation_are_left_out_not_counted", run: cli_trials::left_out_not_counted },
    TrialDef { name: "cli::run::no_ansi_codes_in_pipes", run: cli_trials::no_ansi_codes_in_pipes },
    TrialDef { name: "cli::report::never_replaces_what_is_not_ours", run: cli_trials::report_never_replaces_what_is_not_ours },
    TrialDef { name: "cli::output::no_command_panics_on_stdout_errors", run: cli_trials::no_command_panics_on_stdout_errors },
    TrialDef { name: "cli::version_names_the_commit", run: cli_trials::version_names_the_commit },
    TrialDef { name: "cli::pins::outside_a_checkout_the_binary_uses_its_own", run: cli_trials::pins_outside_a_checkout },
    TrialDef { name: "cli::pins::an_unchecked_version_is_refused_or_assumed_aloud", run: cli_trials::unchecked_version_assumed_aloud },
    // `check` as a reviewer runs it: why, before and after, plain HTTP.
    TrialDef {
        name: "check_operator::1.19.6::conflict_and_answers_equal_the_models",
        run: check_operator_trials::conflict_and_answers_equal_the_models,
    },
    TrialDef {
        name: "check_operator::1.19.6::merged_routes_answer_as_the_models",
        run: check_operator_trials::merged_routes_answer_as_the_models,
    },
    TrialDef {
        name: "check_operator::1.19.6::isolated_hostnames_and_unaccepted_gateway_as_the_models",
        run: check_operator_trials::isolated_hostnames_and_unaccepted_gateway_as_the_models,
    },
    // `check --live` on a real API server: the operator lane's control plane as the cluster.
    TrialDef { name: "live::1.19.6::answers_equal_checks_on_the_same_objects", run: live_trials::live_equals_manifests },
    TrialDef { name: "live::1.19.6::the_cluster_and_the_prediction_disagree", run: live_trials::the_cluster_and_the_prediction_disagree },
    TrialDef {
        name: "live::1.19.6::lane_operator_answers_equal_check_lane_operator",
        run: live_trials::lane_operator_answers_equal_check_lane_operator,
    },
    TrialDef { name: "live::bad_input_is_located_and_bounded", run: live_trials::bad_input_is_located_and_bounded },
    // `check --live` against a fake API server that is broken or lies (no control plane).
    TrialDef { name: "live_hostile::no_key_is_printed", run: live_hostile_trials::no_key_is_printed },
    TrialDef { name: "live_hostile::an_endless_list_is_refused_named", run: live_hostile_trials::an_endless_list_is_refused_named },
    TrialDef {
        name: "live_hostile::what_the_cluster_says_cannot_drive_the_terminal",
        run: live_hostile_trials::what_the_cluster_says_cannot_drive_the_terminal,
    },
    TrialDef {
        name: "live_hostile::an_unpinned_running_version_is_refused",
        run: live_hostile_trials::an_unpinned_running_version_is_refused,
    },
    TrialDef { name: "differential::1.19.6::seed_1_count_3", run: differential_trials::seed_1_count_3 },
    TrialDef {
        name: "differential::versions_asked_together_come_up_side_by_side",
        run: differential_trials::versions_asked_together_come_up_side_by_side,
    },
    // Many layouts on one control plane answer as each does alone.
    TrialDef { name: "operator_batch::1.19.6::batched_answers_equal_alone", run: operator_batch_trials::batched_answers_equal_alone },
    TrialDef {
        name: "operator_batch::1.19.6::catalogue_batched_evidence_equals_alone",
        run: operator_batch_trials::catalogue_batched_evidence_equals_alone,
    },
    TrialDef {
        name: "operator_batch::versions_asked_together_come_up_side_by_side",
        run: operator_batch_trials::versions_asked_together_come_up_side_by_side,
    },
    // The upstream Gateway API conformance suite on Cilium's own operator (status tests).
    TrialDef { name: "conformance::1.19.6::status_tests_pass", run: conformance_trials::status_tests_pass },
    // Its traffic tests through Cilium's own agent, the suite's own pods as backends.
    TrialDef {
        name: "conformance::1.19.6::traffic_flows_through_ciliums_agent",
        run: conformance_trials::traffic_flows_through_ciliums_agent,
    },
    // Cilium's own agent as the operator lane's agent step.
    TrialDef { name: "operator_agent::1.19.6::answers_through_ciliums_agent", run: operator_agent_trials::answers_through_ciliums_agent },
    TrialDef {
        name: "operator_agent::1.19.6::a_listener_envoy_refuses_is_reverted_and_said",
        run: operator_agent_trials::a_listener_envoy_refuses_is_reverted_and_said,
    },
    // A second route-status writer beside Cilium's own operator (cozystack#4199).
    TrialDef {
        name: "status_writer::1.19.6::ciliums_merge_fights_an_entry_written_first",
        run: status_writer_trials::ciliums_merge_fights_an_entry_written_first,
    },
    // A warm control plane: up, used, stopped; killed outright, nothing left.
    TrialDef { name: "operator_warm::1.19.6::up_check_status_down", run: operator_warm_trials::up_check_status_down },
    TrialDef {
        name: "operator_warm::1.19.6::a_killed_holder_leaves_nothing_running_and_its_state_refused",
        run: operator_warm_trials::a_killed_holder_leaves_nothing_running_and_its_state_refused,
    },
    TrialDef { name: "operator_warm::1.19.6::an_unused_plane_stops_itself", run: operator_warm_trials::an_unused_plane_stops_itself },
    TrialDef {
        name: "operator_warm::1.19.6::only_a_holder_that_proves_itself_is_trusted_or_stopped",
        run: operator_warm_trials::only_a_holder_that_proves_itself_is_trusted_or_stopped,
    },
    TrialDef {
        name: "operator_warm::1.19.6::run_uses_the_warm_plane_and_leaves_it_up",
        run: operator_warm_trials::run_uses_the_warm_plane_and_leaves_it_up,
    },
    TrialDef {
        name: "differential::1.19.6::a_wrong_model_rule_is_a_disagreement",
        run: differential_trials::a_wrong_model_rule_is_a_disagreement,
    },
    TrialDef { name: "cli::check::why_in_table_and_markdown", run: check_cli_trials::why_in_table_and_markdown },
    TrialDef {
        name: "cli::check::compare_shows_what_the_new_layout_takes_away",
        run: check_cli_trials::compare_shows_what_the_new_layout_takes_away,
    },
    TrialDef { name: "cli::check::compare_and_sni_refusals", run: check_cli_trials::compare_and_sni_refusals },
    TrialDef { name: "cli::readme::synopses_are_the_help", run: cli_trials::readme_synopses_are_the_help },
    TrialDef { name: "cli::readme::commands_run", run: cli_trials::readme_commands_run },
    // The docs' count of this list is the list's.
    TrialDef { name: "docs::e2e_trial_count_adds_up", run: docs_trials::e2e_trial_count_adds_up },
    // The reusable workflow's steps, run here.
    TrialDef { name: "workflow::check_layout::calls_only_its_scripts", run: workflow_trials::calls_only_its_scripts },
    TrialDef { name: "workflow::check_layout::check_job_runs_here", run: workflow_trials::check_job_runs_here },
    TrialDef {
        name: "workflow::check_layout::kind_job_runs_here_on_the_model_lane",
        run: workflow_trials::kind_job_runs_here_on_the_model_lane,
    },
];

/// The trials that need the operator lane's control plane (etcd, kube-apiserver,
/// kube-controller-manager and cilium-operator built by scripts/install-control-plane.sh), by
/// name prefix. The docs' count is among them: without the control plane built, a pin's
/// operator trials are one `::control_plane` trial and the list is shorter than the docs say.
const NEEDS_CONTROL_PLANE: &[&str] = &[
    "operator::",
    "check_operator::",
    "conformance::",
    "differential::",
    "live::",
    "operator_agent::",
    "operator_batch::",
    "operator_warm::",
    "status_writer::",
    "docs::e2e_trial_count_adds_up",
];

/// Which trials this run keeps, from `LAYOUT_GATE_E2E_PART`: unset, all of them;
/// `without-control-plane`, the ones that run while the control plane still builds (as
/// scripts/e2e.sh and scripts/test.sh run them, so a cold clone's Go build and these trials
/// share the wait); `control-plane`, the rest.
#[derive(Clone, Copy)]
enum Part {
    All,
    WithoutControlPlane,
    ControlPlane,
}

impl Part {
    fn from_env() -> Result<Part, String> {
        match std::env::var("LAYOUT_GATE_E2E_PART").ok().as_deref().map(str::trim) {
            None | Some("") => Ok(Part::All),
            Some("without-control-plane") => Ok(Part::WithoutControlPlane),
            Some("control-plane") => Ok(Part::ControlPlane),
            Some(other) => Err(format!(
                "LAYOUT_GATE_E2E_PART={other:?}: expected `without-control-plane` or `control-plane` (or unset for every trial)"
            )),
        }
    }

    fn keeps(self, name: &str) -> bool {
        let needs = NEEDS_CONTROL_PLANE.iter().any(|p| name.starts_with(p));
        match self {
            Part::All => true,
            Part::WithoutControlPlane => !needs,
            Part::ControlPlane => needs,
        }
    }
}

/// SIGINT, SIGTERM, SIGHUP or SIGQUIT stops the trials as they stop the CLI: registered
/// cleanups run (the shared kind cluster is deleted), this process's temporary folders (keys,
/// Envoy work folders) are removed, and the exit status is 128 + the signal's number. Every
/// Envoy a trial started dies with the process (PR_SET_PDEATHSIG, see `layout_gate::child`).
fn handle_signals() {
    layout_gate::cli::signals::exit_on_signal("e2e");
}

fn main() {
    // First, before any thread: every probe of the run stays on this machine.
    local_only::confine();
    // The operator lane's trials check Cilium's operator with layout-gate's agent step (many
    // cases at once, seconds each); the trials of Cilium's own agent, the lane's default, ask
    // for it by name on their commands (operator_agent_trials.rs).
    // SAFETY: before the runner or any trial starts a thread, as `confine`.
    unsafe { std::env::set_var(layout_gate::lanes::operator::plane::STEP_ENV, "emulated") };
    let args = Arguments::from_args();
    let part = Part::from_env().unwrap_or_else(|e| {
        eprintln!("e2e: {e}");
        std::process::exit(2);
    });
    handle_signals();
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
    // `operator::<version>::<case>`: every case on Cilium's own operator from the tag.
    trials.extend(operator_trials::trials());
    // `check::<case>`: check on every case's manifests against the model lane's own answers.
    trials.extend(check_trials::trials());
    // What `--list` prints: docs/figures.md quotes it (docs::e2e_trial_count_adds_up).
    let _ = docs_trials::LISTED.set(docs_trials::Listed::of(trials.iter().map(Trial::name)));
    trials.retain(|t| part.keeps(t.name()));
    let before = report_trials::run_folders();
    let conclusion = libtest_mimic::run(&args, trials);
    if args.list {
        conclusion.exit();
    }
    // After every other trial: each junit.xml they wrote, read by a second JUnit reader. A
    // second pass, because it reads what the first one wrote; it runs whatever the filter.
    let after = vec![
        Trial::test("junit::second_reader::every_junit_the_trials_wrote", move || {
            report_trials::junit_second_reader(&before).map_err(Failed::from)
        }),
        Trial::test("local_only::no_probe_left_the_machine", || local_only::no_probe_left_the_machine().map_err(Failed::from)),
    ];
    let second = Arguments { filter: None, skip: Vec::new(), exact: false, ..args };
    let checked = libtest_mimic::run(&second, after);
    if conclusion.has_failed() || checked.has_failed() {
        std::process::exit(101);
    }
}
