//! Ending the process on a signal, for commands without a graceful stop of their own (and the
//! e2e runner): here in `cli/`, the only place that ends the process or picks its status.

/// For a process without a graceful stop of its own: from now on, the first [`crate::run::Signal`] runs
/// the registered cleanups ([`crate::child::run_cleanups`]: cleanups registered with
/// [`crate::child::on_signal`], then every temporary folder of the process), says so on stderr
/// (`<who>: SIGHUP: stopping`), and exits with its status (129 for SIGHUP). Children die with
/// the process (see [`crate::child`]). Listens on a thread of its own, so it works whatever the
/// rest of the process is doing; nothing happens if that thread cannot start.
pub fn exit_on_signal(who: &'static str) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
    // Listening starts here, before this returns: a signal that comes while the thread starts
    // is kept for it.
    let mut signals = {
        let _in = rt.enter();
        crate::run::Signals::new()
    };
    let _ = std::thread::Builder::new().name("signals".into()).spawn(move || {
        let signal = rt.block_on(signals.next());
        crate::output::note(&format!("{who}: {signal}: stopping"));
        crate::child::run_cleanups();
        std::process::exit(i32::from(signal.exit_status()));
    });
}
