//! What the runtime chaos sends and who receives it: numbered messages checked by the ledger,
//! delayed messages checked by a book of their own (a cancelled timer sends nothing, which a
//! ledger cannot tell from a loss), and the receiving agent.

use cohort::testing::ledger::Ledger;
use cohort::{
    Agent, AnyMessage, Context, CustomMbox, DeadLetter, DefineError, Mbox, MessageLimits,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A handler of a fragile receiver panics on every message whose number is one less than a
/// multiple of this.
pub const PANIC_EVERY: u64 = 61;

/// A stream's name in the ledger: (sender, receiver).
pub type StreamKey = Arc<(String, String)>;

/// A numbered message of one ledger stream.
pub struct Num {
    pub key: StreamKey,
    pub seq: u64,
}

/// What became of one delayed message.
#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    /// Its timer sent it (through the [`Tap`]).
    fired: u8,
    handled: u8,
    dead: u8,
    /// The message value was dropped (it must be, exactly once, by the end).
    dropped: u8,
}

/// The fate of every delayed message of a round.
#[derive(Default)]
pub struct TimerBook {
    slots: Mutex<Vec<Slot>>,
    /// Dead letters of a delayed message that no longer carried it.
    unnamed_dead: AtomicU64,
}

/// The delayed messages' totals, and what broke the rule "sent by its timer means handled or
/// counted once; not sent means neither; dropped once".
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TimerTally {
    pub scheduled: u64,
    pub fired: u64,
    pub handled: u64,
    pub dead: u64,
    /// Fired and neither handled nor counted (beyond the dead letters that named nothing).
    pub lost: u64,
    /// Handled or counted more than once, or handled without being fired.
    pub duplicates: u64,
    /// Never dropped (leaked) or dropped twice.
    pub bad_drops: u64,
}

impl TimerBook {
    /// A new delayed message's number.
    pub fn open(&self) -> u32 {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        s.push(Slot::default());
        (s.len() - 1) as u32
    }

    fn mark(&self, id: u32, f: impl FnOnce(&mut Slot)) {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = s.get_mut(id as usize) {
            f(slot);
        }
    }

    /// Adds up the round, once everything is dropped.
    pub fn tally(&self) -> TimerTally {
        let s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let mut t = TimerTally {
            scheduled: s.len() as u64,
            ..TimerTally::default()
        };
        let mut missing = 0u64;
        for x in s.iter() {
            t.fired += u64::from(x.fired.min(1));
            t.handled += u64::from(x.handled);
            t.dead += u64::from(x.dead);
            let outcomes = x.handled + x.dead;
            if outcomes > 1 || x.fired > 1 || x.handled > x.fired {
                t.duplicates += 1;
            } else if x.fired == 1 && outcomes == 0 {
                missing += 1;
            }
            if x.dropped != 1 {
                t.bad_drops += 1;
            }
        }
        t.lost = missing.saturating_sub(self.unnamed_dead.load(Ordering::Relaxed));
        t
    }
}

/// A delayed message; its drop is recorded, so a message the runtime leaks shows.
pub struct Timed {
    pub id: u32,
    pub book: Arc<TimerBook>,
}

impl Drop for Timed {
    fn drop(&mut self) {
        self.book.mark(self.id, |s| s.dropped += 1);
    }
}

/// The mailbox a timer sends to: records that the timer fired, then passes the message on to
/// the receiver (so a cancel that won the race is told apart from a loss).
pub struct Tap {
    pub to: Mbox,
    pub book: Arc<TimerBook>,
}

impl CustomMbox for Tap {
    fn deliver(&self, msg: AnyMessage) {
        if let Some(t) = msg.downcast_ref::<Timed>() {
            self.book.mark(t.id, |s| s.fired += 1);
        }
        // An immutable message to a direct mailbox is never refused here; were it refused,
        // the tally would show it fired and never accounted for.
        let _ = msg.forward(&self.to);
    }
}

/// Records a dead letter of a chaos message in the ledger or the timer book.
pub fn record_dead_letter(ledger: &Ledger, book: &TimerBook, d: &DeadLetter<'_>) {
    match d.message {
        Some(m) => {
            if let Some(n) = m.downcast_ref::<Num>() {
                ledger.dead_letter_of(&n.key.0, &n.key.1, n.seq, d.reason);
            } else if let Some(t) = m.downcast_ref::<Timed>() {
                book.mark(t.id, |s| s.dead += 1);
            }
        }
        None if d.message_type == std::any::type_name::<Num>() => ledger.dead_letter(d.reason),
        None if d.message_type == std::any::type_name::<Timed>() => {
            book.unnamed_dead.fetch_add(1, Ordering::Relaxed);
        }
        None => {}
    }
}

/// Records every message it handles; a fragile one panics now and then (after recording:
/// the message was handled), and some have a small message limit that overflows.
pub struct Receiver {
    pub ledger: Arc<Ledger>,
    pub book: Arc<TimerBook>,
    pub fragile: bool,
    pub limit: Option<usize>,
    /// A named mailbox it also takes numbered messages from (a supervised receiver).
    pub named: Option<Mbox>,
    /// Messages handled on its dispatcher kind.
    pub handled: Arc<AtomicU64>,
}

impl Receiver {
    fn on_num(&mut self, n: &Num, _: &mut Context<'_, Self>) {
        self.ledger.handled(&n.key.0, &n.key.1, n.seq);
        self.handled.fetch_add(1, Ordering::Relaxed);
        if self.fragile && n.seq % PANIC_EVERY == PANIC_EVERY - 1 {
            panic!("chaos-runtime: a handler panics on purpose");
        }
    }

    fn on_timed(&mut self, t: &Timed, _: &mut Context<'_, Self>) {
        self.book.mark(t.id, |s| s.handled += 1);
        self.handled.fetch_add(1, Ordering::Relaxed);
    }
}

impl Agent for Receiver {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if let Some(max) = self.limit {
            ctx.set_message_limits(MessageLimits::new().drop::<Num>(max))?;
        }
        ctx.on(Self::on_num)?;
        ctx.on(Self::on_timed)?;
        if let Some(named) = self.named.clone() {
            ctx.subscribe(&named, Self::on_num)?;
        }
        Ok(())
    }
}
