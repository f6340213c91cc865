//! The target of batches spread over workers through NATS (DESIGN §16): with 100 ms
//! model replies, two `tvm worker`s finish a 400-row batch in at most 0.55 × the time
//! one worker takes.
//!
//! Each measurement starts a NATS server of its own (JetStream on, a new store folder,
//! a free port) and publishes 400 distinct rows of a one-task workflow to it with
//! `tvm batch --nats`, the batch's cap on calls in flight over all its workers set to
//! 40 so that it holds back neither one worker nor two. Then it starts, at once, K
//! `tvm worker --provider openai --concurrency 20` and `tvm batch --collect --wait`.
//! Every row is one call to an OpenAI-compatible server on 127.0.0.1 that answers after
//! 100 ms, so one worker needs at least 400 / 20 × 100 ms = 2 s and two 1 s.
//!
//! The time runs from the workers' start until the server holds a result for every row
//! (its status read in-process every 10 ms once the model server has had every call);
//! the time until `--collect --wait` returned (it looks every 250 ms) is shown beside
//! it, and the CPU time of the workers and of the NATS server. Every row must be
//! COMPLETE in the file `--collect` wrote, and the model server must have had exactly
//! 400 calls.
//! K = 1 and K = 2 alternate over the rounds; the figures are the medians.
//!
//! Needs the release `tvm` (`cargo build --release --bin tvm`) and `nats-server` with
//! JetStream (2.9 or later); without either it says so and measures nothing.

use loopback::Loopback;
use serde_json::json;
use std::fmt::Write as _;
use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tv_runtime::nats;
use tv_test_support::{loopback, workloads};

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ROWS: usize = 400;
const DELAY: Duration = Duration::from_millis(100);
/// Each worker's `--concurrency`: rows run at once, and calls in flight.
/// 400 is a whole number of its waves for one worker and for two.
const WORKER_CONCURRENCY: usize = 20;
/// The batch's `--concurrency` when published: its calls in flight over all workers.
const BATCH_CAP: usize = 40;
/// Rounds, each measuring one worker and two (the order alternating).
const ROUNDS: usize = 5;
const TARGET: f64 = 0.55;
/// How often the batch's status is read while it runs.
const POLL: Duration = Duration::from_millis(10);
/// A measurement that takes longer than this has gone wrong.
const GIVE_UP: Duration = Duration::from_secs(60);

const PROGRAM: &str = r#"<task name="answer">
  <inputs><input name="question" type="string">The question</input></inputs>
  <instructions>Answer in one sentence: {{question}}</instructions>
</task>"#;

/// The OpenAI chat-completions reply to every call, sent 100 ms after the request.
const REPLY: &str = r#"{"choices": [{"message": {"role": "assistant", "content": "An answer."}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}"#;

/// `n` distinct rows, each `{"id": ..., "args": {...}}`.
fn rows(n: usize) -> String {
    let mut out = String::with_capacity(n * 96);
    for i in 0..n {
        let question = format!("What does row {i} of the workers benchmark ask about?");
        let _ = writeln!(
            out,
            "{}",
            json!({"id": format!("row-{i}"), "args": {"question": question}})
        );
    }
    out
}

/// `nats-server` on the PATH, else where Debian's package puts it.
fn nats_server_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain(["/usr/sbin", "/usr/local/bin", "/usr/bin"].map(PathBuf::from))
        .map(|dir| dir.join("nats-server"))
        .find(|p| p.is_file())
}

/// A port on 127.0.0.1 free a moment ago.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

/// A NATS server with JetStream, its store in a folder of its own; stopped and its
/// store removed when dropped.
struct NatsServer {
    child: Child,
    url: String,
    store: PathBuf,
}

impl NatsServer {
    fn start(binary: &Path, dir: &Path) -> NatsServer {
        let store = dir.join("store");
        std::fs::create_dir_all(&store).expect("the store folder");
        let port = free_port();
        let log = File::create(dir.join("nats-server.log")).expect("the server's log");
        let child = Command::new(binary)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(&store)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the server's log"))
            .stderr(log)
            .spawn()
            .expect("nats-server starts");
        let mut server = NatsServer {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            store,
        };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "nats-server exited ({status}) before it took connections; its log: {}",
                    std::fs::read_to_string(dir.join("nats-server.log")).unwrap_or_default()
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "nats-server did not take connections on port {port} within 10 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        server
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

/// The CPU time (user and system) process `pid` has used, from `/proc/PID/stat`.
fn cpu_time(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    // The fields after the command's name (which may hold spaces) in parentheses:
    // the state is field 3, utime and stime fields 14 and 15.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(1)
        .max(1) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / per_second)
}

/// A process this benchmark started, killed (if it still runs) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What one measurement saw, each time from the workers' start.
struct Measured {
    /// Until the server held a result for every row.
    finished: Duration,
    /// Until `tvm batch --collect --wait` returned.
    collected: Duration,
    /// Until the model server had its first call, and its last.
    first_call: Duration,
    last_call: Duration,
    /// Rows each worker completed.
    per_worker: Vec<usize>,
    /// CPU time of the workers together, and of the NATS server (publishing included).
    workers_cpu: Duration,
    server_cpu: Duration,
}

struct Bench {
    tvm: PathBuf,
    nats_server: PathBuf,
    bundle: PathBuf,
    inputs: PathBuf,
    dir: PathBuf,
    model: Loopback,
}

impl Bench {
    /// `tvm ARGS...` as this benchmark runs it: its provider pointed at the model server.
    fn tvm(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.tvm);
        c.args(args)
            .env("OPENAI_BASE_URL", format!("{}/v1", self.model.url()))
            .env("OPENAI_API_KEY", "bench")
            .stdin(Stdio::null());
        c
    }

