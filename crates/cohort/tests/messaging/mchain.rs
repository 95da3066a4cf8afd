//! Message chains: overflow reactions with exact counts, receive limits, select fairness and
//! send cases, closing with waiting receivers and senders, bad input.

use crate::common;

use cohort::mchain::{
    Handlers, MchainError, MchainParams, Overflow, ReceiveResult, Sent, StopReason, from, from_all,
    receive, receive_case, select, send_case, send_case_mut,
};
use cohort::{Agent, Context, DefineError, DeliveryFailure, Environment, Mbox, WrappedEnv};
use common::{DeadLetters, TIMEOUT, count, wait_until, watchdog};
use std::cell::Cell;
use std::time::{Duration, Instant};

fn env() -> WrappedEnv {
    Environment::builder().start().unwrap()
}

/// Drains every `u32` left in `chain` without waiting.
fn drain(chain: &cohort::mchain::Mchain) -> Vec<u32> {
    let mut v = Vec::new();
    receive(
        from(chain).no_wait(),
        &mut Handlers::new().on(|n: &u32| v.push(*n)),
    );
    v
}

fn bounded3(overflow: Overflow) -> (WrappedEnv, cohort::mchain::Mchain) {
    let env = env();
    let chain = env
        .create_mchain(MchainParams::bounded(3).on_overflow(overflow))
        .unwrap();
    (env, chain)
}

#[test]
fn overflow_drop_newest_counts_each_drop() {
    watchdog(TIMEOUT, || {
        let (_env, chain) = bounded3(Overflow::DropNewest);
        let sent: Vec<_> = (0..5u32).map(|i| chain.send(i).unwrap()).collect();
        use Sent::*;
        assert_eq!(sent, [Queued, Queued, Queued, DroppedNewest, DroppedNewest]);
        assert_eq!(chain.stats().dropped_newest, 2);
        assert_eq!(chain.stats().queued, 3);
        assert_eq!(drain(&chain), [0, 1, 2]);
    });
}

#[test]
fn overflow_remove_oldest_counts_each_removal() {
    watchdog(TIMEOUT, || {
        let (_env, chain) = bounded3(Overflow::RemoveOldest);
        let sent: Vec<_> = (0..5u32).map(|i| chain.send(i).unwrap()).collect();
        use Sent::*;
        assert_eq!(sent, [Queued, Queued, Queued, RemovedOldest, RemovedOldest]);
        assert_eq!(chain.stats().removed_oldest, 2);
        assert_eq!(drain(&chain), [2, 3, 4]);
    });
}

#[test]
fn overflow_error_is_typed_and_mbox_sends_become_dead_letters() {
    watchdog(TIMEOUT, || {
        let (builder, log) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let chain = env
            .create_mchain(MchainParams::bounded(3).preallocated())
            .unwrap();
        for i in 0..3u32 {
            assert_eq!(chain.send(i), Ok(Sent::Queued));
        }
        let err = chain.send(3u32).unwrap_err();
        assert_eq!(
            err,
            MchainError::Full {
                message_type: "u32",
                capacity: 3
            }
        );
        assert!(err.to_string().contains("raise the capacity"));
        chain.as_mbox().send(4u32);
        assert_eq!(chain.stats().refused_full, 2);
        assert_eq!(log.of::<u32>(), [DeliveryFailure::ChainFull]);
        assert_eq!(env.dead_letters(), 1);
        assert_eq!(drain(&chain), [0, 1, 2]);
    });
}

const ABORT_CHILD: &str = "COHORT_MCHAIN_ABORT_CHILD";

#[test]
fn overflow_abort_aborts_the_process() {
    watchdog(TIMEOUT, || {
        if std::env::var_os(ABORT_CHILD).is_some() {
            // The child: overflow a chain that aborts.
            let (_env, chain) = bounded3(Overflow::Abort);
            for i in 0..4u32 {
                let _ = chain.send(i);
            }
            unreachable!("the fourth send aborts");
        }
        if common::under_valgrind() {
            return; // the child would inherit valgrind's preload without valgrind
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                common::test_path(module_path!(), "overflow_abort_aborts_the_process").as_str(),
                "--nocapture",
            ])
            .env(ABORT_CHILD, "1")
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("Overflow::Abort"), "stderr: {stderr}");
    });
}

