//! A ledger that checks, independently of the runtime's own counters, that every message a
//! scenario sent is accounted for exactly once.
//!
//! Senders number their messages per stream, a (sender, receiver) pair ([`Ledger::next`]);
//! receivers record the numbers they handle ([`Ledger::handled`]); whatever the runtime
//! reports as a dead letter is recorded too ([`Ledger::dead_letter_of`] when the dead
//! letter still carries the message, [`Ledger::dead_letter`] when only its reason is known).
//! [`Ledger::check`] then says whether:
//!
//! - every number was handled once, or counted as a dead letter (not handled), or counted
//!   as in doubt ([`DeliveryFailure::InDoubt`]: handled once or not at all, both fine);
//! - no number was handled twice, and none that was never sent was handled;
//! - within each segment of a stream (a segment ends at [`Ledger::interrupted`], e.g. a
//!   connection break) the numbers were handled in increasing order (FIFO per sender).
//!
//! ```
//! use cohort::DeliveryFailure;
//! use cohort::testing::ledger::{Ledger, Violation};
//!
//! let ledger = Ledger::new();
//! let a = ledger.next("s", "r");
//! let b = ledger.next("s", "r");
//! let c = ledger.next("s", "r");
//! ledger.handled("s", "r", a);
//! ledger.dead_letter_of("s", "r", b, DeliveryFailure::NodeDown);
//! ledger.dead_letter(DeliveryFailure::InDoubt); // c: in doubt, not handled
//! let report = ledger.check().unwrap();
//! assert_eq!((report.sent, report.handled, report.in_doubt), (3, 1, 1));
//!
//! ledger.handled("s", "r", a); // a second time
//! assert!(matches!(ledger.check().unwrap_err()[0], Violation::Duplicate { .. }));
//! # let _ = c;
//! ```
//!
//! One thread should send on one stream: the numbers follow the order of [`Ledger::next`]
//! calls, which is the sending order only if one thread makes them. The ledger takes a
//! lock per record; it is a test tool, not for hot paths.

use crate::DeliveryFailure;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// A stream's name: (sender, receiver).
type Key = (String, String);

/// The scenario's records; share it with an `Arc`.
#[derive(Debug, Default)]
pub struct Ledger {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    streams: BTreeMap<Key, Stream>,
    /// Dead letters known only by their reason.
    unattributed: HashMap<DeliveryFailure, u64>,
    /// Violations seen as they happened (duplicates, reorders, unknown numbers).
    seen: Vec<Violation>,
}

#[derive(Debug, Default)]
struct Stream {
    sent: u64,
    /// How many times each number was handled.
    handled: Vec<u32>,
    /// Dead letters that name their number.
    dead: HashMap<u64, DeliveryFailure>,
    /// The last number handled in the current segment.
    last: Option<u64>,
}

/// One way the records break the rule "each message accounted for exactly once, in order".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// More messages are missing (neither handled nor named as dead letters) than dead
    /// letters were counted for them: `missing - counted` messages were lost uncounted.
    Lost {
        /// Messages neither handled nor named by a dead letter, all streams together.
        missing: u64,
        /// Dead letters that named no message, in doubt included.
        counted: u64,
        /// The first few missing numbers, with their stream.
        examples: Vec<(String, String, u64)>,
    },
    /// Fewer messages are missing than were counted as surely undelivered: some message
    /// was both handled and counted as a dead letter.
    CountedButHandled {
        /// Messages neither handled nor named by a dead letter.
        missing: u64,
        /// Dead letters, in doubt excluded, that named no message.
        definite: u64,
    },
    /// A message was handled more than once.
    Duplicate {
        /// Its sender.
        sender: String,
        /// Its receiver.
        receiver: String,
        /// Its number.
        seq: u64,
    },
    /// A message was handled after a later one of the same stream and segment.
    Reordered {
        /// Its sender.
        sender: String,
        /// Its receiver.
        receiver: String,
        /// Its number.
        seq: u64,
        /// The number handled before it.
        after: u64,
    },
    /// A number never handed out by [`Ledger::next`] was handled or named.
    NeverSent {
        /// Its sender.
        sender: String,
        /// Its receiver.
        receiver: String,
        /// Its number.
        seq: u64,
    },
    /// A message named by a dead letter was handled too (a definite dead letter), or named
    /// by two dead letters.
    DeadAndHandled {
        /// Its sender.
        sender: String,
        /// Its receiver.
        receiver: String,
        /// Its number.
        seq: u64,
    },
}

