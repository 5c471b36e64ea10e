//! Model-lane trials: one per case and pinned Cilium version. (Being built.)

use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    Vec::new()
}
