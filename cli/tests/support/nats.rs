//! A real `nats-server -js` on 127.0.0.1 for one test, with its store in a folder of
//! its own; killed when dropped. `.ci/run` installs the server (Debian's package).

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct NatsServer {
    child: Child,
    port: u16,
    store: PathBuf,
    /// The configuration file it was started with, if any.
    config: Option<PathBuf>,
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

fn spawn(port: u16, store: &std::path::Path, config: Option<&std::path::Path>) -> Child {
    let mut command = Command::new("nats-server");
    if let Some(config) = config {
        command.arg("-c").arg(config);
    }
    let child = command
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start nats-server ({e}): install it (`apt-get install nats-server`, as .ci/run does)")
        });
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "nats-server did not listen on 127.0.0.1:{port}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

impl NatsServer {
    /// Starts a server whose store is `dir/nats`.
    pub fn start(dir: &std::path::Path) -> NatsServer {
        let store = dir.join("nats");
        std::fs::create_dir_all(&store).expect("the server's store");
        let port = free_port();
        NatsServer {
            child: spawn(port, &store, None),
            port,
            store,
            config: None,
        }
    }

    /// Starts a server with `config` (nats-server's configuration format) written to
    /// `dir/nats.conf`; the address, port and store are given on its command line.
    pub fn with_config(dir: &std::path::Path, config: &str) -> NatsServer {
        let store = dir.join("nats");
        std::fs::create_dir_all(&store).expect("the server's store");
        let path = dir.join("nats.conf");
        std::fs::write(&path, config).expect("write the server's configuration");
        let port = free_port();
        NatsServer {
            child: spawn(port, &store, Some(&path)),
            port,
            store,
            config: Some(path),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills the server with SIGKILL and starts it again on the same port and store.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(self.port, &self.store, self.config.as_deref());
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