/// What [`Ledger::check`] found when every message is accounted for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerReport {
    /// Messages numbered by senders.
    pub sent: u64,
    /// Messages handled (each once).
    pub handled: u64,
    /// Dead letters by reason, in doubt excluded (named and unnamed together).
    pub dead: BTreeMap<String, u64>,
    /// Dead letters counted as in doubt.
    pub in_doubt: u64,
    /// How many of the in-doubt messages were handled after all (the rest were not).
    pub in_doubt_handled: u64,
    /// Streams (sender, receiver pairs).
    pub streams: usize,
}

impl Ledger {
    /// An empty ledger.
    ///
    /// ```
    /// let ledger = cohort::testing::ledger::Ledger::new();
    /// assert_eq!(ledger.check().unwrap().sent, 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Numbers the next message from `sender` to `receiver` (0, 1, 2, ... per stream);
    /// call it just before sending the message that carries the number.
    ///
    /// ```
    /// let ledger = cohort::testing::ledger::Ledger::new();
    /// assert_eq!(ledger.next("a", "b"), 0);
    /// assert_eq!(ledger.next("a", "b"), 1);
    /// assert_eq!(ledger.next("a", "c"), 0);
    /// ```
    pub fn next(&self, sender: &str, receiver: &str) -> u64 {
        self.with(|i| {
            let s = i.stream(sender, receiver);
            s.sent += 1;
            s.sent - 1
        })
    }

    /// Records that `receiver` handled message `seq` from `sender`.
    ///
    /// ```
    /// let ledger = cohort::testing::ledger::Ledger::new();
    /// let n = ledger.next("a", "b");
    /// ledger.handled("a", "b", n);
    /// assert_eq!(ledger.check().unwrap().handled, 1);
    /// ```
    pub fn handled(&self, sender: &str, receiver: &str, seq: u64) {
        self.with(|i| {
            let s = i.stream(sender, receiver);
            let (sender, receiver) = (sender.to_owned(), receiver.to_owned());
            let violation = if seq >= s.sent {
                Some(Violation::NeverSent {
                    sender,
                    receiver,
                    seq,
                })
            } else {
                let idx = seq as usize;
                if s.handled.len() <= idx {
                    s.handled.resize(idx + 1, 0);
                }
                s.handled[idx] += 1;
                let after = s.last.filter(|&l| l >= seq);
                s.last = Some(seq);
                if s.handled[idx] > 1 {
                    Some(Violation::Duplicate {
                        sender,
                        receiver,
                        seq,
                    })
                } else {
                    after.map(|after| Violation::Reordered {
                        sender,
                        receiver,
                        seq,
                        after,
                    })
                }
            };
            i.seen.extend(violation);
        })
    }

    /// Records a dead letter that names its message (e.g. found by downcasting the
    /// dead-letter hook's `message`).
    ///
    /// ```
    /// use cohort::DeliveryFailure;
    /// let ledger = cohort::testing::ledger::Ledger::new();
    /// let n = ledger.next("a", "b");
    /// ledger.dead_letter_of("a", "b", n, DeliveryFailure::NodeDown);
    /// assert_eq!(ledger.check().unwrap().dead["NodeDown"], 1);
    /// ```
    pub fn dead_letter_of(&self, sender: &str, receiver: &str, seq: u64, reason: DeliveryFailure) {
        self.with(|i| {
            let s = i.stream(sender, receiver);
            let bad = seq >= s.sent || s.dead.insert(seq, reason).is_some();
            if bad {
                i.seen.push(Violation::DeadAndHandled {
                    sender: sender.into(),
                    receiver: receiver.into(),
                    seq,
                });
            }
        })
    }

