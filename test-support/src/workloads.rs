//! Workloads shared by the benchmarks: every program is generated here, deterministically,
//! so that no large file is checked in. Also small helpers to compile a program, read
//! criterion's medians back and read this process's memory figures.

use std::fmt::Write as _;
use std::path::PathBuf;
use tv_vm::bundle::{Bundle, Verified};
use tv_vm::host::{Host, HostReply, HostRequest, LlmReply, ScriptReply};
use tv_vm::limits::Limits;

/// Templates in the generated library of the compile and memory benchmarks.
pub const LIBRARY_TEMPLATES: usize = 10_000;

/// A `<library>` of `n` function templates, each about 700 bytes: typed parameters, an
/// output format, and inline calls to earlier templates. Templates `0..100` are leaves;
/// every later one calls its predecessor (chains restart every 50 templates, so no call
/// chain is deeper than 50) and one leaf, the second call through a built-in.
pub fn function_library(n: usize) -> String {
    let mut out = String::with_capacity(n * 720 + 64);
    out.push_str("<library>\n");
    for i in 0..n {
        let calls = if i < 100 {
            String::new()
        } else {
            let mut calls = String::new();
            if i % 50 != 0 {
                let _ = writeln!(
                    calls,
                    "Earlier finding: {{{{fn_{:05}(topic, detail, count)}}}}",
                    i - 1
                );
            }
            let _ = writeln!(
                calls,
                "Baseline: {{{{fn_{:05}(upper(topic), \"fixed detail\", {})}}}}",
                (i * 7) % 100,
                i % 9 + 1
            );
            calls
        };
        let _ = write!(
            out,
            r#"  <template name="fn_{i:05}" params="topic:string,detail:string,count:number" returns="object">
    <task>
      <description>Generated function {i} of the benchmark library</description>
      <instructions>Analyse {{{{topic}}}} with the detail {{{{detail}}}} and report at most {{{{count}}}} items.
{calls}Answer with a compact JSON object with the keys summary, risks and next_steps; keep every
value short and factual, and never repeat the question. This sentence pads the template to
the size of a realistic library entry with instructions written by a person.</instructions>
      <output_format type="json" schema="object"/>
    </task>
  </template>
"#
        );
    }
    out.push_str("</library>\n");
    out
}

/// A `<library>` of as many one-line templates as fit in about `bytes` bytes (about 100
/// each): the densest valid library, the most templates, and so the most syntax tree,
/// per byte of XML.
pub fn dense_library(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 128);
    out.push_str("<library>\n");
    let mut i = 0;
    while out.len() < bytes {
        let _ = writeln!(
            out,
            r#"<template name="t{i}" params="x"><task><instructions>Say {{{{x}}}}</instructions></task></template>"#
        );
        i += 1;
    }
    out.push_str("</library>\n");
    out
}

/// A sequential task named `steps` with `n` atomic steps.
pub fn sequence(n: usize) -> String {
    let mut out = String::with_capacity(n * 64 + 128);
    out.push_str("<task name=\"steps\" type=\"sequential\"><steps>\n");
    for i in 0..n {
        let _ = writeln!(out, "  <task><instructions>step {i}</instructions></task>");
    }
    out.push_str("</steps></task>\n");
    out
}

/// [`sequence`] with `<accumulate_data>false</accumulate_data>`: no step is sent the
/// results of the steps before it.
pub fn sequence_without_accumulation(n: usize) -> String {
    sequence(n).replacen(
        "<steps>",
        "<context_management><accumulate_data>false</accumulate_data></context_management><steps>",
        1,
    )
}

/// Parameters of the render workload: 20 variables, `items` being a list.
pub(crate) const RENDER_PARAMS: [&str; 20] = [
    "title", "author", "audience", "tone", "language", "product", "version", "date", "region",
    "owner", "goal", "deadline", "budget", "risk", "metric", "baseline", "target", "channel",
    "summary", "items",
];

/// The render workload for tv: one template using the 20 variables, 5 of them through
/// built-in calls (upper, lower, trim, replace, join).
pub fn render_template_tv() -> String {
    format!(
        r#"<template name="brief" params="{}">
  <task>
    <instructions>{}</instructions>
  </task>
</template>"#,
        RENDER_PARAMS.join(","),
        render_body(
            "{{upper(title)}}",
            "{{lower(author)}}",
            "{{trim(audience)}}",
            r#"{{replace(tone, "formal", "plain")}}"#,
            r#"{{join(items, ", ")}}"#,
            |v| format!("{{{{{v}}}}}")
        )
    )
}