    /// One measurement with `workers` workers; `name` names its folder and batch.
    fn measure(&self, rt: &tokio::runtime::Runtime, name: &str, workers: usize) -> Measured {
        let dir = self.dir.join(name);
        std::fs::create_dir_all(&dir).expect("the measurement's folder");
        let server = NatsServer::start(&self.nats_server, &dir);
        let url = server.url.clone();

        // The batch, published before any worker runs.
        let cap = BATCH_CAP.to_string();
        let bundle = self.bundle.display().to_string();
        let inputs = self.inputs.display().to_string();
        let published = self
            .tvm(&[
                "batch",
                &bundle,
                "--inputs",
                &inputs,
                "--nats",
                &url,
                "--batch",
                name,
                "--provider",
                "openai",
                "--concurrency",
                &cap,
            ])
            .output()
            .expect("tvm batch runs");
        assert!(
            published.status.success(),
            "tvm batch --nats failed to publish: {}",
            String::from_utf8_lossy(&published.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&published.stdout).trim(), name);

        // This process's own look at the server, opened before the clock starts.
        let watcher = rt
            .block_on(nats::Server::connect(&nats::Connect::new(&url)))
            .expect("connect to the NATS server");
        let before = self.model.tally();

        let start = Instant::now();
        let concurrency = WORKER_CONCURRENCY.to_string();
        let logs: Vec<PathBuf> = (0..workers)
            .map(|w| dir.join(format!("worker-{w}.log")))
            .collect();
        let mut running: Vec<Killed> = logs
            .iter()
            .map(|log| {
                let log = File::create(log).expect("a worker's log");
                let child = self
                    .tvm(&[
                        "worker",
                        "--nats",
                        &url,
                        "--provider",
                        "openai",
                        "--concurrency",
                        &concurrency,
                        "--idle-exit",
                        "60",
                        "--verbose",
                    ])
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()
                    .expect("tvm worker starts");
                Killed(child)
            })
            .collect();
        let out = dir.join("results.jsonl");
        let collect_log = dir.join("collect.log");
        let mut collect = Killed(
            self.tvm(&[
                "batch",
                "--nats",
                &url,
                "--batch",
                name,
                "--collect",
                "--wait",
                "--out",
            ])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(File::create(&collect_log).expect("the collect log"))
            .spawn()
            .expect("tvm batch --collect starts"),
        );

        let logs_text = || {
            logs.iter()
                .map(|l| std::fs::read_to_string(l).unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let (mut finished, mut collected, mut first_call, mut last_call) = (None, None, None, None);
        rt.block_on(async {
            while finished.is_none() || collected.is_none() {
                let calls = self.model.tally().since(before).requests;
                if calls > 0 && first_call.is_none() {
                    first_call = Some(start.elapsed());
                }
                if calls >= ROWS as u64 && last_call.is_none() {
                    last_call = Some(start.elapsed());
                }
                // Read (a few JetStream requests) only once every row has had its
                // call: read all along, every 10 ms, it took as much of the server's
                // time as the workers' own requests.
                if finished.is_none() && (last_call.is_some() || collected.is_some()) {
                    let s = nats::status(&watcher, name)
                        .await
                        .expect("the batch's status");
                    if s.finished >= s.rows {
                        finished = Some(start.elapsed());
                    }
                }
                if collected.is_none() {
                    if let Some(status) = collect.0.try_wait().expect("tvm batch --collect") {
                        collected = Some(start.elapsed());
                        assert!(
                            status.success(),
                            "tvm batch --collect --wait failed ({status}): {}",
                            std::fs::read_to_string(&collect_log).unwrap_or_default()
                        );
                    }
                }
                for w in &mut running {
                    if let Ok(Some(status)) = w.0.try_wait() {
                        panic!(
                            "a tvm worker stopped ({status}) before the batch finished: {}",
                            logs_text()
                        );
                    }
                }
                assert!(
                    start.elapsed() < GIVE_UP,
                    "the batch did not finish within {GIVE_UP:?}; the workers said: {}",
                    logs_text()
                );
                tokio::time::sleep(POLL).await;
            }
        });
        let workers_cpu = running.iter().map(|w| cpu_time(w.0.id())).sum();
        let server_cpu = cpu_time(server.child.id());
        drop(running);
        drop(server);

        // Every row COMPLETE, each once, and one call per row.
        let text = std::fs::read_to_string(&out).expect("the collected results");
        let mut seen = vec![false; ROWS];
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("a result line");
            assert_eq!(v["status"], "COMPLETE", "a row did not complete: {line}");
            let index = v["index"].as_u64().expect("the row's index") as usize;
            assert!(!seen[index], "row {index} has two results");
            seen[index] = true;
        }
        let missing = seen.iter().filter(|s| !**s).count();
        assert_eq!(missing, 0, "{missing} rows have no result");
        let calls = self.model.tally().since(before).requests;
        assert_eq!(calls, ROWS as u64, "the model server had {calls} calls");
        let per_worker = logs
            .iter()
            .map(|l| {
                std::fs::read_to_string(l)
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| l.ends_with(": COMPLETE"))
                    .count()
            })
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        let (Some(finished), Some(collected)) = (finished, collected) else {
            unreachable!("the loop ends with both");
        };
        Measured {
            finished,
            collected,
            first_call: first_call.unwrap_or_default(),
            last_call: last_call.unwrap_or_default(),
            per_worker,
            workers_cpu,
            server_cpu,
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

fn secs(d: Duration) -> String {
    workloads::human(d.as_nanos() as f64)
}

fn main() {
    let Some(nats_server) = nats_server_binary() else {
        println!("workers: skipped, no nats-server found (on the PATH or in /usr/sbin); install NATS server 2.9 or later");
        return;
    };
    let Some(tvm) = workloads::tvm_binary() else {
        println!("workers: skipped, no release tvm binary (build it with `cargo build --release --bin tvm`)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("tv-bench-workers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let bundle = dir.join("answer.bin");
    std::fs::write(&bundle, workloads::bundle(PROGRAM).to_bytes()).expect("write the bundle");
    let inputs = dir.join("rows.jsonl");
    std::fs::write(&inputs, rows(ROWS)).expect("write the rows");
    let bench = Bench {
        tvm,
        nats_server,
        bundle,
        inputs,
        dir: dir.clone(),
        model: Loopback::start_after(REPLY, DELAY),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let ideal = |k: usize| DELAY * ROWS.div_ceil(WORKER_CONCURRENCY * k) as u32;
    let mut measured: [Vec<Measured>; 2] = [Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 { [1, 2] } else { [2, 1] };
        for k in order {
            let m = bench.measure(&rt, &format!("r{round}-k{k}"), k);
            println!(
                "workers: round {}, {k} worker{}: all results after {} ({:.2}x the ideal {}), --collect --wait returned after {}; first call after {}, last after {}; rows per worker {:?}; CPU: workers {}, nats-server {}",
                round + 1,
                if k == 1 { "" } else { "s" },
                secs(m.finished),
                m.finished.as_secs_f64() / ideal(k).as_secs_f64(),
                secs(ideal(k)),
                secs(m.collected),
                secs(m.first_call),
                secs(m.last_call),
                m.per_worker,
                secs(m.workers_cpu),
                secs(m.server_cpu),
            );
            measured[k - 1].push(m);
        }
    }

    // The figures.
    let med =
        |k: usize, f: fn(&Measured) -> Duration| median(measured[k - 1].iter().map(f).collect());
    let (one, two) = (med(1, |m| m.finished), med(2, |m| m.finished));
    let (one_c, two_c) = (med(1, |m| m.collected), med(2, |m| m.collected));
    let ratios: Vec<f64> = measured[0]
        .iter()
        .zip(&measured[1])
        .map(|(a, b)| b.finished.as_secs_f64() / a.finished.as_secs_f64())
        .collect();
    let ratio = two.as_secs_f64() / one.as_secs_f64();
    println!(
        "workers: {ROWS} rows x {} ms, each worker at concurrency {WORKER_CONCURRENCY}, medians of {ROUNDS} rounds:",
        DELAY.as_millis()
    );
    for k in [1, 2] {
        println!(
            "workers: {k} worker{} = {} (ideal {}); first call after {}; CPU: workers {}, nats-server {}",
            if k == 1 { "" } else { "s" },
            secs(med(k, |m| m.finished)),
            secs(ideal(k)),
            secs(med(k, |m| m.first_call)),
            secs(med(k, |m| m.workers_cpu)),
            secs(med(k, |m| m.server_cpu)),
        );
    }
    println!(
        "workers: 2 workers / 1 worker = {ratio:.3} (per round {}) (target <= {TARGET}): {}",
        ratios
            .iter()
            .map(|r| format!("{r:.3}"))
            .collect::<Vec<_>>()
            .join(", "),
        if ratio <= TARGET { "PASS" } else { "MISS" }
    );
    println!(
        "workers: until --collect --wait returned (it looks every 250 ms): 1 worker {}, 2 workers {}, ratio {:.3}",
        secs(one_c),
        secs(two_c),
        two_c.as_secs_f64() / one_c.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
