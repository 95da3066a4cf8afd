//! Sharing one subscription table among the agents of a type that subscribed alike: the
//! thread-local record of the last table each agent type offered, and
//! [`Subscriptions::share`].

use super::Subscriptions;
use super::entry::{COPYABLE, Entry};
use super::table::Table;
use crate::agent::Agent;
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    /// The last table shared on this thread, by agent type (a `Table<Entry<A>>` each): what
    /// the next agent of that type compares its table with. It holds the table until the
    /// thread exits: one block per agent type that shared one here.
    static SHARED: RefCell<HashMap<TypeId, Box<dyn Any>>> = RefCell::new(HashMap::new());
}

impl<A: Agent> Subscriptions<A> {
    /// Shares the table with the agents of this type that subscribed alike before on this
    /// thread, or offers it to the next ones; called once `define` has run. A table with a
    /// handler that captures something, or with extras (a multi-consumer mailbox, a
    /// thread-safe form), stays the agent's own.
    pub(crate) fn share(&mut self) {
        let entries = self.table.as_slice();
        if entries.is_empty()
            || self.table.is_shared()
            || !entries
                .iter()
                .all(|e| e.flags == COPYABLE && e.extras.is_none())
        {
            return;
        }
        let key = TypeId::of::<A>();
        let found = SHARED
            .try_with(|map| {
                let mut map = map.borrow_mut();
                if let Some(last) = map
                    .get(&key)
                    .and_then(|t| t.downcast_ref::<Table<Entry<A>>>())
                    && last.as_slice().len() == entries.len()
                    && last.as_slice().iter().zip(entries).all(|(a, b)| a.same(b))
                {
                    return Some(last.share());
                }
                map.insert(key, Box::new(self.table.share()));
                None
            })
            .ok()
            .flatten();
        if let Some(table) = found {
            self.table = table;
        }
    }
}
