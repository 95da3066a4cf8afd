//! The benchmark scenarios, one module each, and where their agents run.

pub mod async_interop;
pub mod chains;
pub mod chaos;
pub mod chaos_runtime;
pub mod churn;
pub mod cluster;
pub mod counting_actor;
pub mod fan_out;
pub mod http_load;
pub mod idle_agents;
pub mod idle_cpu;
pub mod latency;
pub mod locality;
pub mod parallel_thread_ring;
pub mod ping_pong;
pub mod producer_consumer;
pub mod remote_flood;
pub mod remote_ping_pong;
pub mod restart;
pub mod self_send;
pub mod skynet;
pub mod soak;
pub mod state_switch;
pub mod thread_ring;
pub mod timers;

use cohort::dispatcher::{Fifo, PoolBindParams};

/// The dispatcher kinds a scenario can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dispatcher {
    /// Every agent on one shared worker thread.
    OneThread,
    /// A worker thread per agent.
    ActiveObj,
    /// One thread for every agent of the scenario (an `active_group` group).
    ActiveGroup,
    /// N workers sharing one FIFO run queue.
    ThreadPool,
    /// N workers with their own run queues, a LIFO slot and stealing.
    WorkStealing,
    /// N workers sharing one FIFO run queue; thread-safe handlers run in parallel
    /// (`adv_thread_pool`; the scenarios' handlers are all exclusive).
    AdvThreadPool,
    /// One thread running agents by priority, strictly ordered (`prio_one_thread`; every
    /// agent at the lowest priority, so before each demand the thread checks that no higher
    /// priority has work).
    PrioStrict,
    /// One thread running agents by priority, quoted round robin (`prio_one_thread`, quota 4
    /// for each priority; every agent at the lowest).
    PrioQuoted,
}

/// Every dispatcher kind, pools with each fifo: where the reliability runs (soak, runtime
/// chaos) spread their agents.
pub fn every_placement() -> Vec<Placement> {
    use Dispatcher::*;
    let mut all: Vec<Placement> = [OneThread, ActiveObj, ActiveGroup, PrioStrict, PrioQuoted]
        .map(Placement::of)
        .into();
    for d in [ThreadPool, WorkStealing, AdvThreadPool] {
        for f in [FifoArg::Cooperation, FifoArg::Individual] {
            all.push(Placement::of(d).fifo(f));
        }
    }
    all
}

/// A pool's fifo, as a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FifoArg {
    /// One queue per cooperation.
    Cooperation,
    /// One queue per agent.
    Individual,
}

/// Where a scenario's agents run: dispatcher kind and its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Args)]
pub struct Placement {
    /// The dispatcher.
    #[arg(long, value_enum, default_value_t = Dispatcher::OneThread)]
    pub dispatcher: Dispatcher,
    /// Worker threads of a pool dispatcher.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Fifo of a pool dispatcher (default: cooperation for thread-pool, individual for
    /// work-stealing).
    #[arg(long, value_enum)]
    pub fifo: Option<FifoArg>,
    /// max_demands_at_once of a pool dispatcher.
    #[arg(long = "max-demands", default_value_t = 4)]
    pub max_demands: usize,
}

impl Placement {
    /// A placement with a pool's defaults.
    pub fn of(dispatcher: Dispatcher) -> Self {
        Self {
            dispatcher,
            threads: 2,
            fifo: None,
            max_demands: 4,
        }
    }

    /// The same with a fifo.
    pub fn fifo(mut self, fifo: FifoArg) -> Self {
        self.fifo = Some(fifo);
        self
    }

    fn is_pool(&self) -> bool {
        matches!(
            self.dispatcher,
            Dispatcher::ThreadPool | Dispatcher::WorkStealing | Dispatcher::AdvThreadPool
        )
    }

    fn effective_fifo(&self) -> FifoArg {
        self.fifo.unwrap_or(match self.dispatcher {
            Dispatcher::WorkStealing => FifoArg::Individual,
            _ => FifoArg::Cooperation,
        })
    }

