//! Where keys go and what a `.env` may set (DESIGN §18): `tvm run` in a folder with a
//! `.env`, against a server on 127.0.0.1 that records the headers it received. A key is
//! sent only to a base URL set in the same place as the key (the environment, or the
//! `.env`), or to its provider's own; otherwise the run stops with exit 2 naming both
//! places, before any request. A `.env` may lower a bound of the environment or the
//! command line, never raise it; the environment's `TVM_MAX_COST` and
//! `TVM_CONCURRENCY` are read as the flags are.

use crate::support::files::{self, TempDir};
use crate::support::http::{Reply, Request, Server};
use serde_json::{json, Value};
use std::time::Duration;

const SHELL_KEY: &str = "sk-shell-0123456789abcdef";
const DOTENV_KEY: &str = "sk-dotenv-fedcba9876543210";

/// Three LLM calls side by side (a map that states no concurrency), then a fourth.
const SURVEY: &str = r#"<library>
  <task name="survey" type="sequential">
    <inputs><input name="topics" type="string[]">What to look at</input></inputs>
    <steps>
      <task type="map" over="topics" as="topic">
        <task><instructions>Look at {{topic}}.</instructions></task>
      </task>
      <task><instructions>Sum up {{json(output)}}</instructions></task>
    </steps>
  </task>
</library>"#;

/// A model speaking both wire formats, each reply after `delay`.
async fn model(delay: Duration) -> Server {
    Server::start(move |_, r| {
        let usage = json!({"input_tokens": 1, "output_tokens": 1});
        let reply = if r.path.ends_with("/messages") {
            Reply::json(
                200,
                json!({"content": [{"type": "text", "text": "fine"}], "usage": usage}),
            )
        } else {
            Reply::completion("fine", 1, 1)
        };
        reply.after(delay)
    })
    .await
}

/// The key a request carried, in either wire format.
fn sent_key(r: &Request) -> Option<&str> {
    r.header("x-api-key").or_else(|| {
        r.header("authorization")
            .and_then(|a| a.strip_prefix("Bearer "))
    })
}

/// `tvm run` of the survey in `dir` (where its `.env` is) with `env` and `flags`; `{url}`
/// in a value stands for the server's address.
fn survey(dir: &TempDir, url: &str, env: &[(&str, &str)], flags: &[&str]) -> (i32, Value, String) {
    dir.write("survey.xml", SURVEY);
    let mut args = vec!["run", "survey.xml", "--arg", r#"topics=["a","b","c"]"#];
    args.extend(flags);
    let mut cmd = files::tvm(&args);
    cmd.current_dir(dir.path());
    for (k, v) in env {
        cmd.env(k, v.replace("{url}", url));
    }
    let out = cmd.output().expect("run tvm");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let result = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), result, stderr)
}

/// Where a key and a base URL are set, and what becomes of the run: its exit code, a
/// part of its stderr, and the key the server received (`None`: no key; no request at
/// all when the code is 2).
struct Route {
    name: &'static str,
    env: &'static [(&'static str, &'static str)],
    dotenv: &'static str,
    code: i32,
    stderr: &'static str,
    key: Option<&'static str>,
}

