//! Mutable messages: `send_mut` + `on_mut` hand the value over by value (moved, never
//! cloned), and mutable and immutable messages of one type are distinct subscriptions.

use crate::common;

use cohort::{Agent, Context, DefineError, DeliveryFailure, Environment, Mbox, Mutable};
use common::{DeadLetters, TIMEOUT, watchdog};
use std::sync::mpsc::{self, Sender};

/// A message larger than a word (boxed in the envelope).
struct Big {
    data: Vec<u8>,
    tag: [u64; 4],
}

/// What a [`Taker`] got: the address of the heap buffer it received, and a checksum.
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Vec { ptr: usize, len: usize, sum: u64 },
    Boxed { ptr: usize, value: u64 },
    Big { ptr: usize, len: usize, tag: u64 },
    SharedString(String),
    OwnedString(String),
}

/// Takes mutable messages by value and keeps them (proof of ownership); handles `&String`
/// and `String` through two distinct subscriptions.
struct Taker {
    tx: Sender<Got>,
    kept: Vec<Vec<u64>>,
}

impl Agent for Taker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_mut(|me: &mut Self, v: Vec<u64>, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(Got::Vec {
                ptr: v.as_ptr() as usize,
                len: v.len(),
                sum: v.iter().sum(),
            });
            me.kept.push(v);
        })?;
        ctx.on_mut(|me: &mut Self, b: Box<u64>, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(Got::Boxed {
                ptr: &*b as *const u64 as usize,
                value: *b,
            });
        })?;
        ctx.on_mut(|me: &mut Self, b: Big, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(Got::Big {
                ptr: b.data.as_ptr() as usize,
                len: b.data.len(),
                tag: b.tag.iter().sum(),
            });
        })?;
        ctx.on(|me: &mut Self, s: &String, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(Got::SharedString(s.clone()));
        })?;
        ctx.on_mut(|me: &mut Self, s: String, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(Got::OwnedString(s));
        })?;
        Ok(())
    }
}

#[test]
fn send_mut_moves_the_value_to_the_handler() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let taker = coop
            .add(Taker {
                tx,
                kept: Vec::new(),
            })
            .mbox();
        env.register_coop(coop).unwrap();

        let v: Vec<u64> = (1..=1000).collect();
        let ptr = v.as_ptr() as usize;
        taker.send_mut(v).unwrap();
        assert_eq!(
            common::recv(&rx, "the Vec"),
            Got::Vec {
                ptr,
                len: 1000,
                sum: 500_500
            },
            "the handler must get the very buffer that was sent"
        );

        let b = Box::new(42u64);
        let ptr = &*b as *const u64 as usize;
        taker.send_mut(b).unwrap();
        assert_eq!(common::recv(&rx, "the Box"), Got::Boxed { ptr, value: 42 });

        let big = Big {
            data: vec![7; 4096],
            tag: [1, 2, 3, 4],
        };
        let ptr = big.data.as_ptr() as usize;
        taker.send_mut(big).unwrap();
        assert_eq!(
            common::recv(&rx, "the Big"),
            Got::Big {
                ptr,
                len: 4096,
                tag: 10
            }
        );

        // `String` and `Mutable<String>` are different subscriptions.
        taker.send(String::from("shared"));
        taker.send_mut(String::from("owned")).unwrap();
        assert_eq!(
            common::recv(&rx, "the shared String"),
            Got::SharedString("shared".into())
        );
        assert_eq!(
            common::recv(&rx, "the owned String"),
            Got::OwnedString("owned".into())
        );
        env.stop_and_wait();
        assert_eq!(dead.all(), vec![]);
    });
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ping;

/// Only immutable `Ping` and mutable `Vec<u64>`.
struct Picky {
    tx: Sender<&'static str>,
}

impl Agent for Picky {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {
            let _ = me.tx.send("ping");
        })?;
        ctx.on_mut(|me: &mut Self, _: Vec<u64>, _: &mut Context<'_, Self>| {
            let _ = me.tx.send("vec");
        })?;
        Ok(())
    }
}

#[test]
fn immutable_and_mutable_do_not_cross() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let picky = coop.add(Picky { tx }).mbox();
        env.register_coop(coop).unwrap();

        picky.send(vec![1u64, 2, 3]); // immutable Vec<u64>: no handler
        picky.send_mut(Ping).unwrap(); // mutable Ping: no handler
        picky.send_mut(vec![4u64]).unwrap(); // handled
        picky.send(Ping); // handled
        assert_eq!(common::recv(&rx, "the mutable Vec"), "vec");
        assert_eq!(common::recv(&rx, "the immutable Ping"), "ping");
        assert_eq!(env.dead_letters(), 2);
        assert_eq!(
            dead.all(),
            vec![
                (
                    std::any::type_name::<Vec<u64>>(),
                    DeliveryFailure::NoHandler
                ),
                (
                    std::any::type_name::<Mutable<Ping>>(),
                    DeliveryFailure::NoHandler
                ),
            ]
        );
        env.stop_and_wait();
        assert!(rx.try_recv().is_err(), "nothing else was handled");
    });
}

/// Sends its `Vec` to a peer on the same dispatcher (the local path) from `start`.
struct Giver {
    peer: Mbox,
    sent_ptr: Sender<usize>,
}

impl Agent for Giver {
    fn start(&mut self, _: &mut Context<'_, Self>) {
        let v: Vec<u64> = vec![9; 16];
        let _ = self.sent_ptr.send(v.as_ptr() as usize);
        self.peer.send_mut(v).unwrap();
    }
}

#[test]
fn send_mut_between_agents_on_one_thread_moves_too() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let (ptr_tx, ptr_rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let taker = coop
            .add(Taker {
                tx,
                kept: Vec::new(),
            })
            .mbox();
        coop.add(Giver {
            peer: taker,
            sent_ptr: ptr_tx,
        });
        env.register_coop(coop).unwrap();
        let ptr = common::recv(&ptr_rx, "the giver's pointer");
        assert_eq!(
            common::recv(&rx, "the Vec"),
            Got::Vec {
                ptr,
                len: 16,
                sum: 144
            }
        );
        env.stop_and_wait();
    });
}
