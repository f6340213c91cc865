//! A keep-alive HTTP/1.1 server on 127.0.0.1 that answers every request at once with
//! one fixed JSON reply, for measuring what a client spends around an exchange.
//!
//! The scripted server of [`crate::http`] closes every connection after one reply
//! (so that its request count is the client's attempt count) and runs on tokio; here the
//! point is the opposite: connections stay open as long as the client keeps them, so a
//! client that does not reuse its connection shows in [`Tally::connections`], and the
//! server does as little as it can (a blocking thread per connection, one write per
//! reply) so that its own time does not hide the clients' difference. It counts the
//! bytes of every request as received, head and body apart, and keeps the last request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the server received it: its head (request line and headers, up to and
/// including the blank line) and its body.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub head: String,
    pub body: String,
}

/// What the server received up to some moment; two readings give what came between.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub connections: u64,
    pub requests: u64,
    pub head_bytes: u64,
    pub body_bytes: u64,
}

impl Tally {
    /// What was received after `before`.
    pub fn since(self, before: Tally) -> Tally {
        Tally {
            connections: self.connections - before.connections,
            requests: self.requests - before.requests,
            head_bytes: self.head_bytes - before.head_bytes,
            body_bytes: self.body_bytes - before.body_bytes,
        }
    }

    /// Head and body bytes per request.
    pub fn per_request(self) -> (f64, f64) {
        let n = self.requests.max(1) as f64;
        (self.head_bytes as f64 / n, self.body_bytes as f64 / n)
    }
}

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    requests: AtomicU64,
    head_bytes: AtomicU64,
    body_bytes: AtomicU64,
    last: Mutex<Seen>,
}

pub struct Loopback {
    addr: SocketAddr,
    counts: Arc<Counts>,
}

impl Loopback {
    /// Serves `reply` (a JSON text) with status 200 to every request, on threads of its
    /// own that live as long as the process.
    pub fn start(reply: &str) -> Loopback {
        Loopback::start_after(reply, Duration::ZERO)
    }

    /// [`Loopback::start`], each reply sent `delay` after its request was read, as a
    /// model takes its time (each connection has a thread, so waits overlap).
    pub fn start_after(reply: &str, delay: Duration) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let counts = Arc::new(Counts::default());
        let response: Arc<[u8]> = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{reply}",
            reply.len()
        )
        .into_bytes()
        .into();
        let shared = Arc::clone(&counts);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                let (counts, response) = (Arc::clone(&shared), Arc::clone(&response));
                std::thread::spawn(move || serve(stream, &counts, &response, delay));
            }
        });
        Loopback { addr, counts }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn tally(&self) -> Tally {
        let c = &self.counts;
        Tally {
            connections: c.connections.load(Ordering::SeqCst),
            requests: c.requests.load(Ordering::SeqCst),
            head_bytes: c.head_bytes.load(Ordering::SeqCst),
            body_bytes: c.body_bytes.load(Ordering::SeqCst),
        }
    }

    /// The last request received.
    pub fn last(&self) -> Seen {
        self.counts.last.lock().expect("lock").clone()
    }
}

/// Answers the requests of one connection until the client closes it (or asks to).
fn serve(stream: TcpStream, counts: &Counts, response: &[u8], delay: Duration) {
    // The reply is one write; without this, Nagle's algorithm could hold it back.
    let _ = stream.set_nodelay(true);
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    let mut body = Vec::new();
    loop {
        head.clear();
        loop {
            match reader.read_line(&mut head) {
                Ok(0) | Err(_) => return,
                Ok(_) if head.ends_with("\r\n\r\n") || head == "\r\n" => break,
                Ok(_) => {}
            }
        }
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
            })
        };
        let length: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let close = header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        body.resize(length, 0);
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        counts.requests.fetch_add(1, Ordering::SeqCst);
        counts
            .head_bytes
            .fetch_add(head.len() as u64, Ordering::SeqCst);
        counts.body_bytes.fetch_add(length as u64, Ordering::SeqCst);
        if let Ok(mut last) = counts.last.lock() {
            last.head.clone_from(&head);
            last.body = String::from_utf8_lossy(&body).into_owned();
        }
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        if out.write_all(response).is_err() || close {
            return;
        }
    }
}
