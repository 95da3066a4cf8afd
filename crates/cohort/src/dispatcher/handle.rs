//! Handles to dispatchers: the generic [`DispatcherHandle`], and the typed handle of each
//! dispatcher that has binders of its own (made by [`typed_handle!`]), so that a binder a
//! dispatcher would ignore does not compile.

use super::{BindParams, Binder, DispatcherCore};
use crate::runtime::env::EnvId;
use std::fmt;
use std::sync::Arc;

/// A handle to any dispatcher: gives binders with default parameters, shuts it down. The
/// builders of dispatchers with binders of their own return a typed handle instead
/// ([`ActiveGroupHandle`](super::ActiveGroupHandle),
/// [`PrioOneThreadHandle`](super::PrioOneThreadHandle), the pool handles), which converts
/// into this one with `into()`.
///
/// ```
/// let env = cohort::Environment::builder().start().unwrap();
/// let disp = cohort::OneThreadBuilder::new().name("io").build(&env).unwrap();
/// assert_eq!(disp.name(), "io");
/// let binder = disp.binder();
/// assert_eq!(binder.dispatcher_name(), "io");
/// ```
///
/// A binder that a dispatcher would ignore does not compile: a pool has no groups.
///
/// ```compile_fail
/// let env = cohort::Environment::builder().start().unwrap();
/// let pool = cohort::ThreadPoolBuilder::new().threads(1).build(&env).unwrap();
/// let binder = pool.group_binder("network");
/// ```
#[derive(Clone)]
pub struct DispatcherHandle {
    core: Arc<dyn DispatcherCore>,
    /// The environment the dispatcher belongs to.
    env: EnvId,
}

impl DispatcherHandle {
    pub(crate) fn new(core: Arc<dyn DispatcherCore>, env: EnvId) -> Self {
        Self { core, env }
    }

    /// A binder for agents of this dispatcher with binding parameters `params`.
    pub(crate) fn binder_with(&self, params: BindParams) -> Binder {
        Binder::new(self.core.clone(), params, self.env)
    }

    /// A binder for agents of this dispatcher, with its default binding parameters.
    pub fn binder(&self) -> Binder {
        self.binder_with(BindParams::Default)
    }

    /// The dispatcher's name.
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// Refuses new bindings from now on ([`BindError::DispatcherShutDown`]); its threads exit
    /// once the agents bound to it are gone, and are joined when the environment stops.
    ///
    /// [`BindError::DispatcherShutDown`]: crate::BindError::DispatcherShutDown
    pub fn shutdown(&self) {
        self.core.shutdown()
    }
}

impl fmt::Debug for DispatcherHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DispatcherHandle")
            .field("name", &self.core.name())
            .finish()
    }
}

/// Declares `$name`, the typed handle of a dispatcher: the generic handle's `binder`, `name`
/// and `shutdown`, and a conversion into [`DispatcherHandle`] for code that stores any
/// dispatcher. The dispatcher's own binders go in an `impl` block next to it.
macro_rules! typed_handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name(pub(crate) crate::dispatcher::DispatcherHandle);

        impl $name {
            /// A binder for agents of this dispatcher, with its default binding parameters.
            pub fn binder(&self) -> crate::dispatcher::Binder {
                self.0.binder()
            }

            /// The dispatcher's name.
            pub fn name(&self) -> &str {
                self.0.name()
            }

            /// Refuses new bindings from now on
            /// ([`BindError::DispatcherShutDown`](crate::BindError::DispatcherShutDown)); its
            /// threads exit once the agents bound to it are gone, and are joined when the
            /// environment stops.
            pub fn shutdown(&self) {
                self.0.shutdown()
            }

            /// The generic handle of this dispatcher.
            pub fn as_dispatcher(&self) -> &crate::dispatcher::DispatcherHandle {
                &self.0
            }
        }

        impl From<$name> for crate::dispatcher::DispatcherHandle {
            fn from(h: $name) -> Self {
                h.0
            }
        }
    };
}
pub(crate) use typed_handle;
