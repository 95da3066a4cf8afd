//! [`Item`]: a queue item for the unit tests of the queues and their workers.

use super::QueueItem;
use std::fmt::Debug;

/// A queue item that carries `T` (a sequence number, say) and fails its test if a queue
/// drops it without executing it.
#[derive(Debug, PartialEq)]
pub(crate) struct Item<T>(pub(crate) T);

impl<T: Debug + Send + 'static> QueueItem for Item<T> {
    type Early = ();

    fn reject(self) {
        panic!("{self:?} was never executed");
    }
}
