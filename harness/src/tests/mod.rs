//! The crate's own unit tests that belong to no one module: no tracked file cites what a reader
//! cannot open (`citation_guard.rs`), the docs stay true (`docs.rs`), bounded fuzzing (`fuzz.rs`).

mod citation_guard;
mod docs;
mod fuzz;
