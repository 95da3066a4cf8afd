//! [`CatchUnwind`]: a future whose panic becomes its output, so that the agent that spawned
//! it handles the panic with its own panic reaction.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Polls `inner`, catching a panic.
pub(crate) struct CatchUnwind<F> {
    pub(crate) inner: F,
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `inner` is structurally pinned: never moved out of `self`.
        let inner = unsafe { self.map_unchecked_mut(|s| &mut s.inner) };
        // A panicking future is never polled again: what it left half-done is not seen.
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}
