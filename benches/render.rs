//! Target 3: substituting a template with 20 variables and 5 built-in calls is at least
//! as fast as MiniJinja rendering the equivalent template. For tv this is a machine
//! started on the template and run to its LLM request, which holds the rendered prompt;
//! for MiniJinja, rendering an already parsed template with the same values.

use criterion::Criterion;
use std::hint::black_box;
use std::time::Duration;
use tv_test_support::workloads;
use tv_vm::bundle::Verified;
use tv_vm::host::HostRequest;
use tv_vm::interp::{Step, Vm};
use tv_vm::limits::Limits;

/// Benchmarks measure with the allocator the `tvc` and `tvm` binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The prompt tv renders for `brief` with `args`.
fn render_tv(bundle: &Verified, function: u32, args: &[serde_json::Value]) -> String {
    let mut vm = Vm::new(bundle, function, args.to_vec(), Limits::default());
    match vm.run() {
        Step::Host(request) => match *request {
            HostRequest::Llm(r) => r
                .messages
                .last()
                .map(|m| m.content.clone())
                .unwrap_or_default(),
            HostRequest::Script(_) => unreachable!("the template is an LLM task"),
        },
        _ => unreachable!("the template asks the model first"),
    }
}

fn main() {
    let bundle = workloads::bundle(&workloads::render_template_tv());
    let values = workloads::render_values();
    let (function, args) = bundle
        .entry_args("brief", &values)
        .expect("the render workload has an entry `brief`");

    let mut env = minijinja::Environment::new();
    env.add_template_owned("brief", workloads::render_template_jinja())
        .expect("the MiniJinja template parses");
    let template = env.get_template("brief").expect("template");

    let tv = render_tv(&bundle, function, &args);
    // Converted once: MiniJinja renders from its own value type (cheap to clone).
    let context = minijinja::Value::from(minijinja::value::Serde(&values));
    let jinja = template.render(context.clone()).expect("MiniJinja renders");
    assert_eq!(tv, jinja, "both engines must produce the same text");

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("render");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("tv machine to the rendered request", |b| {
        b.iter(|| render_tv(black_box(&bundle), function, black_box(&args)))
    });
    group.bench_function("minijinja render", |b| {
        b.iter(|| {
            template
                .render(black_box(context.clone()))
                .expect("renders")
        })
    });
    group.finish();
    c.final_summary();

    match (
        workloads::median_ns("render/tv machine to the rendered request"),
        workloads::median_ns("render/minijinja render"),
    ) {
        (Some(tv), Some(jinja)) => println!(
            "tv / minijinja = {} / {} = {:.2}x (target <= 1x)",
            workloads::human(tv),
            workloads::human(jinja),
            tv / jinja
        ),
        _ => println!("tv / minijinja: no medians found (run without a filter)"),
    }
}
