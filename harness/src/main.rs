//! The `layout-gate` binary; everything lives in [`layout_gate::cli`].

fn main() -> std::process::ExitCode {
    layout_gate::cli::main()
}