/// The same template for MiniJinja, with the equivalent filters.
pub fn render_template_jinja() -> String {
    render_body(
        "{{ title | upper }}",
        "{{ author | lower }}",
        "{{ audience | trim }}",
        r#"{{ tone | replace("formal", "plain") }}"#,
        r#"{{ items | join(", ") }}"#,
        |v| format!("{{{{ {v} }}}}"),
    )
}

fn render_body(
    upper: &str,
    lower: &str,
    trim: &str,
    replace: &str,
    join: &str,
    var: impl Fn(&str) -> String,
) -> String {
    let mut s =
        format!("Write a brief titled {upper} by {lower} for {trim}, in a {replace} tone.\n");
    for name in &RENDER_PARAMS[4..19] {
        let _ = writeln!(s, "The {name} is {}.", var(name));
    }
    let _ = write!(s, "Cover these items: {join}.");
    s
}

/// The values of the render workload, by parameter name.
pub fn render_values() -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (i, name) in RENDER_PARAMS.iter().enumerate() {
        let v = match *name {
            "items" => serde_json::json!(["latency", "memory", "start-up", "fan-out", "render"]),
            "audience" => serde_json::json!("   the platform team   "),
            "tone" => serde_json::json!("formal and direct"),
            _ => serde_json::json!(format!("value of {name} number {i}")),
        };
        m.insert((*name).to_string(), v);
    }
    serde_json::Value::Object(m)
}

/// Compiles a program held in memory into a bundle (`None` if it does not compile).
pub fn compile(src: &str) -> Option<Bundle> {
    let c = tv_compiler::driver::check_texts([("bench.xml", src)]);
    if c.diags.has_errors() {
        eprintln!("{}", c.diags.render_short(&c.sources));
        return None;
    }
    tv_compiler::driver::compile(&c).map(|(_, b)| b)
}

/// Compiles and verifies `src`; panics with the diagnostics when it does not compile.
pub fn bundle(src: &str) -> Verified {
    Verified::new(compile(src).expect("the generated workload compiles")).expect("it verifies")
}

/// Where criterion writes its reports: `$CRITERION_HOME`, else `criterion` in the target
/// folder this benchmark was built in.
pub(crate) fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir).join("criterion");
    }
    // The bench runs as target/release/deps/NAME-HASH.
    std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.parent()?.join("criterion")))
        .unwrap_or_else(|| PathBuf::from("target/criterion"))
}

/// The median (in nanoseconds) criterion measured for `group/function/parameter` in this
/// run or the last one.
pub fn median_ns(path: &str) -> Option<f64> {
    let file = criterion_dir().join(path).join("new/estimates.json");
    let text = std::fs::read_to_string(file).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

/// A field of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`); `None` off Linux.
pub fn status_kib(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Formats nanoseconds for the summaries.
pub fn human(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Limits that long runs (10,000 steps, a map of 10,000 items) do not reach.
pub fn limits() -> Limits {
    Limits {
        turns: u64::MAX,
        tokens: u64::MAX,
        instructions: u64::MAX,
        ..Limits::default()
    }
}

/// Answers every LLM call with its prompt, and runs no script.
pub struct PromptEcho;

impl Host for PromptEcho {
    fn call(&mut self, request: &HostRequest) -> HostReply {
        match request {
            HostRequest::Llm(r) => HostReply::Llm(Ok(LlmReply {
                content: r
                    .messages
                    .last()
                    .map(|m| m.content.clone())
                    .unwrap_or_default(),
                ..LlmReply::default()
            })),
            HostRequest::Script(s) => HostReply::Script(Ok(ScriptReply {
                stdout: s.command.clone(),
                ..ScriptReply::default()
            })),
        }
    }
}

/// The release `tvm` next to this benchmark (target/release/deps/..), else
/// `target/release/tvm`.
pub fn tvm_binary() -> Option<PathBuf> {
    release_binary("tvm")
}

/// The release `tvc`, found as [`tvm_binary`] finds `tvm`.
pub fn tvc_binary() -> Option<PathBuf> {
    release_binary("tvc")
}

fn release_binary(name: &str) -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join(name)));
    [beside, Some(PathBuf::from("target/release").join(name))]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
}
