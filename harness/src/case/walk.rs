//! The folder walk: which folders hold cases, and what a case is called.

use std::path::{Path, PathBuf};

pub const CASE_FILE: &str = "case.yaml";

/// A case's name: its folder, prefixed by the folders between it and the `cases` folder above
/// it (`cilium/gateway-multi-port-https` for `cases/cilium/gateway-multi-port-https/`), so a
/// name is the same whichever folder lint was pointed at.
pub(super) fn case_name(dir: &Path) -> String {
    let leaf = || dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let Ok(abs) = dir.canonicalize() else { return leaf() };
    let Some(cases) = abs.ancestors().skip(1).find(|a| a.file_name().is_some_and(|n| n == "cases")) else { return leaf() };
    match abs.strip_prefix(cases) {
        Ok(rel) if rel.components().count() > 1 => rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"),
        _ => leaf(),
    }
}

/// Every case folder below `root` (folders holding a case.yaml), sorted by name. A folder
/// without a case.yaml (like `cases/cilium/`) is a group: its case folders are cases too.
pub fn discover(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    discover_with_links(root).map(|(dirs, _)| dirs)
}

/// [`discover`], and the symbolic links to folders it did not follow where it looks for cases:
/// a link would make one case count twice (`again -> dns01-default`) or loop (`self -> .`).
/// `root` itself may be a link.
pub fn discover_with_links(root: &Path) -> std::io::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    if root.join(CASE_FILE).is_file() {
        return Ok((vec![root.to_path_buf()], Vec::new()));
    }
    let (mut dirs, mut links) = (Vec::new(), Vec::new());
    // `file_type` of a directory entry does not follow links.
    fn entries(dir: &Path, links: &mut Vec<PathBuf>) -> std::io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let p = entry.path();
            if entry.file_type()?.is_symlink() {
                if p.is_dir() {
                    links.push(p);
                }
            } else {
                out.push(p);
            }
        }
        Ok(out)
    }
    for p in entries(root, &mut links)? {
        if p.join(CASE_FILE).is_file() {
            dirs.push(p);
        } else if p.is_dir() {
            for q in entries(&p, &mut links)? {
                if q.join(CASE_FILE).is_file() {
                    dirs.push(q);
                }
            }
        }
    }
    dirs.sort();
    links.sort();
    Ok((dirs, links))
}
