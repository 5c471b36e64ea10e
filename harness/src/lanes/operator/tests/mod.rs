//! The operator lane's unit tests that need files of their own: recorded evidence replayed
//! (`recorded.rs`), the substitution proof (`substitution_proof.rs`) and the proof that the
//! agent's gobgp server stays off (`bgp_server_off.rs`).

mod bgp_server_off;
mod recorded;
mod substitution_proof;
