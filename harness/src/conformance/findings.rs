//! Why a traffic test Cilium's published report counts as passed fails in the traffic run
//! (`--traffic`), per line: each a named finding (docs/conformance.md), an emulation gap or a
//! real difference shown from the run's own evidence (`suite.log`, `xds-bridge.jsonl`). A
//! failure not listed here is said as unexplained, never hidden.

use crate::case::CiliumVersion;

/// What the comparison says of a traffic failure nobody has explained yet.
pub const UNEXPLAINED: &str = "not explained yet: a finding to make (suite.log, xds-bridge.jsonl and agent.log of the run)";

/// One explained traffic failure: the line (`(1, 19)`), the test, why.
pub type Known = ((u64, u64), &'static str, &'static str);

/// The traffic failures explained so far.
pub const KNOWN: &[Known] = &[];

/// Why `test` fails through Cilium's agent at `version`'s line, when that is known.
pub fn traffic(version: &CiliumVersion, test: &str) -> Option<&'static str> {
    let (major, minor, _) = version.parts();
    KNOWN.iter().find(|((ma, mi), t, _)| *ma == major && *mi == minor && *t == test).map(|(_, _, why)| *why)
}
