//! Golden files of the kind lane under `harness/tests/data/kind/`. `LAYOUT_GATE_BLESS=1 cargo
//! test --lib lanes::kind` rewrites them; otherwise a difference fails with both texts' first
//! differing line.

use std::path::{Path, PathBuf};

pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/kind")
}

pub fn check_golden(name: &str, actual: &str) {
    let path = dir().join(name);
    if std::env::var("LAYOUT_GATE_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(dir()).expect("creating the golden folder");
        std::fs::write(&path, actual).expect("writing a golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}; run with LAYOUT_GATE_BLESS=1 to create it", path.display()));
    if expected != actual {
        let (i, (e, a)) = expected
            .lines()
            .chain(std::iter::repeat("<end>"))
            .zip(actual.lines().chain(std::iter::repeat("<end>")))
            .enumerate()
            .find(|(_, (e, a))| e != a)
            .unwrap_or((0, ("", "")));
        panic!("{} differs at line {}:\n  golden: {e}\n  actual: {a}\n(LAYOUT_GATE_BLESS=1 rewrites it)\n--- actual ---\n{actual}", path.display(), i + 1);
    }
}