#[test]
fn wait_on_full_times_out_then_reacts() {
    watchdog(TIMEOUT, || {
        let (_env, chain) = {
            let env = env();
            let c = env
                .create_mchain(
                    MchainParams::bounded(1)
                        .wait_on_full(Duration::from_millis(20))
                        .on_overflow(Overflow::DropNewest),
                )
                .unwrap();
            (env, c)
        };
        chain.send(1u32).unwrap();
        let t = Instant::now();
        assert_eq!(chain.send(2u32), Ok(Sent::DroppedNewest));
        assert!(t.elapsed() >= Duration::from_millis(20));
        assert_eq!(chain.stats().dropped_newest, 1);
        assert_eq!(chain.waiters(), 0);
    });
}

#[test]
fn wait_on_full_goes_on_when_a_receiver_makes_room() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env
            .create_mchain(MchainParams::bounded(1).wait_on_full(TIMEOUT * 10))
            .unwrap();
        let n = count(200) as u32;
        let tx = chain.clone();
        let producer = std::thread::spawn(move || {
            for i in 0..n {
                assert_eq!(tx.send(i), Ok(Sent::Queued));
            }
        });
        let mut got = Vec::new();
        let r = receive(
            from(&chain).handle_n(n as usize),
            &mut Handlers::new().on(|i: &u32| got.push(*i)),
        );
        producer.join().unwrap();
        assert_eq!(r.stop, StopReason::HandleN);
        assert_eq!(got, (0..n).collect::<Vec<_>>());
        assert_eq!(chain.stats().dropped_newest + chain.stats().refused_full, 0);
    });
}

#[test]
fn handle_n_and_extract_n_count_unhandled_messages() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        chain.send(1u32).unwrap();
        chain.send("no handler").unwrap();
        chain.send(2u32).unwrap();
        chain.send(3u32).unwrap();
        let mut h = Handlers::new().on(|_: &u32| {});
        let r = receive(from(&chain).handle_n(2), &mut h);
        assert_eq!(
            r,
            ReceiveResult {
                extracted: 3,
                handled: 2,
                sent: 0,
                stop: StopReason::HandleN
            }
        );
        assert_eq!(chain.stats().unhandled, 1);
        chain.send("again").unwrap();
        let r = receive(from(&chain).extract_n(1), &mut h);
        assert_eq!(
            (r.extracted, r.handled, r.stop),
            (1, 1, StopReason::ExtractN)
        );
        let r = receive(from(&chain).extract_n(1), &mut h);
        assert_eq!(
            (r.extracted, r.handled, r.stop),
            (1, 0, StopReason::ExtractN)
        );
        assert_eq!(chain.stats().unhandled, 2);
    });
}

#[test]
fn empty_timeout_total_time_and_no_wait() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let mut h = Handlers::new().on(|_: &u32| {});
        let t = Instant::now();
        let r = receive(
            from(&chain).empty_timeout(Duration::from_millis(15)),
            &mut h,
        );
        assert_eq!((r.extracted, r.stop), (0, StopReason::EmptyTimeout));
        assert!(t.elapsed() >= Duration::from_millis(15));

        let t = Instant::now();
        let r = receive(from(&chain).total_time(Duration::from_millis(15)), &mut h);
        assert_eq!(r.stop, StopReason::TotalTime);
        assert!(t.elapsed() >= Duration::from_millis(15));

        chain.send(1u32).unwrap();
        let r = receive(from(&chain).no_wait(), &mut h);
        assert_eq!((r.handled, r.stop), (1, StopReason::EmptyTimeout));
        assert_eq!(chain.waiters(), 0);
    });
}

