//! Messages in flight during a restart, on a worker thread: each is handled by the old or
//! the new incarnation, or is a counted dead letter with its reason. The old incarnation
//! handles what its queue already held when it panicked (its cooperation drains before
//! `finish`); the new one handles what is published once it has subscribed; in between,
//! publications find no subscriber (or a finishing one) and are dead letters.

use crate::common::{Probe, TIMEOUT, recv, watchdog};
use cohort::supervision::{ChildSpec, SupervisionEvent, Supervisor};
use cohort::{Agent, Context, DefineError, DeliveryFailure, Mbox};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy)]
struct Job(u32);

/// What became of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Handled { incarnation: u64, job: u32 },
    Dead { job: u32, reason: DeliveryFailure },
}

const CRASH_AT: u32 = 50;

struct Worker {
    incarnation: u64,
    inbox: Mbox,
    out: Sender<Outcome>,
}

impl Agent for Worker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |me: &mut Self, j: &Job, _: &mut Context<'_, Self>| {
                let _ = me.out.send(Outcome::Handled {
                    incarnation: me.incarnation,
                    job: j.0,
                });
                if j.0 == CRASH_AT && me.incarnation == 1 {
                    panic!("job {CRASH_AT}");
                }
            },
        )?;
        Ok(())
    }
}

#[test]
fn every_job_sent_during_a_restart_is_handled_once_or_a_counted_dead_letter() {
    watchdog(TIMEOUT, || {
        let (tx, rx) = mpsc::channel::<Outcome>();
        let dead_tx = Mutex::new(tx.clone());
        let env = cohort::Environment::builder()
            .autoshutdown(false)
            .dead_letter_hook(move |d| {
                if let Some(j) = d.message.and_then(|m| m.downcast_ref::<Job>()) {
                    let _ = dead_tx.lock().unwrap().send(Outcome::Dead {
                        job: j.0,
                        reason: d.reason,
                    });
                }
            })
            .start()
            .unwrap();
        let inbox = env.named_mbox("jobs");
        let events = Probe::<SupervisionEvent>::new();
        let directs: Arc<Mutex<Vec<Mbox>>> = Arc::default();
        let (i, d, n) = (inbox.clone(), directs.clone(), Arc::new(AtomicU64::new(0)));
        let sup = Supervisor::builder("sup")
            .events(events.mbox.clone())
            .child(ChildSpec::new("worker", move |coop| {
                let h = coop.add(Worker {
                    incarnation: n.fetch_add(1, Ordering::Relaxed) + 1,
                    inbox: i.clone(),
                    out: tx.clone(),
                });
                d.lock().unwrap().push(h.mbox());
            }))
            .build()
            .unwrap();
        let mut coop = env.new_coop();
        coop.add(sup);
        env.register_coop(coop).unwrap();
        // Started means defined: the first incarnation is subscribed.
        assert!(matches!(
            events.recv("first start"),
            SupervisionEvent::ChildStarted { incarnation: 1, .. }
        ));

        let total = 2 * CRASH_AT;
        for j in 0..total {
            inbox.send(Job(j));
        }
        let mut seen = vec![None; total as usize];
        for _ in 0..total {
            let o = recv(&rx, "the outcome of a job");
            let job = match &o {
                Outcome::Handled { job, .. } | Outcome::Dead { job, .. } => *job,
            };
            assert!(seen[job as usize].is_none(), "job {job} twice: {o:?}");
            seen[job as usize] = Some(o);
        }
        for (j, o) in seen.iter().enumerate() {
            let j = j as u32;
            match o.as_ref().unwrap() {
                // The old incarnation handles what its queue held before it finished.
                Outcome::Handled { incarnation: 1, .. } => {}
                Outcome::Handled { incarnation: 2, .. } => assert!(j > CRASH_AT, "{j}"),
                Outcome::Dead { reason, .. } => assert!(
                    j > CRASH_AT
                        && matches!(
                            reason,
                            DeliveryFailure::NoSubscriber | DeliveryFailure::ReceiverGone
                        ),
                    "job {j}: {reason:?}"
                ),
                other => panic!("job {j}: {other:?}"),
            }
        }
        assert!(matches!(
            seen[CRASH_AT as usize],
            Some(Outcome::Handled { incarnation: 1, .. })
        ));
        let dead = seen
            .iter()
            .filter(|o| matches!(o, Some(Outcome::Dead { .. })))
            .count() as u64;
        assert!(env.dead_letters() >= dead);

        // The restarted incarnation is subscribed once its start is reported: the named
        // mailbox reaches it.
        loop {
            if let SupervisionEvent::ChildStarted { incarnation, .. } = events.recv("restart") {
                assert_eq!(incarnation, 2);
                break;
            }
        }
        inbox.send(Job(total));
        assert_eq!(
            recv(&rx, "a job after the restart"),
            Outcome::Handled {
                incarnation: 2,
                job: total
            }
        );
        // The old incarnation's direct mailbox is gone for good: a counted dead letter.
        let before = env.dead_letters();
        let old = directs.lock().unwrap()[0].clone();
        old.send(Job(total + 1));
        assert_eq!(
            recv(&rx, "the dead letter"),
            Outcome::Dead {
                job: total + 1,
                reason: DeliveryFailure::ReceiverGone
            }
        );
        assert_eq!(env.dead_letters(), before + 1);
        env.stop_and_wait();
        events.shutdown();
    });
}