    /// The placement as the flags that give it (`--dispatcher one-thread ...`), for a step
    /// run in a process of its own.
    pub fn flags(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("--dispatcher", flag_value(self.dispatcher)),
            ("--threads", self.threads.to_string()),
            ("--max-demands", self.max_demands.to_string()),
        ];
        out.extend(self.fifo.map(|f| ("--fifo", flag_value(f))));
        out
    }

    /// The placement in words, as results report it.
    pub fn label(&self) -> String {
        match self.dispatcher {
            Dispatcher::OneThread => "one_thread".into(),
            Dispatcher::ActiveObj => "active_obj".into(),
            Dispatcher::ActiveGroup => "active_group".into(),
            Dispatcher::PrioStrict => "prio_one_thread::strictly_ordered".into(),
            Dispatcher::PrioQuoted => "prio_one_thread::quoted_round_robin".into(),
            Dispatcher::ThreadPool | Dispatcher::WorkStealing | Dispatcher::AdvThreadPool => {
                format!(
                    "{}({} threads, {} fifo, max_demands {})",
                    match self.dispatcher {
                        Dispatcher::ThreadPool => "thread_pool",
                        Dispatcher::WorkStealing => "work_stealing",
                        _ => "adv_thread_pool",
                    },
                    self.threads,
                    match self.effective_fifo() {
                        FifoArg::Cooperation => "cooperation",
                        FifoArg::Individual => "individual",
                    },
                    self.max_demands
                )
            }
        }
    }

    /// The placement as JSON parameters.
    pub fn params(&self) -> serde_json::Value {
        if self.is_pool() {
            serde_json::json!({
                "dispatcher": self.label(),
                "threads": self.threads,
                "fifo": format!("{:?}", self.effective_fifo()).to_lowercase(),
                "max_demands_at_once": self.max_demands,
            })
        } else {
            serde_json::json!({ "dispatcher": self.label() })
        }
    }

    /// Checks the parameters before anything starts.
    pub fn validate(&self) -> Result<(), String> {
        if self.is_pool() && self.threads == 0 {
            return Err("--threads must be at least 1".into());
        }
        if self.is_pool() && self.max_demands == 0 {
            return Err("--max-demands must be at least 1".into());
        }
        Ok(())
    }

    /// Creates the dispatcher in `env` and returns a binder for a cooperation's agents.
    pub fn binder(&self, env: &cohort::Environment) -> Result<cohort::Binder, String> {
        let err = |e: cohort::DispatcherError| e.to_string();
        let pool_params = || {
            let fifo = match self.effective_fifo() {
                FifoArg::Cooperation => Fifo::Cooperation,
                FifoArg::Individual => Fifo::Individual,
            };
            PoolBindParams::new()
                .fifo(fifo)
                .max_demands_at_once(self.max_demands)
        };
        match self.dispatcher {
            Dispatcher::OneThread => Ok(env.default_binder()),
            Dispatcher::ActiveGroup => cohort::ActiveGroupBuilder::new()
                .build(env)
                .map(|d| d.group_binder("workers"))
                .map_err(err),
            Dispatcher::ActiveObj => cohort::ActiveObjBuilder::new()
                .build(env)
                .map(|d| d.binder())
                .map_err(err),
            Dispatcher::ThreadPool => cohort::ThreadPoolBuilder::new()
                .threads(self.threads)
                .build(env)
                .and_then(|d| d.pool_binder(pool_params()))
                .map_err(err),
            Dispatcher::WorkStealing => cohort::WorkStealingBuilder::new()
                .threads(self.threads)
                .build(env)
                .and_then(|d| d.pool_binder(pool_params()))
                .map_err(err),
            Dispatcher::AdvThreadPool => cohort::AdvThreadPoolBuilder::new()
                .threads(self.threads)
                .build(env)
                .and_then(|d| d.pool_binder(pool_params()))
                .map_err(err),
            Dispatcher::PrioStrict | Dispatcher::PrioQuoted => {
                let builder = cohort::PrioOneThreadBuilder::new();
                let builder = if self.dispatcher == Dispatcher::PrioStrict {
                    builder.strictly_ordered()
                } else {
                    builder.quoted_round_robin([4; 8])
                };
                builder
                    .build(env)
                    .map(|d| d.priority_binder(cohort::dispatcher::Priority::P0))
                    .map_err(err)
            }
        }
    }
}

/// How a value of a flag is written on the command line (`OneThread` -> `one-thread`).
pub fn flag_value(v: impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_owned())
        .unwrap_or_default()
}