const ROUTES: &[Route] = &[
    Route {
        name: "a key of the shell and a base URL of the .env",
        env: &[("OPENAI_API_KEY", SHELL_KEY)],
        dotenv: "# a checkout's settings\nOPENAI_BASE_URL={url}/v1\n",
        code: 2,
        stderr: "OPENAI_API_KEY is set in the environment but OPENAI_BASE_URL in .env:2: tvm sends a key only to a server named in the same place",
        key: None,
    },
    Route {
        name: "a key of the .env and a base URL of the shell",
        env: &[("OPENAI_BASE_URL", "{url}/v1")],
        dotenv: "OPENAI_API_KEY=sk-dotenv-fedcba9876543210\n",
        code: 2,
        stderr: "OPENAI_API_KEY is set in .env:1 but OPENAI_BASE_URL in the environment",
        key: None,
    },
    Route {
        name: "a .env that routes to another provider, whose key is the shell's, at its own URL",
        env: &[
            ("OPENAI_API_KEY", SHELL_KEY),
            ("OPENAI_BASE_URL", "{url}/v1"),
            ("ANTHROPIC_API_KEY", SHELL_KEY),
        ],
        dotenv: "TVM_PROVIDER=anthropic\nANTHROPIC_BASE_URL={url}\n",
        code: 2,
        stderr: "ANTHROPIC_API_KEY is set in the environment but ANTHROPIC_BASE_URL in .env:2",
        key: None,
    },
    Route {
        name: "a .env that routes to another provider whose key and URL are the shell's",
        env: &[
            ("ANTHROPIC_API_KEY", SHELL_KEY),
            ("ANTHROPIC_BASE_URL", "{url}"),
        ],
        dotenv: "TVM_PROVIDER=anthropic\n",
        code: 0,
        stderr: "",
        key: Some(SHELL_KEY),
    },
    Route {
        name: "a key and a base URL both of the .env",
        env: &[],
        dotenv: "OPENAI_API_KEY=sk-dotenv-fedcba9876543210\nOPENAI_BASE_URL={url}/v1\n",
        code: 0,
        stderr: "",
        key: Some(DOTENV_KEY),
    },
    Route {
        name: "a key and a base URL of the shell, and another base URL in the .env",
        env: &[("OPENAI_API_KEY", SHELL_KEY), ("OPENAI_BASE_URL", "{url}/v1")],
        dotenv: "OPENAI_BASE_URL=http://127.0.0.1:9/v1\n",
        code: 0,
        stderr: "",
        key: Some(SHELL_KEY),
    },
    Route {
        name: "a base URL of the .env and no key (a local server)",
        env: &[("ANTHROPIC_API_KEY", SHELL_KEY)],
        dotenv: "OPENAI_BASE_URL={url}/v1\nTVM_PROVIDER=openai\n",
        code: 0,
        stderr: "",
        key: None,
    },
    Route {
        name: "a base URL holding a user name and password",
        env: &[
            ("OPENAI_API_KEY", SHELL_KEY),
            ("OPENAI_BASE_URL", "http://user:pw-in-url@{host}/v1"),
        ],
        dotenv: "",
        code: 2,
        stderr: "openai: the base URL holds a user name or password (`user:secret@host`); tvm sends credentials only in a header, from OPENAI_API_KEY",
        key: None,
    },
];