    /// Records a dead letter known only by its reason (the runtime counted it but no longer
    /// has the message, as for [`DeliveryFailure::InDoubt`]).
    ///
    /// ```
    /// use cohort::DeliveryFailure;
    /// let ledger = cohort::testing::ledger::Ledger::new();
    /// ledger.next("a", "b");
    /// ledger.dead_letter(DeliveryFailure::InDoubt);
    /// assert_eq!(ledger.check().unwrap().in_doubt, 1);
    /// ```
    pub fn dead_letter(&self, reason: DeliveryFailure) {
        self.with(|i| *i.unattributed.entry(reason).or_default() += 1);
    }

    /// Starts a new segment of the stream: numbers handled after this call are not
    /// compared with those before it (a connection break may reorder across it).
    ///
    /// ```
    /// let ledger = cohort::testing::ledger::Ledger::new();
    /// let (a, b) = (ledger.next("s", "r"), ledger.next("s", "r"));
    /// ledger.handled("s", "r", b);
    /// ledger.interrupted("s", "r");
    /// ledger.handled("s", "r", a);
    /// assert!(ledger.check().is_ok());
    /// ```
    pub fn interrupted(&self, sender: &str, receiver: &str) {
        self.with(|i| i.stream(sender, receiver).last = None);
    }

    /// Checks the records: a report when every message is accounted for exactly once and
    /// in order, else every violation found.
    ///
    /// ```
    /// let ledger = cohort::testing::ledger::Ledger::new();
    /// ledger.next("a", "b");
    /// assert!(ledger.check().is_err()); // neither handled nor counted
    /// ```
    pub fn check(&self) -> Result<LedgerReport, Vec<Violation>> {
        self.with(|i| {
            let mut violations = i.seen.clone();
            let mut report = LedgerReport {
                streams: i.streams.len(),
                ..LedgerReport::default()
            };
            let mut missing = 0u64;
            let mut examples = Vec::new();
            for ((sender, receiver), s) in &i.streams {
                report.sent += s.sent;
                for seq in 0..s.sent {
                    let times = s.handled.get(seq as usize).copied().unwrap_or(0);
                    report.handled += (times > 0) as u64;
                    match s.dead.get(&seq) {
                        Some(DeliveryFailure::InDoubt) => {
                            report.in_doubt += 1;
                            report.in_doubt_handled += (times > 0) as u64;
                        }
                        Some(reason) => {
                            *report.dead.entry(format!("{reason:?}")).or_default() += 1;
                            if times > 0 {
                                violations.push(Violation::DeadAndHandled {
                                    sender: sender.clone(),
                                    receiver: receiver.clone(),
                                    seq,
                                });
                            }
                        }
                        None if times == 0 => {
                            missing += 1;
                            if examples.len() < 8 {
                                examples.push((sender.clone(), receiver.clone(), seq));
                            }
                        }
                        None => {}
                    }
                }
            }
            let in_doubt = i
                .unattributed
                .get(&DeliveryFailure::InDoubt)
                .copied()
                .unwrap_or(0);
            let definite: u64 = i.unattributed.values().sum::<u64>() - in_doubt;
            for (reason, n) in &i.unattributed {
                if *reason != DeliveryFailure::InDoubt {
                    *report.dead.entry(format!("{reason:?}")).or_default() += n;
                }
            }
            report.in_doubt += in_doubt;
            // Unnamed in-doubt messages that are not missing were handled.
            let unnamed_doubt_lost = missing.saturating_sub(definite).min(in_doubt);
            report.in_doubt_handled += in_doubt - unnamed_doubt_lost;
            if missing > definite + in_doubt {
                violations.push(Violation::Lost {
                    missing,
                    counted: definite + in_doubt,
                    examples,
                });
            } else if missing < definite {
                violations.push(Violation::CountedButHandled { missing, definite });
            }
            if violations.is_empty() {
                Ok(report)
            } else {
                Err(violations)
            }
        })
    }
}

