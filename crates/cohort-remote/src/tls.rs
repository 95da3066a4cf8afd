//! TLS for a node's connections (rustls): the TCP stream is wrapped before the handshake,
//! so the handshake's token and every frame after it travel encrypted.
//!
//! A node both accepts and dials, so it carries both sides: a rustls `ServerConfig` (its
//! certificate and key, and, for mutual TLS, the client verifier) for the connections it
//! accepts, and a `ClientConfig` (the roots it trusts, and its own certificate for mutual
//! TLS) for the ones it dials, with the name the listeners' certificates must carry.
//!
//! Under TLS the writer task does every write: a sender never writes to the socket itself
//! ([`NodeConfig::direct_write`](crate::NodeConfig::direct_write) is ignored), since the
//! TLS session's state belongs to one writer.

use crate::error::RemoteError;
use rustls::pki_types::ServerName;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// A node's TLS settings: see the module documentation.
///
/// ```
/// use cohort_remote::{NodeConfig, Tls};
/// use cohort_remote::rustls::{self, RootCertStore, pki_types::{CertificateDer, PrivateKeyDer}};
/// use std::sync::Arc;
///
/// // A certificate for "cohort.internal" and a root store that trusts it (in production,
/// // loaded from PEM files; rcgen makes one for the example).
/// let key = rcgen::KeyPair::generate().unwrap();
/// let cert = rcgen::CertificateParams::new(vec!["cohort.internal".into()]).unwrap()
///     .self_signed(&key).unwrap();
/// let der = CertificateDer::from(cert.der().to_vec());
/// let mut roots = RootCertStore::empty();
/// roots.add(der.clone()).unwrap();
///
/// let provider = Arc::new(rustls::crypto::ring::default_provider());
/// let server = rustls::ServerConfig::builder_with_provider(provider.clone())
///     .with_safe_default_protocol_versions().unwrap()
///     .with_no_client_auth()
///     .with_single_cert(vec![der], PrivateKeyDer::try_from(key.serialize_der()).unwrap())
///     .unwrap();
/// let client = rustls::ClientConfig::builder_with_provider(provider)
///     .with_safe_default_protocol_versions().unwrap()
///     .with_root_certificates(roots)
///     .with_no_client_auth();
///
/// let (server, client) = (Arc::new(server), Arc::new(client));
/// let tls = Tls::new(server.clone(), client.clone(), "cohort.internal").unwrap();
/// let config = NodeConfig::new("a").token("t").tls(tls);
/// assert!(config.validate().is_ok());
/// // The name the listeners' certificates must carry is checked here:
/// assert!(Tls::new(server, client, "not a name!").is_err());
/// ```
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
    server_name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// TLS with `server` for accepted connections and `client` for dialled ones, which
    /// check that the listener's certificate is valid for `server_name` (a DNS name or an
    /// IP address). An invalid name is [`RemoteError::TlsServerName`].
    pub fn new(
        server: Arc<rustls::ServerConfig>,
        client: Arc<rustls::ClientConfig>,
        server_name: &str,
    ) -> Result<Tls, RemoteError> {
        let server_name = ServerName::try_from(server_name.to_string()).map_err(|e| {
            RemoteError::TlsServerName {
                name: server_name.to_string(),
                reason: e.to_string(),
            }
        })?;
        Ok(Tls {
            acceptor: TlsAcceptor::from(server),
            connector: TlsConnector::from(client),
            server_name,
        })
    }

    /// Wraps an accepted connection.
    pub(crate) async fn accept(&self, tcp: TcpStream) -> io::Result<Stream> {
        let s = self.acceptor.accept(tcp).await?;
        Ok(Stream::Tls(Box::new(s.into())))
    }

    /// Wraps a dialled connection.
    pub(crate) async fn connect(&self, tcp: TcpStream) -> io::Result<Stream> {
        let s = self
            .connector
            .connect(self.server_name.clone(), tcp)
            .await?;
        Ok(Stream::Tls(Box::new(s.into())))
    }
}

/// A TLS session over TCP, either side.
pub(crate) type TlsStream = tokio_rustls::TlsStream<TcpStream>;

/// A connection's byte stream: plain TCP, or TLS over it.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }
}
