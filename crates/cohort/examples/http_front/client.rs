//! A tiny HTTP/1.1 client over one tokio TCP connection (kept alive): enough to check the
//! service's answers and to load it, without an HTTP client dependency.

use std::io;
use std::net::SocketAddr;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One kept-alive connection.
pub struct Conn {
    stream: BufReader<TcpStream>,
    host: String,
}

/// A response: its status code and body.
pub struct Answer {
    pub status: u16,
    pub body: String,
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

impl Conn {
    /// Connects to `addr`.
    pub async fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream: BufReader::new(stream),
            host: addr.to_string(),
        })
    }

    /// `GET path`.
    pub async fn get(&mut self, path: &str) -> io::Result<Answer> {
        let req = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.host);
        self.exchange(req.as_bytes()).await
    }

    /// `POST path` with a JSON body.
    pub async fn post_json(&mut self, path: &str, json: &str) -> io::Result<Answer> {
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
            self.host,
            json.len()
        );
        self.exchange(req.as_bytes()).await
    }

    /// Writes one request and reads its response (which must carry a `Content-Length`).
    async fn exchange(&mut self, req: &[u8]) -> io::Result<Answer> {
        self.stream.get_mut().write_all(req).await?;
        let mut line = String::new();
        self.stream.read_line(&mut line).await?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("no status line"))?;
        let mut length = None;
        loop {
            line.clear();
            if self.stream.read_line(&mut line).await? == 0 {
                return Err(bad("connection closed in the headers"));
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let mut body = vec![0; length.ok_or_else(|| bad("no Content-Length"))?];
        self.stream.read_exact(&mut body).await?;
        let body = String::from_utf8(body).map_err(|_| bad("body not UTF-8"))?;
        Ok(Answer { status, body })
    }
}
