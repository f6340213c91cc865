//! A scripted HTTP/1.1 server on 127.0.0.1 for provider tests: it records every request
//! and answers each from the test's script (status, headers, body, a delay, or a dropped
//! connection). One request per connection (`connection: close`), so that the number of
//! requests served is exactly the number of attempts the client made; or, started with
//! [`Server::keeping_alive`], connections kept open for the requests after it.

use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the server does with one request.
#[derive(Clone, Debug)]
pub enum Reply {
    Send {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
        /// Waited before anything of the reply is written.
        delay: Duration,
    },
    /// Close the connection after reading the request, answering nothing.
    Drop,
    /// A chunked body that never ends: 64 KiB chunks written as fast as the client
    /// reads them, until it closes the connection.
    Endless { status: u16 },
    /// Read the request and answer nothing, keeping the connection open until the
    /// client closes it: a server restarted gracefully does so on a connection it kept.
    Silent,
}

impl Reply {
    pub fn json(status: u16, body: impl ToString) -> Reply {
        Reply::Send {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    /// An OpenAI chat completion of `content` from gpt-4o-mini that used `input` and
    /// `output` tokens.
    pub fn completion(content: &str, input: u64, output: u64) -> Reply {
        Reply::json(
            200,
            serde_json::json!({"model": "gpt-4o-mini",
                   "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": input, "completion_tokens": output}}),
        )
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Send { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }

    pub fn after(mut self, wait: Duration) -> Reply {
        if let Reply::Send { delay, .. } = &mut self {
            *delay = wait;
        }
        self
    }
}

/// One request as the server read it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// When the whole request had arrived.
    pub at: Instant,
    /// Requests read on its connection before it (0: the connection's first).
    pub on_connection: usize,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The content of the last message of a chat request.
    pub fn prompt(&self) -> String {
        self.json()["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string()
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }
}

/// A provider that takes `per_window` calls in each window of `window`, answering them
/// `ok` after 20 ms, and the others 429 with the time left in the window (in
/// `retry-after-ms`), as per-minute rate limits do.
pub fn windowed(
    per_window: usize,
    window: Duration,
    ok: Reply,
) -> impl Fn(usize, &Request) -> Reply + Send + Sync {
    let state = Mutex::new((Instant::now(), 0usize));
    move |_, _| {
        let mut s = state.lock().unwrap();
        let now = Instant::now();
        if now - s.0 >= window {
            *s = (now, 0);
        }
        if s.1 < per_window {
            s.1 += 1;
            return ok.clone().after(Duration::from_millis(20));
        }
        let left = window.saturating_sub(now - s.0).as_millis().max(1);
        let refused =
            r#"{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}"#;
        Reply::json(429, refused).header("retry-after-ms", &left.to_string())
    }
}

type Responder = dyn Fn(usize, &Request) -> Reply + Send + Sync;

struct State {
    /// Connections stay open after a reply, for the client to send more.
    keep_alive: bool,
    requests: Mutex<Vec<Request>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    responder: Box<Responder>,
}

pub struct Server {
    addr: std::net::SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl Server {
    /// Answers request `i` (0-based, in arrival order) with `responder(i, &request)`.
    pub async fn start(
        responder: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::with(false, responder).await
    }

    /// [`Server::start`], keeping each connection open after a reply (HTTP/1.1
    /// keep-alive), as most servers do.
    pub async fn keeping_alive(
        responder: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::with(true, responder).await
    }

    async fn with(
        keep_alive: bool,
        responder: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(State {
            keep_alive,
            requests: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            responder: Box::new(responder),
        });
        let shared = state.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        Server {
            addr,
            state,
            accept,
        }
    }

    /// Answers the i-th request with `script[i]`, and every later one with the last entry.
    pub async fn scripted(script: Vec<Reply>) -> Server {
        assert!(!script.is_empty(), "a script needs at least one reply");
        Server::start(move |i, _| script[i.min(script.len() - 1)].clone()).await
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn hits(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    /// The requests read once the server has been quiet for 200 ms (at most 10 s): what
    /// a process killed a moment ago sent just before it died may still be in the
    /// server's socket, and is read after the kill.
    pub fn settled_hits(&self) -> usize {
        let mut last = self.hits();
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let now = self.hits();
            if now == last {
                break;
            }
            last = now;
        }
        last
    }

    /// The most requests that were ever being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Counts a request as in flight from its arrival until its reply starts (or the
/// connection is dropped), whichever way the handler exits.
struct InFlight<'a>(&'a State);

impl<'a> InFlight<'a> {
    fn enter(state: &'a State) -> InFlight<'a> {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(state)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve(mut stream: TcpStream, state: Arc<State>) {
    for on_connection in 0.. {
        let Some(mut request) = read_request(&mut stream).await else {
            return;
        };
        request.on_connection = on_connection;
        if !answer(&mut stream, &state, request).await || !state.keep_alive {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Answers one request; whether the connection can carry another.
async fn answer(stream: &mut TcpStream, state: &State, request: Request) -> bool {
    let counted = InFlight::enter(state);
    let index = {
        let mut all = state.requests.lock().unwrap();
        all.push(request.clone());
        all.len() - 1
    };
    let (status, headers, body, delay) = match (state.responder)(index, &request) {
        Reply::Drop => return false,
        Reply::Endless { status } => {
            endless(stream, status).await;
            return false;
        }
        Reply::Silent => {
            // Until the client closes the connection.
            let mut rest = [0u8; 1024];
            while matches!(stream.read(&mut rest).await, Ok(n) if n > 0) {}
            return false;
        }
        Reply::Send {
            status,
            headers,
            body,
            delay,
        } => (status, headers, body, delay),
    };
    tokio::time::sleep(delay).await;
    let connection = if state.keep_alive {
        "keep-alive"
    } else {
        "close"
    };
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\nconnection: {connection}\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    // No longer in flight once the reply starts: the client may read it, end its call
    // and start the next before this task runs again, which must not count as one call
    // more in flight than the client allows.
    drop(counted);
    // The client may have given up (timeouts): a failed write is part of the test.
    stream.write_all(head.as_bytes()).await.is_ok()
        && stream.write_all(body.as_bytes()).await.is_ok()
}

/// Sends `status` and a chunked JSON-looking body until the client goes away.
async fn endless(stream: &mut TcpStream, status: u16) {
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        reason(status)
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut chunk = format!("{:x}\r\n", 64 << 10).into_bytes();
    chunk.extend(std::iter::repeat_n(b' ', 64 << 10));
    chunk.extend_from_slice(b"\r\n");
    // The opening of a JSON object, so that only the size can fail the reply.
    let _ = stream.write_all(b"1\r\n{\r\n").await;
    while stream.write_all(&chunk).await.is_ok() {}
}

/// Reads one request with a `content-length` body; `None` if the client went away.
async fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > 1 << 20 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
        at: Instant::now(),
        on_connection: 0,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Reply",
    }
}
