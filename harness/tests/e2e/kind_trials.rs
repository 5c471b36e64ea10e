//! Kind-lane trials: one per case for the selected Cilium version. (Being built.)

use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    Vec::new()
}
