//! A Secret Envoy asks for over SDS and never gets: what cilium-envoy sees for a chain whose
//! certificate Secret does not exist. cilium-agent gives every SDS secret config without a
//! source Cilium's own xDS server (`pkg/ciliumenvoyconfig/cec_resource_parser.go:
//! qualifySdsSecretConfig`, read at v1.19.5, v1.19.6, v1.19.7 and v1.20.1), which holds no such
//! Secret and never answers; its config source gives up after the initial fetch timeout
//! (`pkg/envoy/xds_server.go: CiliumXDSConfigSource`, 30 s) and Envoy then activates the
//! listener with every chain, the chains using the Secret resetting TLS handshakes
//! (`downstream_context_secrets_not_ready`).
//!
//! Locally the source is a discovery file that holds no resource ([`EMPTY_SDS`]): the fetch
//! comes back empty at once instead of after 30 s, the same end state. A static secret of the
//! bootstrap cannot stand in: Envoy refuses the whole listener for it (`Unknown static secret`).
//!
//! The one source of this shape for the operator lane's agent step and the model's Envoy.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The discovery file's content: no resource at all.
pub const EMPTY_SDS: &[u8] = b"resources: []\n";

/// Its file name in a work folder.
pub const EMPTY_SDS_FILE: &str = "sds-never.yaml";

/// The `sds_config` of an SDS secret config that never gets its Secret: the empty discovery file
/// at `empty_sds` (written with [`write_empty_sds`]), given up on after one second.
pub fn never_answering_source(empty_sds: &Path) -> Value {
    json!({
        "initialFetchTimeout": "1s",
        "resourceApiVersion": "V3",
        "pathConfigSource": { "path": empty_sds.display().to_string() }
    })
}

/// Writes the empty discovery file into `dir` (0600, never over an existing file) and returns
/// its path.
pub fn write_empty_sds(dir: &Path) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(EMPTY_SDS_FILE);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
    f.write_all(EMPTY_SDS)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_names_the_empty_file_and_gives_up_quickly() {
        let dir = crate::scratch::Scratch::labelled(crate::scratch::MODEL, "sds-unit").expect("scratch");
        let path = write_empty_sds(dir.path()).expect("written");
        assert_eq!(std::fs::read(&path).expect("read"), EMPTY_SDS);
        let src = never_answering_source(&path);
        assert_eq!(src["pathConfigSource"]["path"], path.display().to_string());
        assert_eq!(src["initialFetchTimeout"], "1s");
        // Never over an existing file.
        assert!(write_empty_sds(dir.path()).is_err());
    }
}
