//! TLS between nodes: messages cross an encrypted session both ways; a node without TLS, a
//! certificate not trusted, or one for another name is refused with its reason and counted,
//! and the listener goes on serving its other peers.

use crate::common;

use cohort::Environment;
use cohort_remote::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use cohort_remote::rustls::{self, RootCertStore};
use cohort_remote::{HandshakeError, Node, NodeConfig, Registry, RemoteError, Tls};
use common::*;
use std::sync::Arc;

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<String>("string").unwrap();
    r.register::<u64>("u64").unwrap();
    r
}

/// A self-signed certificate for `name`, with its key.
struct Identity {
    cert: CertificateDer<'static>,
    key: Vec<u8>,
}

fn identity(name: &str) -> Identity {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![name.to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    Identity {
        cert: CertificateDer::from(cert.der().to_vec()),
        key: key.serialize_der(),
    }
}

/// The rustls configurations presenting `me` and trusting `trusted`.
fn configs(
    me: &Identity,
    trusted: &Identity,
) -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![me.cert.clone()],
            PrivateKeyDer::try_from(me.key.clone()).unwrap(),
        )
        .unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(trusted.cert.clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    (Arc::new(server), Arc::new(client))
}

/// TLS presenting `me`, trusting `trusted`, expecting listeners to be `server_name`.
fn tls(me: &Identity, trusted: &Identity, server_name: &str) -> Tls {
    let (server, client) = configs(me, trusted);
    Tls::new(server, client, server_name).unwrap()
}

#[test]
fn messages_cross_a_tls_session_both_ways() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let id = identity("cohort.test");
        let server = listening(
            &e,
            NodeConfig::new("server")
                .token("t")
                .tls(tls(&id, &id, "cohort.test")),
            registry(),
        );
        let at_server = probe::<String>(&e, server.export("in"));
        let client = Node::start(
            &e,
            NodeConfig::new("client")
                .token("t")
                .tls(tls(&id, &id, "cohort.test")),
            registry(),
        )
        .unwrap();
        let at_client = probe::<u64>(&e, client.export("back"));
        let to_server = client.connect(server.local_addr().unwrap()).unwrap();
        for i in 0..1000 {
            to_server.mbox("in").send(format!("m{i}"));
        }
        for i in 0..1000 {
            assert_eq!(recv(&at_server, "a message over TLS"), format!("m{i}"));
        }
        // And back, over the connection the client dialled.
        let to_client = server
            .wait_for_peer("client", TIMEOUT)
            .expect("the client is up at the server");
        to_client.mbox("back").send(7u64);
        assert_eq!(recv(&at_client, "the reply over TLS"), 7);
        assert_eq!(server.stats().handshakes_refused, 0);
        assert_eq!(e.dead_letters(), 0);
        client.shutdown();
        server.shutdown();
        env.stop_and_wait();
    });
}

/// `client`'s connection to a server with `server_tls` fails in the handshake; the server
/// counts it, and still serves a well-configured peer afterwards.
fn refused(
    server_tls: Option<Tls>,
    client_tls: Option<Tls>,
    good_client: Option<Tls>,
) -> HandshakeError {
    let env = Environment::builder().start().unwrap();
    let e = env.environment();
    let mut config = NodeConfig::new("server").token("t");
    if let Some(t) = server_tls {
        config = config.tls(t);
    }
    let server = listening(&e, config, registry());
    let inbox = probe::<u64>(&e, server.export("in"));
    let mut config = NodeConfig::new("bad").token("t");
    if let Some(t) = client_tls {
        config = config.tls(t);
    }
    let bad = Node::start(&e, config, registry()).unwrap();
    let reason = match bad.connect(server.local_addr().unwrap()) {
        Err(RemoteError::Handshake { source, .. }) => source,
        Err(other) => panic!("expected a handshake error, got {other}"),
        Ok(_) => panic!("expected a handshake error, got a connection"),
    };
    wait_until(|| server.stats().handshakes_refused == 1);
    assert_eq!(bad.stats().handshakes_refused, 1);

    let mut config = NodeConfig::new("good").token("t");
    if let Some(t) = good_client {
        config = config.tls(t);
    }
    let good = Node::start(&e, config, registry()).unwrap();
    good.connect(server.local_addr().unwrap())
        .unwrap()
        .mbox("in")
        .send(1u64);
    assert_eq!(recv(&inbox, "a good peer's message"), 1);
    for n in [bad, good, server] {
        n.shutdown();
    }
    env.stop_and_wait();
    reason
}

#[test]
fn a_plain_node_and_a_tls_node_refuse_each_other() {
    watchdog(TIMEOUT, || {
        let id = identity("cohort.test");
        let t = || Some(tls(&id, &id, "cohort.test"));
        // A TLS client at a plain listener: the listener reads a ClientHello as a frame.
        let e = refused(None, t(), None);
        // (It refuses with "the peer speaks TLS", in plain bytes the client cannot read.)
        assert!(matches!(e, HandshakeError::Tls(_)), "{e}");
        // A plain client at a TLS listener: its Hello is not a ClientHello.
        let e = refused(t(), None, t());
        assert_eq!(e, HandshakeError::PeerUsesTls);
    });
}

#[test]
fn an_untrusted_certificate_or_another_name_is_refused() {
    watchdog(TIMEOUT, || {
        let id = identity("cohort.test");
        let stranger = identity("cohort.test");
        let good = || Some(tls(&id, &id, "cohort.test"));
        // The client trusts another certificate than the one the server presents.
        let e = refused(good(), Some(tls(&id, &stranger, "cohort.test")), good());
        match e {
            HandshakeError::Tls(reason) => assert!(reason.contains("certificate"), "{reason}"),
            other => panic!("expected a TLS error, got {other}"),
        }
        // The client expects a name the server's certificate does not carry.
        let e = refused(good(), Some(tls(&id, &id, "other.test")), good());
        match e {
            HandshakeError::Tls(reason) => assert!(reason.contains("certificate"), "{reason}"),
            other => panic!("expected a TLS error, got {other}"),
        }
    });
}

#[test]
fn a_bad_server_name_is_a_typed_error() {
    let id = identity("cohort.test");
    let (server, client) = configs(&id, &id);
    match Tls::new(server, client, "no spaces allowed") {
        Err(e @ RemoteError::TlsServerName { .. }) => {
            assert!(e.to_string().contains("no spaces allowed"), "{e}")
        }
        other => panic!("expected TlsServerName, got {other:?}"),
    }
}
