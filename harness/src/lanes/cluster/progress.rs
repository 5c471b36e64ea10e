//! The kind lane's phase lines and per-case results go through the display every lane shares
//! ([`crate::progress`]).

pub use crate::progress::Progress;
