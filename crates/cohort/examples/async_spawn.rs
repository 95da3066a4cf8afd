//! An agent that uses a real async client, and asks another agent without blocking.
//!
//! `cargo run -p cohort --example async_spawn`
//!
//! What it shows:
//! - a tokio TCP echo server on loopback (the "real local service"), on the application's
//!   tokio runtime, which the environment is given with `EnvironmentBuilder::tokio_handle`;
//! - `ctx.spawn(future).then(handler)`: the agent runs an async TCP client as a future; the
//!   future never touches the agent, its output comes back as an event handled on the
//!   agent's own thread, where the handler updates the agent's state;
//! - `ctx.request(&mbox, req).timeout(d).then(handler)`: the agent asks another agent (a
//!   word counter) and gets the reply, or the reason there is none, as an event: its
//!   dispatcher thread never waits.

use cohort::{Agent, Context, DefineError, Environment, Mbox, RequestError};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Echoes every byte back, one task per connection.
async fn echo_server(listener: TcpListener) {
    while let Ok((mut socket, _)) = listener.accept().await {
        tokio::spawn(async move {
            let (mut rd, mut wr) = socket.split();
            let _ = tokio::io::copy(&mut rd, &mut wr).await;
        });
    }
}

/// Sends `line` to the echo server and reads it back.
async fn echo(addr: SocketAddr, line: String) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(line.as_bytes()).await?;
    let mut back = vec![0; line.len()];
    stream.read_exact(&mut back).await?;
    Ok(String::from_utf8_lossy(&back).into_owned())
}

/// Counts the words of a line (answers `Context::request` like any request).
struct WordCounter;
impl Agent for WordCounter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_request(|_, line: &String, _| line.split_whitespace().count())?;
        Ok(())
    }
}

/// Sends lines through the echo server, then has each echoed line's words counted.
struct Client {
    server: SocketAddr,
    counter: Mbox,
    lines: Vec<&'static str>,
    echoed: usize,
    words: usize,
}

impl Client {
    fn send_next(&mut self, ctx: &mut Context<'_, Self>) {
        let Some(line) = self.lines.pop() else {
            println!(
                "client: {} lines echoed, {} words in all",
                self.echoed, self.words
            );
            ctx.stop_environment();
            return;
        };
        let server = self.server;
        ctx.spawn(echo(server, line.to_string()))
            .then(Self::on_echo)
            .expect("the client runs");
    }

    /// Runs on the client's own dispatcher thread, with the agent's state.
    fn on_echo(&mut self, back: std::io::Result<String>, ctx: &mut Context<'_, Self>) {
        let back = back.expect("the echo server answers");
        self.echoed += 1;
        println!("client: echoed {back:?}");
        let counter = self.counter.clone();
        ctx.request::<String, usize>(&counter, back)
            .timeout(Duration::from_secs(5))
            .then(Self::on_count)
            .expect("the client runs");
    }

    fn on_count(&mut self, words: Result<usize, RequestError>, ctx: &mut Context<'_, Self>) {
        let words = words.expect("the counter answers");
        println!("client: {words} words");
        self.words += words;
        self.send_next(ctx);
    }
}

impl Agent for Client {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        self.send_next(ctx);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0"))?;
    let server = listener.local_addr()?;
    rt.spawn(echo_server(listener));
    println!("echo server on {server}");

    let env = Environment::builder()
        .tokio_handle(rt.handle().clone())
        .start()?;
    let mut coop = env.new_coop();
    let counter = coop.add(WordCounter).mbox();
    coop.add(Client {
        server,
        counter,
        lines: vec!["the last line", "agents and futures", "hello async world"],
        echoed: 0,
        words: 0,
    });
    env.register_coop(coop)?;
    env.wait();
    println!("done: async_spawn");
    Ok(())
}
