//! In-process backends: TLS and plain HTTP servers on loopback that name themselves.
//!
//! They stand in for a case's backend pods in the model lane. Every answer says which backend
//! served it (header [`crate::observe::probe::BACKEND_HEADER`] and a one-line body), and a TLS
//! backend also says which SNI it saw, so a probe through Envoy can tell a passthrough (the
//! backend saw the client's SNI) from a re-originated connection.

mod http1;
mod server;

pub use server::{HttpBackend, TlsBackend};
