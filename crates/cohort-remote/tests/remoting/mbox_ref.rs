//! Mailbox references inside messages: a request carries its reply address; a reference to
//! the receiving node itself is its local mailbox; one to a node the receiver does not know
//! gives counted dead letters; one decoded outside a node is a decoding error.

use crate::common;

use cohort::DeliveryFailure;
use cohort_remote::{MboxRef, Node, NodeConfig, Registry, RemoteError};
use common::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Ask {
    question: String,
    reply_to: MboxRef,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Answer(u64);

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Ask>("t.Ask").unwrap();
    r.register::<Answer>("t.Answer").unwrap();
    r
}

#[test]
fn a_request_carries_its_reply_address() {
    watchdog(TIMEOUT, || {
        let (env, letters) = env_recording();
        let e = env.environment();
        let server = listening(&e, NodeConfig::new("server").token("t"), registry());
        let asks = probe::<Ask>(&e, server.export("questions"));
        let client = Node::start(&e, NodeConfig::new("client").token("t"), registry()).unwrap();
        let answers = probe::<Answer>(&e, client.export("answers"));
        let third = listening(&e, NodeConfig::new("third").token("t"), registry());
        let to_server = client.connect(server.local_addr().unwrap()).unwrap();
        let to_third = client.connect(third.local_addr().unwrap()).unwrap();

        // Answer where the request says.
        let reply_to = client.mbox_ref("answers").unwrap();
        to_server.mbox("questions").send(Ask {
            question: "six times seven".into(),
            reply_to,
        });
        let ask = recv(&asks, "the request");
        assert_eq!(
            (ask.reply_to.node(), ask.reply_to.name()),
            ("client", "answers")
        );
        ask.reply_to.send(Answer(42));
        assert_eq!(
            recv(&answers, "the answer at the reply address"),
            Answer(42)
        );

        // A reference to the receiving node itself is its own exported mailbox.
        to_server.mbox("questions").send(Ask {
            question: "to myself".into(),
            reply_to: to_server.mbox_ref("questions"),
        });
        let ask = recv(&asks, "the second request");
        ask.reply_to.send(Ask {
            question: "delivered locally".into(),
            reply_to: ask.reply_to.clone(),
        });
        assert_eq!(
            recv(&asks, "the local delivery").question,
            "delivered locally"
        );

        // A node the server never met: sends through the reference are counted dead letters.
        to_server.mbox("questions").send(Ask {
            question: "ask the third".into(),
            reply_to: to_third.mbox_ref("anything"),
        });
        let ask = recv(&asks, "the third request");
        assert_eq!(ask.reply_to.node(), "third");
        let before = count(&letters, DeliveryFailure::NodeDown);
        ask.reply_to.send(Answer(1));
        assert_eq!(count(&letters, DeliveryFailure::NodeDown), before + 1);
        assert_eq!(server.stats().undeliverable, 1);

        for n in [client, server, third] {
            n.shutdown();
        }
        env.stop_and_wait();
    });
}

#[test]
fn references_are_made_for_exported_mailboxes_and_resolved_by_nodes_only() {
    watchdog(TIMEOUT, || {
        let (env, _letters) = env_recording();
        let node = Node::start(&env.environment(), NodeConfig::new("n"), registry()).unwrap();
        match node.mbox_ref("nothing") {
            Err(e @ RemoteError::NotExported(_)) => {
                assert!(e.to_string().contains("Node::export"), "{e}")
            }
            other => panic!("expected NotExported, got {other:?}"),
        }
        node.export("here");
        let r = node.mbox_ref("here").unwrap();
        let bytes = postcard::to_allocvec(&r).unwrap();
        // Outside a node's reader there is no node to resolve it against.
        assert!(postcard::from_bytes::<MboxRef>(&bytes).is_err());
        node.shutdown();
        env.stop_and_wait();
    });
}
