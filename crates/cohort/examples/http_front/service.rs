//! The service: a pool of cohort agents that price items and take orders, and the axum
//! routes whose handlers ask them (`Mbox::request(..)` awaited as a future).
//!
//! One mailbox per agent, picked round robin: a request sent to a named (multi-consumer)
//! mailbox would reach every agent subscribed to it, and each would answer; a direct
//! mailbox gives each request to exactly one agent, and the round robin spreads the load.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use cohort::{ActiveObjBuilder, Agent, Context, DefineError, Mbox, RequestError, WrappedEnv};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long a handler waits for an agent's reply before answering 504.
const REPLY_TIMEOUT: Duration = Duration::from_secs(2);

/// Asks for the price of one item, in cents.
pub struct PriceQuery(pub String);

/// An order for `qty` of `item`.
#[derive(serde::Deserialize)]
pub struct Order {
    pub item: String,
    pub qty: u32,
}

/// What an agent answers to an order.
#[derive(serde::Serialize, Debug, PartialEq)]
pub struct Confirmation {
    pub item: String,
    pub qty: u32,
    pub total_cents: u64,
    /// Which agent of the pool took the order, and its order number there.
    pub desk: usize,
    pub number: u64,
}

/// Why an order was refused.
#[derive(Debug, PartialEq)]
pub enum OrderRefused {
    UnknownItem,
    ZeroQuantity,
}

/// One agent of the pool: the catalogue, and the orders it took.
struct Desk {
    id: usize,
    prices: Arc<HashMap<String, u64>>,
    orders: u64,
}

impl Agent for Desk {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_request(|me, q: &PriceQuery, _| -> Option<u64> { me.prices.get(&q.0).copied() })?;
        ctx.on_request(
            |me: &mut Self,
             o: &Order,
             _: &mut Context<'_, Self>|
             -> Result<Confirmation, OrderRefused> {
                let price = *me.prices.get(&o.item).ok_or(OrderRefused::UnknownItem)?;
                if o.qty == 0 {
                    return Err(OrderRefused::ZeroQuantity);
                }
                me.orders += 1;
                Ok(Confirmation {
                    item: o.item.clone(),
                    qty: o.qty,
                    total_cents: price * u64::from(o.qty),
                    desk: me.id,
                    number: me.orders,
                })
            },
        )?;
        Ok(())
    }
}

/// The agents' mailboxes and the round robin over them: the state of every route.
#[derive(Clone)]
pub struct Pool {
    desks: Arc<[Mbox]>,
    next: Arc<AtomicUsize>,
}

impl Pool {
    /// Registers `n` desk agents (one cooperation, one thread each) in `env`.
    pub fn start(env: &WrappedEnv, n: usize) -> Pool {
        let prices: Arc<HashMap<String, u64>> = Arc::new(
            [("apple", 120), ("pear", 95), ("plum", 40)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        );
        let mut coop = env.new_coop();
        // A thread per desk: the two answer in parallel.
        let binder = ActiveObjBuilder::new()
            .name("desk")
            .build(env)
            .expect("the desks' dispatcher starts")
            .binder();
        coop.set_binder(binder);
        let desks: Vec<Mbox> = (0..n)
            .map(|id| {
                let desk = Desk {
                    id,
                    prices: prices.clone(),
                    orders: 0,
                };
                coop.add(desk).mbox()
            })
            .collect();
        env.register_coop(coop).expect("the desks register");
        Pool {
            desks: desks.into(),
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The next desk, round robin.
    fn desk(&self) -> &Mbox {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.desks.len();
        &self.desks[i]
    }
}

/// An agent that gave no reply, as an HTTP answer.
fn unavailable(e: RequestError) -> (StatusCode, String) {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the desk did not answer: {e}\n"),
    )
}

/// Sends `req` to the next desk and awaits its reply, bounded by [`REPLY_TIMEOUT`].
async fn ask<Req, Reply>(pool: &Pool, req: Req) -> Result<Reply, (StatusCode, String)>
where
    Req: Send + Sync + 'static,
    Reply: Send + 'static,
{
    // `PendingReply` is a future: awaiting it parks this task, not a thread.
    match tokio::time::timeout(REPLY_TIMEOUT, pool.desk().request::<Req, Reply>(req)).await {
        Ok(reply) => reply.map_err(unavailable),
        Err(_) => Err((
            StatusCode::GATEWAY_TIMEOUT,
            "no reply in time\n".to_string(),
        )),
    }
}

async fn price(
    State(pool): State<Pool>,
    Path(item): Path<String>,
) -> Result<String, (StatusCode, String)> {
    match ask::<PriceQuery, Option<u64>>(&pool, PriceQuery(item.clone())).await? {
        Some(cents) => Ok(format!("{item}: {cents} cents\n")),
        None => Err((StatusCode::NOT_FOUND, format!("no such item: {item}\n"))),
    }
}

async fn order(
    State(pool): State<Pool>,
    Json(order): Json<Order>,
) -> Result<Json<Confirmation>, (StatusCode, String)> {
    let item = order.item.clone();
    match ask::<Order, Result<Confirmation, OrderRefused>>(&pool, order).await? {
        Ok(c) => Ok(Json(c)),
        Err(OrderRefused::UnknownItem) => {
            Err((StatusCode::NOT_FOUND, format!("no such item: {item}\n")))
        }
        Err(OrderRefused::ZeroQuantity) => Err((
            StatusCode::BAD_REQUEST,
            "qty must be at least 1\n".to_string(),
        )),
    }
}

/// The routes: `GET /price/{item}` and `POST /order` (JSON `{"item": .., "qty": ..}`).
pub fn router(pool: Pool) -> Router {
    Router::new()
        .route("/price/{item}", get(price))
        .route("/order", post(order))
        .with_state(pool)
}
