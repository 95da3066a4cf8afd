//! Pieces the dispatchers share: the worker loop of a dedicated thread, how an idle worker
//! spins, the bound-agent count, the setters of thread builders.

pub(crate) mod bound_count;
#[cfg(all(test, cohort_loom))]
mod loom_model;
pub(crate) mod spin;
pub(crate) mod worker;

/// What a worker keeps only while it is busy (the subscriber tables of the multi-consumer
/// mailboxes it sent to) goes before it parks and as it exits, and so do the queues' pooled
/// blocks: kept only while messages flow, so that they do not hold the heap's top after a
/// burst.
#[inline]
pub(crate) fn release_thread_caches() {
    #[cfg(not(cohort_loom))]
    {
        crate::mailbox::multi_consumer::release_thread_tables();
        crate::queue::release_pooled_blocks();
    }
}

/// The `new`, `name` and `worker_spin` methods of a builder of single-queue-per-thread
/// dispatchers (fields `name` and `worker_spin`); `$default` is the default name.
macro_rules! thread_builder_setters {
    ($default:literal) => {
        /// Default parameters.
        pub fn new() -> Self {
            Self::default()
        }

        #[doc = concat!("The dispatcher's name (its threads are named after it). Default: `\"", $default, "\"`.")]
        pub fn name(mut self, name: impl Into<String>) -> Self {
            self.name = name.into();
            self
        }

        /// How an idle worker thread waits before it parks: a [`WorkerSpin`](crate::WorkerSpin),
        /// or a `Duration` to spin exactly that long. Default: [`WorkerSpin::default`](crate::WorkerSpin::default),
        /// adaptive up to [`defaults::WORKER_SPIN`](crate::defaults::WORKER_SPIN). Checked by
        /// `build` ([`DispatcherError::InvalidParameter`](crate::DispatcherError::InvalidParameter)).
        pub fn worker_spin(mut self, spin: impl Into<crate::WorkerSpin>) -> Self {
            self.worker_spin = spin.into();
            self
        }
    };
}
pub(crate) use thread_builder_setters;
