//! The benchmark scenarios, one module each.

pub mod ping_pong;
pub mod skynet;

/// The dispatchers a scenario can run on (those that exist so far).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dispatcher {
    /// Every agent on one shared worker thread.
    OneThread,
    /// A worker thread per agent.
    ActiveObj,
}

impl Dispatcher {
    /// The dispatcher's name in results.
    pub fn label(self) -> &'static str {
        match self {
            Dispatcher::OneThread => "one_thread",
            Dispatcher::ActiveObj => "active_obj",
        }
    }

    /// A binder for a cooperation's agents.
    pub fn binder(self, env: &cohort::Environment) -> Result<cohort::Binder, String> {
        match self {
            Dispatcher::OneThread => Ok(env.default_binder()),
            Dispatcher::ActiveObj => cohort::ActiveObjBuilder::new()
                .build(env)
                .map(|d| d.binder())
                .map_err(|e| e.to_string()),
        }
    }
}