#[test]
fn stop_on_is_checked_after_each_message() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        for i in 0..10u32 {
            chain.send(i).unwrap();
        }
        let seen = Cell::new(0u32);
        let r = receive(
            from(&chain).stop_on(|| seen.get() == 3),
            &mut Handlers::new().on(|_: &u32| seen.set(seen.get() + 1)),
        );
        assert_eq!((r.handled, r.stop), (3, StopReason::StopOn));
        assert_eq!(chain.len(), 7);
    });
}

#[test]
fn close_retain_content_wakes_waiting_receivers_after_the_rest() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let receivers: Vec<_> = (0..2)
            .map(|_| {
                let chain = chain.clone();
                std::thread::spawn(move || {
                    receive(from(&chain), &mut Handlers::new().on(|_: &u32| {}))
                })
            })
            .collect();
        wait_until(|| chain.waiters() == 2);
        chain.send(1u32).unwrap();
        chain.send(2u32).unwrap();
        chain.close_retain_content();
        let results: Vec<_> = receivers.into_iter().map(|r| r.join().unwrap()).collect();
        assert!(results.iter().all(|r| r.stop == StopReason::Closed));
        assert_eq!(results.iter().map(|r| r.handled).sum::<usize>(), 2);
        assert_eq!(chain.waiters(), 0);
    });
}

#[test]
fn close_drop_content_counts_and_wakes_a_blocked_sender() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env
            .create_mchain(MchainParams::bounded(2).wait_on_full(TIMEOUT * 10))
            .unwrap();
        chain.send(1u32).unwrap();
        chain.send(2u32).unwrap();
        let tx = chain.clone();
        let sender = std::thread::spawn(move || tx.send(3u32));
        wait_until(|| chain.waiters() == 1);
        chain.close_drop_content();
        assert_eq!(
            sender.join().unwrap(),
            Err(MchainError::Closed {
                message_type: "u32"
            })
        );
        let s = chain.stats();
        assert_eq!((s.dropped_on_close, s.refused_closed), (2, 1));
        let r = receive(from(&chain), &mut Handlers::new().on(|_: &u32| {}));
        assert_eq!((r.extracted, r.stop), (0, StopReason::Closed));
        assert!(chain.is_closed());
    });
}

#[test]
fn sending_to_a_closed_chain_is_an_error_or_a_dead_letter() {
    watchdog(TIMEOUT, || {
        let (builder, log) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        chain.close_retain_content();
        let err = chain.send(1u32).unwrap_err();
        assert_eq!(
            err,
            MchainError::Closed {
                message_type: "u32"
            }
        );
        assert!(err.to_string().contains("closed"));
        assert_eq!(
            chain.send_mut(vec![1u8]).unwrap_err(),
            MchainError::Closed {
                message_type: std::any::type_name::<cohort::Mutable<Vec<u8>>>()
            }
        );
        chain.as_mbox().send(2u32);
        assert_eq!(log.of::<u32>(), [DeliveryFailure::ChainClosed]);
        assert_eq!(chain.stats().refused_closed, 3);
    });
}

#[test]
fn bad_parameters_are_typed_errors() {
    watchdog(TIMEOUT, || {
        let env = env();
        let e = env.create_mchain(MchainParams::bounded(0)).unwrap_err();
        assert_eq!(e, MchainError::ZeroCapacity);
        assert!(e.to_string().contains("at least 1"));
        let e = env
            .create_mchain(MchainParams::unbounded().preallocated())
            .unwrap_err();
        assert_eq!(e, MchainError::PreallocatedUnbounded);
    });
}

#[test]
fn select_serves_a_busy_chain_and_a_quiet_one_in_turn() {
    watchdog(TIMEOUT, || {
        let env = env();
        let busy = env.create_mchain(MchainParams::unbounded()).unwrap();
        let quiet = env.create_mchain(MchainParams::unbounded()).unwrap();
        for i in 0..1000u32 {
            busy.send(i).unwrap();
        }
        for i in 0..10u32 {
            quiet.send(i).unwrap();
        }
        let (b, q) = (Cell::new(0), Cell::new(0));
        let r = select(
            from_all().stop_on(|| q.get() == 10),
            &mut [
                receive_case(&busy, Handlers::new().on(|_: &u32| b.set(b.get() + 1))),
                receive_case(&quiet, Handlers::new().on(|_: &u32| q.set(q.get() + 1))),
            ],
        );
        assert_eq!(r.stop, StopReason::StopOn);
        // Strict alternation: the busy chain got at most one more turn than the quiet one.
        assert!(b.get() <= 11, "busy chain served {} times", b.get());
        assert_eq!(r.handled, b.get() + 10);
        assert_eq!(busy.len(), 1000 - b.get());
    });
}

