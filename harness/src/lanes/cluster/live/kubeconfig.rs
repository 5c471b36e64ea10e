//! The one way layout-gate reads a kubeconfig (a cluster lane's, a warm plane's, `check
//! --live`'s): through the bounded reader ([`crate::input`]: a regular file, at most
//! [`crate::input::KUBECONFIG`]), parsed with the parser's own location on an error, and with
//! the files it names relative to its folder made absolute, as kubectl reads them.
//!
//! Why not `kube`'s `Kubeconfig::read_from`: it reads the whole file whatever it is, so a
//! kubeconfig path pointing at `/dev/zero` grew until the kernel killed the process, and a
//! FIFO blocked it forever.

use std::path::{Path, PathBuf};

use kube::config::Kubeconfig;

/// Why a kubeconfig could not be read: the file (with `:LINE:COLUMN` when the parser knows
/// where it stopped), the field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {field}: {message}")]
pub struct KubeconfigError {
    pub file: String,
    pub field: String,
    pub message: String,
}

/// Reads and parses the kubeconfig at `path`. Every document of a multi-document file is
/// merged, as `kube` and kubectl do.
pub fn read(path: &Path) -> Result<Kubeconfig, KubeconfigError> {
    let file = path.display().to_string();
    let text = crate::input::read_text(path, crate::input::KUBECONFIG).map_err(|e| KubeconfigError {
        file: file.clone(),
        field: "path".into(),
        message: e.reason(),
    })?;
    let mut kc = Kubeconfig::from_yaml(&text).map_err(|e| {
        // The parser knows where it stopped: said as `FILE:LINE:COLUMN`, as an editor jumps to it.
        let at = match &e {
            kube::config::KubeconfigError::Parse(p) => {
                p.location().filter(|l| l.line() > 0).map(|l| format!(":{}:{}", l.line(), l.column()))
            }
            _ => None,
        };
        KubeconfigError { file: format!("{file}{}", at.unwrap_or_default()), field: "yaml".into(), message: e.to_string() }
    })?;
    if let Some(dir) = path.parent() {
        absolute_files(&mut kc, dir);
    }
    Ok(kc)
}

/// The kubeconfig a lane given no file reads: every file `KUBECONFIG` names, merged (the
/// first to name a context wins), else `~/.kube/config`; each read by [`read`].
pub fn read_default() -> Result<Kubeconfig, KubeconfigError> {
    let paths: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect())
        .unwrap_or_default();
    if paths.is_empty() {
        let home = std::env::var_os("HOME").ok_or_else(|| KubeconfigError {
            file: "~/.kube/config".into(),
            field: "path".into(),
            message: "HOME is not set, and neither is KUBECONFIG".into(),
        })?;
        return read(&PathBuf::from(home).join(".kube/config"));
    }
    let mut merged = Kubeconfig::default();
    for p in &paths {
        merged = merged.merge(read(p)?).map_err(|e| KubeconfigError {
            file: p.display().to_string(),
            field: "(merging KUBECONFIG's files)".into(),
            message: e.to_string(),
        })?;
    }
    Ok(merged)
}

/// Files a kubeconfig names by a relative path are relative to its folder (client-go's
/// `ResolveLocalPaths`), not to where the command runs: the CA, the client certificate and
/// key, the token file, and an exec plugin's command when it holds a `/` (a bare command is
/// looked up on `PATH`).
fn absolute_files(kc: &mut Kubeconfig, dir: &Path) {
    let fix = |p: &mut Option<String>| {
        if let Some(f) = p.as_mut()
            && Path::new(f.as_str()).is_relative()
            && let Some(abs) = dir.join(f.as_str()).to_str()
        {
            *f = abs.to_string();
        }
    };
    for c in kc.clusters.iter_mut().filter_map(|n| n.cluster.as_mut()) {
        fix(&mut c.certificate_authority);
    }
    for a in kc.auth_infos.iter_mut().filter_map(|n| n.auth_info.as_mut()) {
        fix(&mut a.client_certificate);
        fix(&mut a.client_key);
        fix(&mut a.token_file);
        if let Some(exec) = a.exec.as_mut()
            && exec.command.as_deref().is_some_and(|c| c.contains('/'))
        {
            fix(&mut exec.command);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/dev/zero` and a FIFO are refused at once, by name: `kube`'s own reader grew without
    /// bound on the first and blocked forever on the second (this test then never ends).
    #[test]
    fn a_device_or_a_fifo_is_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let zero = d.path().join("zero.kubeconfig");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read(&zero).unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("path", "a character device, not a regular file"), "{e}");
        assert!(e.to_string().starts_with(&format!("{}: path: ", zero.display())), "{e}");
        let fifo = d.path().join("fifo.kubeconfig");
        crate::output::dest::testing::fifo(&fifo);
        let e = read(&fifo).unwrap_err();
        assert_eq!(e.message, "a FIFO, not a regular file", "{e}");
        let big = d.path().join("big.kubeconfig");
        std::fs::write(&big, vec![b'#'; (crate::input::KUBECONFIG.bytes + 1) as usize]).unwrap();
        assert!(read(&big).unwrap_err().message.contains("larger than the limit of 4194304 bytes (4 MiB)"));
    }

    #[test]
    fn relative_files_are_the_kubeconfigs_folders_and_a_parse_error_is_located() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("config");
        std::fs::write(
            &p,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', certificate-authority: ca.crt}\n\
             users:\n- name: u\n  user: {client-key: /abs/key, tokenFile: t, exec: {command: ./bin/auth, apiVersion: v1}}\n- name: v\n  user: {exec: {command: aws, apiVersion: v1}}\n",
        )
        .unwrap();
        let kc = read(&p).unwrap();
        let ca = kc.clusters[0].cluster.as_ref().unwrap().certificate_authority.clone();
        assert_eq!(ca, Some(d.path().join("ca.crt").display().to_string()));
        let u = kc.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(u.client_key.as_deref(), Some("/abs/key"));
        assert_eq!(u.token_file, Some(d.path().join("t").display().to_string()));
        assert_eq!(u.exec.as_ref().unwrap().command, Some(d.path().join("./bin/auth").display().to_string()));
        assert_eq!(kc.auth_infos[1].auth_info.as_ref().unwrap().exec.as_ref().unwrap().command.as_deref(), Some("aws"));
        std::fs::write(&p, "apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: [x\n").unwrap();
        let e = read(&p).unwrap_err();
        assert!(e.file.starts_with(&format!("{}:", p.display())) && e.field == "yaml", "{e}");
    }
}
