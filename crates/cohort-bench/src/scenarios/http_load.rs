//! The http_front example under load: its axum service and its pool of desk agents started
//! in this process, driven on loopback by N kept-alive connections for a bounded time.

// The example's own service and client, compiled here as they are (one source of truth).
#[path = "../../../cohort/examples/http_front/client.rs"]
#[allow(dead_code)] // the load sends no POST: `post_json` stays unused here
mod client;
#[path = "../../../cohort/examples/http_front/service.rs"]
mod service;

use client::Conn;
use hdrhistogram::Histogram;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// What one run measured.
pub struct Outcome {
    /// Requests answered with 200 and the right body within the window.
    pub requests: u64,
    /// Other answers, and failed connections.
    pub errors: u64,
    pub elapsed: Duration,
    /// Round-trip latency per request, in microseconds.
    pub latency_us: Histogram<u64>,
}

/// Starts the service with `desks` agents and drives `GET /price/apple` on `connections`
/// connections for `window`.
pub fn run_once(connections: usize, desks: usize, window: Duration) -> Result<Outcome, String> {
    let env = cohort::Environment::builder()
        .start()
        .map_err(|e| e.to_string())?;
    let pool = service::Pool::start(&env, desks);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let outcome = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, service::router(pool)).await;
        });
        let start = Instant::now();
        let deadline = start + window;
        let clients: Vec<_> = (0..connections)
            .map(|_| tokio::spawn(drive(addr, deadline)))
            .collect();
        let mut all = Outcome {
            requests: 0,
            errors: 0,
            elapsed: Duration::ZERO,
            latency_us: new_histogram(),
        };
        for c in clients {
            let o = c.await.map_err(|e| e.to_string())?;
            all.requests += o.requests;
            all.errors += o.errors;
            all.latency_us
                .add(&o.latency_us)
                .map_err(|e| e.to_string())?;
        }
        all.elapsed = start.elapsed();
        server.abort();
        Ok::<_, String>(all)
    })?;
    drop(rt);
    drop(env);
    if outcome.requests == 0 {
        return Err("no request was answered".into());
    }
    Ok(outcome)
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds")
}

/// One connection's loop: a request, its answer, the next, until `deadline`.
async fn drive(addr: SocketAddr, deadline: Instant) -> Outcome {
    let mut o = Outcome {
        requests: 0,
        errors: 0,
        elapsed: Duration::ZERO,
        latency_us: new_histogram(),
    };
    let Ok(mut conn) = Conn::connect(addr).await else {
        o.errors += 1;
        return o;
    };
    loop {
        let t0 = Instant::now();
        if t0 >= deadline {
            return o;
        }
        match conn.get("/price/apple").await {
            Ok(a) if a.status == 200 && a.body == "apple: 120 cents\n" => {
                o.requests += 1;
                o.latency_us
                    .saturating_record(t0.elapsed().as_micros() as u64);
            }
            Ok(_) => o.errors += 1,
            Err(_) => {
                o.errors += 1;
                return o;
            }
        }
    }
}
