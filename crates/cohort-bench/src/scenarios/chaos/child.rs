//! A receiving node in a child process (`cohort-bench chaos-node`), which a phase kills
//! with `kill -9` and restarts, or runs in a network namespace whose veth link it takes
//! down. The child writes a line per message its sink handles to its standard output (one
//! write each, so what it wrote before a kill is still read), and the parent records them.

use super::nodes::{Books, Numbered, SINK, environment_with, node_config, registry};
use cohort::{Agent, Context, DefineError, DeliveryFailure, Mbox};
use cohort_remote::netns::{Host, NetnsError};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The child's `chaos-node` flags.
#[derive(clap::Args, Clone, Debug)]
pub struct NodeArgs {
    /// The node's name.
    #[arg(long)]
    pub name: String,
    /// Where it listens.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
}

/// How many messages the child's node read are settled: handled by the sink or counted as
/// dead letters. A count under a lock with a condition variable, so that the end of the
/// child waits for the last one instead of polling.
#[derive(Default)]
struct Settled {
    count: Mutex<u64>,
    changed: Condvar,
}

impl Settled {
    fn add(&self) {
        *self.count.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.changed.notify_all();
    }

    /// Waits until at least `read()` messages are settled, or `timeout` passed.
    fn wait(&self, read: impl Fn() -> u64, timeout: Duration) {
        let count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .changed
            .wait_timeout_while(count, timeout, |n| *n < read())
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// The child's sink: a line per message.
struct LineSink {
    inbox: Mbox,
    settled: Arc<Settled>,
}

impl Agent for LineSink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |me: &mut Self, m: &Numbered, _: &mut Context<'_, Self>| {
                // Written before it counts as handled: a kill between the two loses a message
                // the parent then counts as lost with the process.
                let _ = writeln!(std::io::stdout().lock(), "H {} {}", m.sender, m.seq);
                me.settled.add();
            },
        )?;
        Ok(())
    }
}

/// The child's main: a node with a sink until standard input closes, then, once its sink
/// handled what the node read (at most 10 s), a graceful shutdown.
pub fn serve(a: &NodeArgs) -> Result<(), String> {
    let settled = Arc::new(Settled::default());
    let s = settled.clone();
    let env = environment_with(move |reason| {
        let _ = writeln!(std::io::stdout().lock(), "D {}", reason.name());
        s.add();
    })?;
    let node = cohort_remote::Node::start(
        &env.environment(),
        node_config(&a.name).listen(a.listen),
        registry(),
    )
    .map_err(|e| format!("node {}: {e}", a.name))?;
    let mut coop = env.environment().new_coop();
    coop.add(LineSink {
        inbox: node.export(SINK),
        settled: settled.clone(),
    });
    env.environment()
        .register_coop(coop)
        .map_err(|e| format!("the sink: {e}"))?;
    let addr = node.local_addr().ok_or("no listening address")?;
    writeln!(std::io::stdout().lock(), "LISTEN {addr}").map_err(|e| e.to_string())?;
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    settled.wait(|| node.stats().messages_in, Duration::from_secs(10));
    node.shutdown();
    env.stop_and_wait();
    Ok(())
}

/// A child node seen from the parent.
pub struct ChildNode {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    reader: Option<JoinHandle<()>>,
    /// Messages it reported handled.
    pub recorded: Arc<AtomicU64>,
    /// Dead letters it reported.
    pub dead: Arc<AtomicU64>,
}

impl ChildNode {
    /// Starts `cohort-bench chaos-node` (behind `prefix`, e.g. `ip netns exec <ns>`), named
    /// `name`, listening on `listen`; its records go to `books` under the receiver `name`.
    pub fn spawn(
        prefix: &[String],
        name: &str,
        listen: &str,
        books: &Arc<Books>,
    ) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let mut child = cmd
            .args(["chaos-node", "--name", name, "--listen", listen])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("could not start the child node: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let first = lines
            .next()
            .and_then(Result::ok)
            .ok_or("the child node printed nothing")?;
        let addr = first
            .strip_prefix("LISTEN ")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("unexpected child line {first:?}"))?;
        let (recorded, dead) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (r, d, b, receiver) = (
            recorded.clone(),
            dead.clone(),
            books.clone(),
            name.to_owned(),
        );
        let reader = std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut f = line.split(' ');
                match (f.next(), f.next(), f.next()) {
                    (Some("H"), Some(s), Some(q)) => {
                        if let (Ok(s), Ok(q)) = (s.parse(), q.parse()) {
                            b.handled(s, &receiver, q);
                            r.fetch_add(1, Ordering::Release);
                        }
                    }
                    (Some("D"), Some(why), None) => {
                        match DeliveryFailure::from_name(why) {
                            Ok(why) => b.dead_letter(why, &format!("{why:?} (child)")),
                            // Still a message not delivered: counted, under the name it came with.
                            Err(e) => b.dead_letter(
                                DeliveryFailure::ReceiverGone,
                                &format!("{} (child, unknown reason)", e.0),
                            ),
                        }
                        d.fetch_add(1, Ordering::Release);
                    }
                    _ => {}
                }
            }
        });
        Ok(Self {
            child,
            addr,
            reader: Some(reader),
            recorded,
            dead,
        })
    }

    /// `kill -9`, then reads what it wrote before dying.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }

    /// Closes its standard input and waits for its graceful end (killed after 30 s).
    pub fn finish(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

impl Drop for ChildNode {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The link-down phases' other host: a network namespace joined to this one by a veth
/// pair; removed when dropped.
pub struct Netns {
    host: Host,
    /// What `tc ... netem` said in the namespace.
    pub netem: String,
}

impl Netns {
    /// Makes the namespace, or says why it cannot (not root, no iproute2, ...).
    pub fn create() -> Result<Self, NetnsError> {
        let id = std::process::id() % 10_000;
        let subnet = (20 + id % 200) as u8;
        let host = Host::joined(
            &format!("chc{id}"),
            [10, 88, subnet, 1].into(),
            [10, 88, subnet, 2].into(),
        )?;
        let netem = match host.namespace().run(&[
            "tc",
            "qdisc",
            "add",
            "dev",
            host.inside_interface(),
            "root",
            "netem",
            "delay",
            "1ms",
        ]) {
            Ok(()) => {
                "netem: available on this kernel (not used: the proxy injects the faults)".into()
            }
            Err(e) => format!(
                "netem: not available on this kernel ({e}); the proxy injects delay, jitter and bandwidth caps instead"
            ),
        };
        Ok(Self { host, netem })
    }

    /// The namespace's address (the child listens there).
    pub fn addr(&self) -> String {
        self.host.addr().to_string()
    }

    /// The prefix that runs a program inside the namespace.
    pub fn prefix(&self) -> Vec<String> {
        self.host
            .namespace()
            .exec_prefix()
            .map(str::to_owned)
            .to_vec()
    }

    /// Takes this side's end of the veth link down or up.
    pub fn link(&self, up: bool) -> Result<(), String> {
        self.host.link(up).map_err(|e| e.to_string())
    }
}
