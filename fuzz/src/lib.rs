//! What the fuzz targets share: a deterministic host whose replies come from the fuzz
//! input, the loop that drives a machine to its end, small limits so every run ends
//! quickly, and a builder that turns structured input into bundles that verify.

pub mod host;
pub mod program;

pub use host::{Reply, ScriptOutcome, Scripted, J};
pub use program::Program;

use serde_json::Value;
use tv_vm::bundle::{Bundle, Verified};
use tv_vm::host::Host;
use tv_vm::interp::{Step, Vm};
use tv_vm::limits::Limits;
use tv_vm::result::{ErrorKind, Resource, TaskResult};

/// Limits small enough that any run ends in well under a millisecond or so.
pub fn small_limits() -> Limits {
    Limits {
        call_depth: 6,
        subtask_depth: 3,
        loop_iterations: 20,
        turns: 24,
        tokens: 50_000,
        instructions: 2_000,
        memory: 16 << 20,
        ..Limits::default()
    }
}

/// Runs `function` to its end and checks what must hold of every run.
pub fn run(
    bundle: &Verified,
    function: u32,
    args: Vec<Value>,
    limits: &Limits,
    host: &mut impl Host,
) -> TaskResult {
    let mut vm = Vm::new(bundle, function, args, limits.clone());
    let result = vm.run_with(host);
    if vm.usage().instructions > limits.instructions {
        let instructions = ErrorKind::ResourceExhaustion {
            resource: Resource::Instructions,
        };
        assert_eq!(
            result.notes.error.as_ref().map(|e| e.kind),
            Some(instructions),
            "a run went past its instruction limit without stopping: {result}"
        );
    }
    assert_eq!(
        vm.run(),
        Step::Done(Box::new(result.clone())),
        "a finished run changed"
    );
    result
}

/// Runs every entry of a verified bundle, arguments taken in turn from `args`.
pub fn run_every_entry(bundle: &Verified, args: &[Value], host: &mut impl Host) {
    let limits = small_limits();
    for e in &bundle.entries {
        let n = bundle
            .functions
            .get(e.function as usize)
            .map_or(0, |f| f.params.len());
        let values = (0..n)
            .map(|i| {
                args.get(i % args.len().max(1))
                    .cloned()
                    .unwrap_or(Value::Null)
            })
            .collect();
        run(bundle, e.function, values, &limits, host);
    }
}

/// A bundle file around `payload` with a header that matches it, so the decoder and
/// the verifier, not the checksum, decide what happens to a mutated payload.
pub fn reseal(payload: &[u8]) -> Vec<u8> {
    let mut out = tv_vm::bundle::MAGIC.to_vec();
    out.extend_from_slice(&tv_vm::bundle::VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// A verified bundle must survive a trip through its bytes unchanged; what it reads
/// back is verified again.
pub fn assert_round_trip(bundle: &Bundle) -> Verified {
    let bytes = bundle.to_bytes();
    let back = Bundle::from_bytes(&bytes)
        .unwrap_or_else(|e| panic!("a verified bundle does not load back: {e}"));
    assert!(back.to_bytes() == bytes, "a bundle changed on a round trip");
    back
}
