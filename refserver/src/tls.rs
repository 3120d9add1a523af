//! TLS with a self-signed certificate generated at start (ALPN h2 and http/1.1), so a
//! browser can run more than 6 concurrent streams over HTTP/2.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Errors setting up TLS.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate could not be generated.
    #[error("certificate generation failed: {0}")]
    Cert(#[from] rcgen::Error),
    /// rustls rejected the configuration.
    #[error("TLS configuration failed: {0}")]
    Config(#[from] rustls::Error),
}

/// A server config with a fresh self-signed certificate for localhost / 127.0.0.1.
/// Returns the config and the certificate (DER) so clients can trust it.
pub fn self_signed() -> Result<(Arc<rustls::ServerConfig>, Vec<u8>), TlsError> {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?;
    let cert_der = ck.cert.der().to_vec();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
    let mut cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(vec![CertificateDer::from(cert_der.clone())], key)?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((Arc::new(cfg), cert_der))
}
