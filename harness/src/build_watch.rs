//! Which git files `build.rs` asks Cargo to watch, so the embedded commit follows HEAD and
//! nothing else: included by `build.rs` (`#[path]`), tested here.
//!
//! Cargo reruns a build script when a watched file changes, and also when a watched file does
//! not exist: it can never be fresh. So only files that exist are named. HEAD moves by a
//! checkout (the worktree's own `HEAD`) or by a commit to the branch HEAD names: its loose ref
//! file when there is one; when the ref lives only in `packed-refs`, that file, and the folder
//! the loose ref will be written into by the next commit. In a linked worktree `.git` is a file:
//! its `HEAD` is in its own git folder, the refs in the common one.

use std::path::{Path, PathBuf};

/// The files to watch: `git_dir` is the worktree's git folder (`git rev-parse --git-dir`),
/// `common_dir` the repository's (`--git-common-dir`), `head` what `git_dir/HEAD` holds, and
/// `exists` says whether a path is there (a parameter, for the tests).
pub fn watched(git_dir: &Path, common_dir: &Path, head: &str, exists: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = vec![git_dir.join("HEAD")];
    // A detached HEAD holds the commit itself: HEAD alone moves it.
    let Some(name) = head.trim().strip_prefix("ref: ").map(str::trim) else { return out };
    let loose = common_dir.join(name);
    if exists(&loose) {
        out.push(loose);
        return out;
    }
    let packed = common_dir.join("packed-refs");
    if exists(&packed) {
        out.push(packed);
    }
    // A commit writes the loose ref: its nearest folder that exists sees the new entry (never
    // the git folder itself, whose objects change with every command).
    if let Some(folder) = loose.ancestors().skip(1).take_while(|p| *p != common_dir && p.starts_with(common_dir)).find(|p| exists(p)) {
        out.push(folder.to_path_buf());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(files: &[&str]) -> impl Fn(&Path) -> bool {
        let files: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
        move |p: &Path| files.iter().any(|f| f == p || f.starts_with(p))
    }

    fn shown(v: Vec<PathBuf>) -> Vec<String> {
        v.into_iter().map(|p| p.display().to_string()).collect()
    }

    /// Issue 36: a clone without `packed-refs` (and a branch whose ref is only packed) named a
    /// file that does not exist, so the build script was never fresh and every cargo command
    /// rebuilt the crate. Only files that exist are named, and they are the ones HEAD moves by.
    #[test]
    fn only_files_that_exist_and_move_head_are_watched() {
        let g = Path::new("/r/.git");
        let head = "ref: refs/heads/main\n";
        // A fresh clone without packed-refs: HEAD and the loose ref.
        let loose = with(&["/r/.git/HEAD", "/r/.git/refs/heads/main"]);
        assert_eq!(shown(watched(g, g, head, &loose)), ["/r/.git/HEAD", "/r/.git/refs/heads/main"]);
        // packed-refs there too: the loose ref wins, packed-refs moves nothing.
        let both = with(&["/r/.git/HEAD", "/r/.git/refs/heads/main", "/r/.git/packed-refs"]);
        assert_eq!(shown(watched(g, g, head, &both)), ["/r/.git/HEAD", "/r/.git/refs/heads/main"]);
        // The ref only packed: packed-refs, and the folder the next commit writes it into.
        let packed = with(&["/r/.git/HEAD", "/r/.git/refs/heads/other", "/r/.git/packed-refs"]);
        assert_eq!(shown(watched(g, g, head, &packed)), ["/r/.git/HEAD", "/r/.git/packed-refs", "/r/.git/refs/heads"]);
        // A new repository, no commit yet: no ref, no packed-refs.
        let unborn = with(&["/r/.git/HEAD", "/r/.git/refs/heads"]);
        assert_eq!(shown(watched(g, g, head, &unborn)), ["/r/.git/HEAD", "/r/.git/refs/heads"]);
        // Detached: HEAD alone.
        assert_eq!(shown(watched(g, g, "0123abcd\n", &loose)), ["/r/.git/HEAD"]);
    }

    /// A linked worktree (`.git` is a file naming its git folder): its own HEAD, the shared refs.
    #[test]
    fn a_worktree_watches_its_own_head_and_the_shared_ref() {
        let wt = Path::new("/r/.git/worktrees/b");
        let common = Path::new("/r/.git");
        let files = with(&["/r/.git/worktrees/b/HEAD", "/r/.git/refs/heads/topic/x"]);
        assert_eq!(
            shown(watched(wt, common, "ref: refs/heads/topic/x", &files)),
            ["/r/.git/worktrees/b/HEAD", "/r/.git/refs/heads/topic/x"]
        );
        // Nothing outside the common folder is ever named, however deep the ref.
        let bare = with(&["/r/.git/worktrees/b/HEAD"]);
        assert_eq!(shown(watched(wt, common, "ref: refs/heads/topic/x", &bare)), ["/r/.git/worktrees/b/HEAD"]);
    }
}