#[test]
fn select_send_case_waits_for_room() {
    watchdog(TIMEOUT, || {
        let env = env();
        let full = env.create_mchain(MchainParams::bounded(1)).unwrap();
        let other = env.create_mchain(MchainParams::unbounded()).unwrap();
        full.send(0u32).unwrap();
        let drainer = {
            let full = full.clone();
            std::thread::spawn(move || {
                // Wait until the select sleeps on both chains, then make room.
                wait_until(|| full.waiters() == 1);
                receive(
                    from(&full).handle_n(1),
                    &mut Handlers::new().on(|_: &u32| {}),
                )
            })
        };
        let sent = Cell::new(false);
        let r = select(
            from_all().handle_n(1),
            &mut [
                receive_case(&other, Handlers::new().on(|_: &u32| {})),
                send_case(&full, 7u32, || sent.set(true)),
            ],
        );
        assert_eq!(drainer.join().unwrap().handled, 1);
        assert_eq!((r.sent, r.handled, r.stop), (1, 0, StopReason::HandleN));
        assert!(sent.get());
        assert_eq!(drain(&full), [7]);
    });
}

#[test]
fn select_returns_closed_when_every_case_is_finished() {
    watchdog(TIMEOUT, || {
        let env = env();
        let a = env.create_mchain(MchainParams::unbounded()).unwrap();
        let b = env.create_mchain(MchainParams::unbounded()).unwrap();
        let c = env.create_mchain(MchainParams::unbounded()).unwrap();
        c.close_retain_content();
        let closer = {
            let (a, b) = (a.clone(), b.clone());
            std::thread::spawn(move || {
                wait_until(|| a.waiters() == 1 && b.waiters() == 1);
                a.send(1u32).unwrap();
                a.close_retain_content();
                b.close_drop_content();
            })
        };
        let r = select(
            from_all(),
            &mut [
                receive_case(&a, Handlers::new().on(|_: &u32| {})),
                receive_case(&b, Handlers::new().on(|_: &u32| {})),
                send_case(&c, 1u32, || unreachable!("a closed chain takes nothing")),
            ],
        );
        closer.join().unwrap();
        assert_eq!((r.handled, r.sent, r.stop), (1, 0, StopReason::Closed));
        assert_eq!(c.stats().refused_closed, 1);
    });
}

/// Sends what it is told to a chain, immutable and mutable.
struct ToChain {
    chain: Mbox,
}
impl Agent for ToChain {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, n: &u32, _: &mut Context<'_, Self>| {
            me.chain.send(*n);
            me.chain.send_mut(vec![*n as u8]).unwrap();
        })?;
        Ok(())
    }
}

#[test]
fn agents_send_to_a_chain_through_its_mbox() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let mut coop = env.new_coop();
        let agent = coop.add(ToChain {
            chain: chain.as_mbox(),
        });
        let agent = agent.mbox();
        env.register_coop(coop).unwrap();
        let n = count(100) as u32;
        for i in 0..n {
            agent.send(i);
        }
        let (mut imm, mut bytes) = (0u32, 0usize);
        let r = receive(
            from(&chain).handle_n(2 * n as usize),
            &mut Handlers::new()
                .on(|i: &u32| imm += i)
                .on_mut(|v: Vec<u8>| bytes += v.len()),
        );
        assert_eq!(r.stop, StopReason::HandleN);
        assert_eq!(imm, (0..n).sum::<u32>());
        assert_eq!(bytes, n as usize);
        assert_eq!(env.dead_letters(), 0);
        assert_eq!(chain.as_mbox(), chain.as_mbox());
    });
}

