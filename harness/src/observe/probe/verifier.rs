//! A server certificate verifier that records the presented chain and never judges it.
//!
//! A probe's question is "which certificate answered?", not "is it trusted?": a wrong or
//! self-signed certificate is an observation, not an error. The handshake stays real, though:
//! the server must still prove it holds the key of the certificate it presented, so the
//! signature checks go through the ring provider exactly as a validating client would.

use std::sync::Mutex;

use rustls::DigitallySignedStruct;
use rustls::SignatureScheme;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

/// Accepts any certificate; remembers what was presented (leaf first, in the server's order).
///
/// One verifier serves one connection: the record is per handshake, so probes never share it.
#[derive(Debug)]
pub(crate) struct RecordingVerifier {
    algorithms: WebPkiSupportedAlgorithms,
    presented: Mutex<Option<Vec<CertificateDer<'static>>>>,
}

impl RecordingVerifier {
    pub(crate) fn new(provider: &CryptoProvider) -> Self {
        RecordingVerifier { algorithms: provider.signature_verification_algorithms, presented: Mutex::new(None) }
    }

    /// The chain the server presented, if the handshake got that far.
    pub(crate) fn take(&self) -> Option<Vec<CertificateDer<'static>>> {
        // A poisoned lock only means another thread panicked while holding it; the data (a
        // whole Vec or nothing) is still consistent.
        self.presented.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl ServerCertVerifier for RecordingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let mut chain = Vec::with_capacity(1 + intermediates.len());
        chain.push(end_entity.clone().into_owned());
        chain.extend(intermediates.iter().map(|c| c.clone().into_owned()));
        *self.presented.lock().unwrap_or_else(|p| p.into_inner()) = Some(chain);
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
