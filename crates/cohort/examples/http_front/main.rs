//! An HTTP service on axum whose handlers ask a pool of two cohort agents and await their
//! replies: the shape of a tokio service that keeps its state in agents.
//!
//! - `cargo run -p cohort --example http_front` (or `-- --self-test`): starts the server on
//!   an ephemeral loopback port, sends it a few requests, checks the answers, stops.
//! - `cargo run -p cohort --example http_front -- --serve 127.0.0.1:3000`: keeps serving;
//!   try `curl 127.0.0.1:3000/price/apple` and
//!   `curl -d '{"item":"pear","qty":3}' -H 'content-type: application/json' 127.0.0.1:3000/order`.

mod client;
mod service;

use client::Conn;
use service::{Pool, router};
use std::net::SocketAddr;

/// The desk agents behind the routes.
const DESKS: usize = 2;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let serve = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] | ["--self-test"] => None,
        ["--serve", addr] => Some(addr.parse::<SocketAddr>().unwrap_or_else(|e| {
            eprintln!("--serve wants an address such as 127.0.0.1:3000 ({e})");
            std::process::exit(2)
        })),
        _ => {
            eprintln!("usage: http_front [--self-test | --serve ADDR]");
            std::process::exit(2)
        }
    };
    let env = cohort::Environment::builder().start().expect("environment");
    let pool = Pool::start(&env, DESKS);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async {
        let addr = serve.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        let server = tokio::spawn(async move {
            axum::serve(listener, router(pool)).await.expect("server");
        });
        if serve.is_some() {
            println!("serving on http://{addr} (GET /price/{{item}}, POST /order); Ctrl-C stops");
            server.await.expect("server task");
            return;
        }
        self_test(addr).await;
        server.abort();
    });
    drop(rt);
    drop(env); // stops the desks and joins their threads
    println!("done: http_front");
}

/// Asks the running server a few things, over one kept-alive connection, and checks the
/// answers.
async fn self_test(addr: SocketAddr) {
    let mut c = Conn::connect(addr).await.expect("connect");
    let a = c.get("/price/apple").await.expect("GET /price/apple");
    assert_eq!((a.status, a.body.as_str()), (200, "apple: 120 cents\n"));
    println!("GET /price/apple -> {} {}", a.status, a.body.trim_end());
    let a = c.get("/price/kiwi").await.expect("GET /price/kiwi");
    assert_eq!(a.status, 404);
    println!("GET /price/kiwi -> {} {}", a.status, a.body.trim_end());
    let mut desks = Vec::new();
    for qty in [3, 1] {
        let body = format!(r#"{{"item":"pear","qty":{qty}}}"#);
        let a = c.post_json("/order", &body).await.expect("POST /order");
        assert_eq!(a.status, 200, "{}", a.body);
        let json: serde_json::Value = serde_json::from_str(&a.body).expect("JSON");
        assert_eq!(json["total_cents"], 95 * qty);
        desks.push(json["desk"].as_u64().expect("desk"));
        println!("POST /order {body} -> {} {}", a.status, a.body);
    }
    // Round robin: two orders in a row went to the two desks.
    desks.sort_unstable();
    assert_eq!(desks, [0, 1]);
    let a = c
        .post_json("/order", r#"{"item":"pear","qty":0}"#)
        .await
        .expect("POST /order");
    assert_eq!(a.status, 400);
    println!("POST /order qty 0 -> {} {}", a.status, a.body.trim_end());
}