#[test]
fn a_second_handler_for_a_type_replaces_the_first() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env
            .create_mchain(MchainParams::bounded(4).preallocated().name("pre"))
            .unwrap();
        assert_eq!(chain.capacity(), Some(4));
        assert!(format!("{chain:?}").contains("pre"));
        chain.send(1u32).unwrap();
        let (first, second) = (Cell::new(0), Cell::new(0));
        let r = receive(
            from(&chain).no_wait(),
            &mut Handlers::new()
                .on(|_: &u32| first.set(first.get() + 1))
                .on(|_: &u32| second.set(second.get() + 1)),
        );
        assert_eq!(r.handled, 1);
        assert_eq!((first.get(), second.get()), (0, 1));
    });
}

#[test]
fn mutable_and_immutable_messages_of_one_type_are_distinct() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        chain.send(1u32).unwrap();
        chain.send_mut(2u32).unwrap();
        let mut got = Vec::new();
        let r = receive(
            from(&chain).no_wait(),
            &mut Handlers::new().on_mut(|n: u32| got.push(n)),
        );
        assert_eq!((r.extracted, r.handled), (2, 1));
        assert_eq!(got, [2]);
        assert_eq!(chain.stats().unhandled, 1);
    });
}

#[test]
fn select_is_not_starved_by_a_chain_that_is_always_full() {
    watchdog(TIMEOUT, || {
        let env = env();
        let busy = env
            .create_mchain(MchainParams::bounded(16).wait_on_full(TIMEOUT * 10))
            .unwrap();
        let quiet = env.create_mchain(MchainParams::unbounded()).unwrap();
        // A producer keeps the busy chain full until it is closed.
        let flood = {
            let busy = busy.clone();
            std::thread::spawn(move || while busy.send(0u32).is_ok() {})
        };
        let trickle = {
            let quiet = quiet.clone();
            std::thread::spawn(move || {
                for i in 0..10u32 {
                    quiet.send(i).unwrap();
                }
            })
        };
        let (b, q) = (Cell::new(0usize), Cell::new(0usize));
        let r = select(
            from_all().stop_on(|| q.get() == 10),
            &mut [
                receive_case(&busy, Handlers::new().on(|_: &u32| b.set(b.get() + 1))),
                receive_case(&quiet, Handlers::new().on(|_: &u32| q.set(q.get() + 1))),
            ],
        );
        busy.close_drop_content();
        flood.join().unwrap();
        trickle.join().unwrap();
        assert_eq!(r.stop, StopReason::StopOn);
        assert_eq!(q.get(), 10);
        assert_eq!(r.handled, b.get() + 10);
    });
}

#[test]
fn a_request_dropped_by_overflow_fails_as_receiver_gone() {
    watchdog(TIMEOUT, || {
        let (_env, chain) = bounded3(Overflow::DropNewest);
        for i in 0..3u32 {
            chain.send(i).unwrap();
        }
        let pending = chain.as_mbox().request::<u8, u8>(1);
        assert_eq!(
            pending.wait(Duration::from_secs(5)),
            Err(cohort::RequestError::ReceiverGone)
        );
        assert_eq!(chain.stats().dropped_newest, 1);
    });
}

#[test]
fn select_send_cases_carry_mutable_messages() {
    watchdog(TIMEOUT, || {
        let env = env();
        let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
        let r = select(
            from_all(),
            &mut [
                send_case_mut(&chain, vec![1u8, 2], || {}),
                send_case(&chain, 3u8, || {}),
            ],
        );
        assert_eq!((r.sent, r.stop), (2, StopReason::Closed));
        let got = std::cell::RefCell::new(Vec::new());
        receive(
            from(&chain).no_wait(),
            &mut Handlers::new()
                .on_mut(|v: Vec<u8>| got.borrow_mut().extend(v))
                .on(|n: &u8| got.borrow_mut().push(*n)),
        );
        assert_eq!(*got.borrow(), [1, 2, 3]);
    });
}