impl Inner {
    fn stream(&mut self, sender: &str, receiver: &str) -> &mut Stream {
        let key = (sender.to_owned(), receiver.to_owned());
        self.streams.entry(key).or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three(l: &Ledger) -> [u64; 3] {
        [l.next("s", "r"), l.next("s", "r"), l.next("s", "r")]
    }

    #[test]
    fn everything_handled_once_in_order_passes() {
        let l = Ledger::new();
        for n in three(&l) {
            l.handled("s", "r", n);
        }
        let r = l.check().unwrap();
        assert_eq!((r.sent, r.handled, r.streams), (3, 3, 1));
    }

    #[test]
    fn a_loss_is_caught() {
        let l = Ledger::new();
        let [a, _, c] = three(&l);
        l.handled("s", "r", a);
        l.handled("s", "r", c);
        assert_eq!(
            l.check().unwrap_err(),
            vec![Violation::Lost {
                missing: 1,
                counted: 0,
                examples: vec![("s".into(), "r".into(), 1)]
            }]
        );
        // Counted, it is accounted for.
        l.dead_letter(DeliveryFailure::NodeDown);
        assert_eq!(l.check().unwrap().dead["NodeDown"], 1);
    }

    #[test]
    fn a_duplicate_is_caught() {
        let l = Ledger::new();
        let [a, b, c] = three(&l);
        for n in [a, b, b, c] {
            l.handled("s", "r", n);
        }
        assert_eq!(
            l.check().unwrap_err(),
            vec![Violation::Duplicate {
                sender: "s".into(),
                receiver: "r".into(),
                seq: 1
            }]
        );
    }

    #[test]
    fn a_reorder_is_caught_within_a_segment_only() {
        let l = Ledger::new();
        let [a, b, c] = three(&l);
        for n in [a, c, b] {
            l.handled("s", "r", n);
        }
        assert_eq!(
            l.check().unwrap_err(),
            vec![Violation::Reordered {
                sender: "s".into(),
                receiver: "r".into(),
                seq: 1,
                after: 2
            }]
        );
        let l = Ledger::new();
        let [a, b, c] = three(&l);
        l.handled("s", "r", a);
        l.handled("s", "r", c);
        l.interrupted("s", "r");
        l.handled("s", "r", b);
        assert!(l.check().is_ok());
    }

    #[test]
    fn in_doubt_is_accounted_handled_once_or_not_at_all() {
        let l = Ledger::new();
        let [a, b, c] = three(&l);
        l.handled("s", "r", a);
        l.handled("s", "r", b);
        // b and c in doubt: b was handled, c was not.
        l.dead_letter(DeliveryFailure::InDoubt);
        l.dead_letter(DeliveryFailure::InDoubt);
        let r = l.check().unwrap();
        assert_eq!((r.in_doubt, r.in_doubt_handled), (2, 1));
        // Named in-doubt messages too; handled twice is still a duplicate.
        l.dead_letter_of("s", "r", c, DeliveryFailure::InDoubt);
        l.handled("s", "r", b);
        assert!(matches!(
            l.check().unwrap_err()[0],
            Violation::Duplicate { seq: 1, .. }
        ));
    }

    #[test]
    fn a_message_both_handled_and_counted_dead_is_caught() {
        let l = Ledger::new();
        let [a, b, _] = three(&l);
        l.handled("s", "r", a);
        l.handled("s", "r", b);
        l.dead_letter_of("s", "r", a, DeliveryFailure::NodeDown);
        l.dead_letter(DeliveryFailure::NodeDown);
        l.dead_letter(DeliveryFailure::NodeDown);
        let v = l.check().unwrap_err();
        assert!(v.contains(&Violation::DeadAndHandled {
            sender: "s".into(),
            receiver: "r".into(),
            seq: 0
        }));
        assert!(v.contains(&Violation::CountedButHandled {
            missing: 1,
            definite: 2
        }));
    }

    #[test]
    fn a_number_never_sent_is_caught() {
        let l = Ledger::new();
        l.handled("s", "r", 5);
        assert!(matches!(
            l.check().unwrap_err()[0],
            Violation::NeverSent { seq: 5, .. }
        ));
    }
}
