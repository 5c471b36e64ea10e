//! The operator lane's unit tests that need files of their own: recorded evidence replayed
//! (`recorded.rs`) and the substitution proof (`substitution_proof.rs`).

mod recorded;
mod substitution_proof;