#[test]
fn a_key_goes_only_to_a_base_url_set_where_the_key_is_and_a_refusal_names_both_places() {
    let rt = files::runtime();
    let server = rt.block_on(model(Duration::ZERO));
    let url = server.url();
    for route in ROUTES {
        let dir = TempDir::new("routes");
        let host = url.trim_start_matches("http://");
        let env: Vec<(&str, String)> = route
            .env
            .iter()
            .map(|(k, v)| (*k, v.replace("{host}", host)))
            .collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        dir.write(".env", route.dotenv.replace("{url}", &url));
        let before = server.hits();
        let (code, result, stderr) = survey(&dir, &url, &env, &[]);
        let name = route.name;
        assert_eq!(code, route.code, "{name}: {stderr}\n{result}");
        assert!(stderr.contains(route.stderr), "{name}: {stderr}");
        for secret in [SHELL_KEY, DOTENV_KEY, "pw-in-url"] {
            assert!(!stderr.contains(secret), "{name}: {stderr}");
        }
        let sent = &server.requests()[before..];
        if code == 2 {
            assert!(sent.is_empty(), "{name}: a refused run sent {}", sent.len());
            continue;
        }
        assert_eq!(sent.len(), 4, "{name}");
        assert!(
            sent.iter().all(|r| sent_key(r) == route.key),
            "{name}: {:?}",
            sent.iter().map(sent_key).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_dotenv_behind_a_link_is_the_dotenv_and_one_others_may_write_is_not_read() {
    let rt = files::runtime();
    let server = rt.block_on(model(Duration::ZERO));
    let url = server.url();
    let elsewhere = TempDir::new("linked-env");
    elsewhere.write("settings", format!("OPENAI_BASE_URL={url}/v1\n"));
    let dir = TempDir::new("link");
    std::os::unix::fs::symlink(elsewhere.path().join("settings"), dir.path().join(".env"))
        .expect("symlink");
    let key = [("OPENAI_API_KEY", SHELL_KEY)];
    let (code, _, stderr) = survey(&dir, &url, &key, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("OPENAI_API_KEY is set in the environment but OPENAI_BASE_URL in .env:1"),
        "{stderr}"
    );
    use std::os::unix::fs::PermissionsExt;
    let open = std::fs::Permissions::from_mode(0o666);
    std::fs::set_permissions(elsewhere.path().join("settings"), open).expect("chmod");
    let (code, _, stderr) = survey(&dir, &url, &key, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr,
        "tvm: error: .env may be written by every user (mode 666), so it is not read; make it yours alone (chmod o-w)\n"
    );
    assert_eq!(server.hits(), 0);
}

/// A server that answers every request with a redirect to `to`.
async fn redirecting(to: String) -> Server {
    Server::start(move |_, r| {
        Reply::json(307, json!({})).header("location", &format!("{to}{}", r.path))
    })
    .await
}

#[test]
fn a_redirect_is_not_followed_so_neither_key_goes_to_another_host() {
    let rt = files::runtime();
    let elsewhere = rt.block_on(model(Duration::ZERO));
    // `localhost`, not 127.0.0.1: another host, to which reqwest would send Anthropic's
    // `x-api-key` on (it drops only `authorization` across hosts).
    let port = elsewhere.url().rsplit(':').next().unwrap_or("").to_string();
    let server = rt.block_on(redirecting(format!("http://localhost:{port}")));
    let url = server.url();
    for (provider, env) in [
        (
            "openai",
            [
                ("OPENAI_API_KEY", SHELL_KEY),
                ("OPENAI_BASE_URL", "{url}/v1"),
            ],
        ),
        (
            "anthropic",
            [
                ("ANTHROPIC_API_KEY", SHELL_KEY),
                ("ANTHROPIC_BASE_URL", "{url}"),
            ],
        ),
    ] {
        let dir = TempDir::new("redirect");
        let (code, result, stderr) = survey(&dir, &url, &env, &["--provider", provider]);
        assert_eq!(code, 1, "{provider}: {stderr}");
        let message = result["notes"]["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains(
                "the server redirects the request to localhost; tvm does not follow redirects"
            ),
            "{provider}: {message}"
        );
        assert!(!result.to_string().contains(SHELL_KEY), "{provider}");
    }
    assert!(server.hits() > 0);
    assert_eq!(elsewhere.hits(), 0, "a redirect was followed");
}

/// A bound from the environment, the `.env` and the command line, and what is in force.
struct Bound {
    name: &'static str,
    env: &'static [(&'static str, &'static str)],
    dotenv: &'static str,
    flags: &'static [&'static str],
    code: i32,
    stderr: &'static str,
    /// Requests the server received; the most it answered at once.
    hits: usize,
    at_once: usize,
}

/// One call's worst case under a budget is about 0.0025 USD (4,096 output tokens of
/// gpt-4o-mini): a budget of 0.000001 sends nothing.
const BOUNDS: &[Bound] = &[
    Bound {
        name: "TVM_MAX_COST of the environment",
        env: &[("TVM_MAX_COST", "0.000001")],
        dotenv: "",
        flags: &[],
        code: 1,
        stderr: "",
        hits: 0,
        at_once: 0,
    },
    Bound {
        name: "TVM_MAX_COST of the environment that is not an amount",
        env: &[("TVM_MAX_COST", "ten")],
        dotenv: "",
        flags: &[],
        code: 2,
        stderr: "tvm: error: TVM_MAX_COST in the environment: the cost limit `ten` is not an amount of USD",
        hits: 0,
        at_once: 0,
    },
    Bound {
        name: "a .env that raises the environment's budget",
        env: &[("TVM_MAX_COST", "0.000001")],
        dotenv: "TVM_MAX_COST=100\n",
        flags: &[],
        code: 1,
        stderr: "tvm: warning: .env:1: TVM_MAX_COST is above the value in force (from the environment), and a .env may only lower it; it is not taken",
        hits: 0,
        at_once: 0,
    },
    Bound {
        name: "a .env that lowers the budget of the command line",
        env: &[],
        dotenv: "TVM_MAX_COST=0.000001\n",
        flags: &["--max-cost", "100"],
        code: 1,
        stderr: "tvm: warning: .env:1: TVM_MAX_COST lowers the value of --max-cost; the lower applies",
        hits: 0,
        at_once: 0,
    },
    Bound {
        name: "a .env's budget that is not an amount",
        env: &[],
        dotenv: "TVM_MAX_COST=sk-not-a-number\n",
        flags: &[],
        code: 2,
        stderr: "tvm: error: TVM_MAX_COST in .env:1 is not a value --max-cost takes",
        hits: 0,
        at_once: 0,
    },
    Bound {
        name: "TVM_CONCURRENCY of the environment",
        env: &[("TVM_CONCURRENCY", "1")],
        dotenv: "",
        flags: &[],
        code: 0,
        stderr: "",
        hits: 4,
        at_once: 1,
    },
    Bound {
        name: "a .env that raises the concurrency past the default",
        env: &[],
        dotenv: "TVM_CONCURRENCY=64\n",
        flags: &["--concurrency", "2"],
        code: 0,
        stderr: "tvm: warning: .env:1: TVM_CONCURRENCY is above the value in force (from --concurrency), and a .env may only lower it",
        hits: 4,
        at_once: 2,
    },
    Bound {
        name: "a .env that lowers the concurrency",
        env: &[],
        dotenv: "TVM_CONCURRENCY=1\n",
        flags: &[],
        code: 0,
        stderr: "",
        hits: 4,
        at_once: 1,
    },
    Bound {
        name: "no bound given",
        env: &[],
        dotenv: "",
        flags: &[],
        code: 0,
        stderr: "",
        hits: 4,
        at_once: 3,
    },
];

#[test]
fn the_environment_sets_the_budget_and_the_concurrency_and_a_dotenv_may_only_lower_them() {
    let rt = files::runtime();
    for bound in BOUNDS {
        // Each run its own server: the most requests answered at once is per run.
        let server = rt.block_on(model(Duration::from_millis(150)));
        let dir = TempDir::new("bounds");
        dir.write(".env", bound.dotenv);
        let mut env = vec![("OPENAI_BASE_URL", "{url}/v1")];
        env.extend_from_slice(bound.env);
        let mut flags = vec!["--provider", "openai"];
        flags.extend_from_slice(bound.flags);
        let (code, result, stderr) = survey(&dir, &server.url(), &env, &flags);
        let name = bound.name;
        assert_eq!(code, bound.code, "{name}: {stderr}\n{result}");
        assert!(stderr.contains(bound.stderr), "{name}: {stderr}");
        assert!(!stderr.contains("sk-not-a-number"), "{name}: {stderr}");
        if code == 1 {
            let text = result.to_string();
            assert!(text.contains(r#""resource":"cost""#), "{name}: {result}");
        }
        assert_eq!(server.hits(), bound.hits, "{name}");
        assert_eq!(server.max_in_flight(), bound.at_once, "{name}");
    }
}

#[test]
fn a_tvm_name_in_the_environment_that_is_no_setting_is_named() {
    let dir = TempDir::new("unread");
    let env = [("TVM_MAX_MEMORY", "1KiB"), ("TVM_PROVIDER", "echo")];
    let (code, _, stderr) = survey(&dir, "", &env, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "tvm: warning: `TVM_MAX_MEMORY` in the environment is not a setting of tvm, so it is not read (the settings: TVM_CACHE, TVM_CONCURRENCY, TVM_JSON_MODE, TVM_MAX_COST, TVM_MODEL, TVM_PROVIDER"
        ),
        "{stderr}"
    );
}
