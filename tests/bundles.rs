//! Bundles as files: byte-identical output, a golden bundle, and damaged or hostile
//! bundles refused with an error (or, when they decode and verify, run without a panic).

use std::sync::Mutex;
use tv_tests::bundle_of;
use tv_vm::bundle::{Bundle, BundleError, Const, Function, Loc, Param, ValueType, Verified};
use tv_vm::isa::Op;
use tv_vm::limits::Limits;

/// Programs whose bundles are checked in: the CLI and journal tests of `tv-vm` run them.
const GOLDEN: [(&str, &str, &str); 4] = [
    (
        "examples/code_review.xml",
        "tests/golden/code_review.bin",
        "review_pull_request",
    ),
    (
        "examples/incident_digest.xml",
        "tests/golden/incident_digest.bin",
        "incident_digest",
    ),
    (
        "tests/fixtures/valid/script_between_llm_steps.xml",
        "tests/golden/script_between_llm_steps.bin",
        "script_between_llm_steps",
    ),
    (
        "tests/fixtures/valid/scripts_only.xml",
        "tests/golden/scripts_only.bin",
        "scripts_only",
    ),
];

fn compile_file(path: &str) -> Vec<u8> {
    let c = tv_compiler::driver::check_paths(&[path.into()]).expect("example");
    tv_compiler::driver::compile(&c)
        .expect("compiles")
        .1
        .to_bytes()
}

fn compile_example() -> Vec<u8> {
    compile_file(GOLDEN[0].0)
}

#[test]
fn the_same_sources_compile_to_byte_identical_bundles() {
    assert_eq!(compile_example(), compile_example());
}

#[test]
fn functions_encoded_in_pieces_give_the_bytes_of_the_whole_bundle() {
    let whole = compile_example();
    let b = Bundle::from_bytes(&whole).expect("loads");
    assert!(b.functions.len() >= 3, "the example has functions to split");
    for size in 1..=b.functions.len() {
        let pieces = b.to_bytes_with(|fs| fs.chunks(size).map(Bundle::encode_functions).collect());
        assert!(pieces == whole, "pieces of {size} functions");
    }
    // No pieces at all is a different (damaged) bundle, which shows the pieces are used.
    assert!(b.to_bytes_with(|_| Vec::new()) != whole);
}

/// Set `UPDATE_GOLDEN=1` after a deliberate format change (and bump the version).
#[test]
fn the_programs_compile_to_their_golden_bundles_which_still_load() {
    for (source, golden, entry) in GOLDEN {
        let bytes = compile_file(source);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(golden, &bytes).expect("write golden");
        }
        let kept = std::fs::read(golden).expect("golden bundle");
        assert!(kept == bytes, "{golden}: the bundle bytes changed: bump bundle::VERSION if old readers would misread them, then UPDATE_GOLDEN=1");
        let b = Bundle::from_bytes(&kept).expect("the golden bundle loads");
        assert!(b.entry(entry).is_some(), "{golden}: no entry {entry}");
    }
}

/// Bundles of formats 1 to 3 (the last of each, as `tvc` wrote them) are refused
/// before their payload is read, naming their format and saying to recompile: format 4
/// renumbered the opcodes, and an older reader's layouts are not kept.
#[test]
fn bundles_of_older_formats_are_refused_with_a_message_that_says_to_recompile() {
    for (path, format) in [
        ("tests/golden/compat/incident_digest.v1.bin", 1),
        ("tests/golden/compat/code_review.v2.bin", 2),
        ("tests/golden/compat/code_review.v3.bin", 3),
        ("tests/golden/compat/code_review.v4.bin", 4),
        ("tests/golden/compat/code_review.v5.bin", 5),
        ("tests/golden/compat/code_review.v6.bin", 6),
        ("tests/golden/compat/code_review.v7.bin", 7),
    ] {
        let old = std::fs::read(path).expect("old bundle");
        assert_eq!(u16::from_le_bytes([old[4], old[5]]), format, "{path}");
        let e = Bundle::from_bytes(&old).expect_err(path);
        assert_eq!(e, BundleError::Version(format));
        let message = e.to_string();
        assert!(
            message.contains(&format!("format {format}"))
                && message.contains("recompile the templates with this version's tvc"),
            "{message}"
        );
    }
    let mut newer = compile_example();
    newer[4..6].copy_from_slice(&(tv_vm::bundle::VERSION + 1).to_le_bytes());
    let message = Bundle::from_bytes(&newer).expect_err("newer").to_string();
    assert!(message.contains("newer than this tvm reads"), "{message}");
}

#[test]
fn headers_that_are_not_right_are_refused_with_their_reason() {
    let good = compile_example();
    assert_eq!(Bundle::from_bytes(b""), Err(BundleError::TooShort));
    assert_eq!(Bundle::from_bytes(b"<task/>"), Err(BundleError::NotABundle));
    let mut v = good.clone();
    v[4] = 99;
    assert_eq!(Bundle::from_bytes(&v), Err(BundleError::Version(99)));
    v[4] = 3;
    assert_eq!(Bundle::from_bytes(&v), Err(BundleError::Version(3)));
    assert!(matches!(
        Bundle::from_bytes(&good[..good.len() - 1]),
        Err(BundleError::Length { .. })
    ));
    let mut v = good.clone();
    let last = v.len() - 1;
    v[last] ^= 1;
    assert_eq!(Bundle::from_bytes(&v), Err(BundleError::Checksum));
}

#[test]
fn every_truncation_is_refused() {
    let good = compile_example();
    for cut in 0..good.len() {
        let e = Bundle::from_bytes(&good[..cut]).expect_err("a cut bundle");
        assert_eq!(
            tv_vm::bundle::verify_bytes(&good[..cut]),
            Err(e),
            "cut at {cut}"
        );
        // Cut inside the payload with the header made to match: the decoder stops it.
        if cut > 14 {
            let sealed = reseal(&good[14..cut]);
            let e = Bundle::from_bytes(&sealed).expect_err("a cut payload");
            assert_eq!(
                tv_vm::bundle::verify_bytes(&sealed),
                Err(e),
                "payload cut at {cut}"
            );
        }
    }
    assert_eq!(tv_vm::bundle::verify_bytes(&good), Ok(()));
}

/// A tiny deterministic generator (xorshift), so failures can be replayed by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Rewrites the header so the checksum and length match a mutated payload: the
/// decoder and the verifier, not the checksum, must then stop it.
fn reseal(payload: &[u8]) -> Vec<u8> {
    let mut out = b"TVB\0".to_vec();
    out.extend_from_slice(&tv_vm::bundle::VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

#[test]
fn thousands_of_mutated_bundles_are_refused_or_run_without_panicking() {
    let good = compile_example();
    let payload = &good[14..];
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut refused, mut ran) = (0, 0);
    for _ in 0..3000 {
        let mut p = payload.to_vec();
        for _ in 0..1 + rng.below(4) {
            match rng.below(3) {
                0 => {
                    let i = rng.below(p.len());
                    p[i] ^= 1 << rng.below(8);
                }
                1 => {
                    let i = rng.below(p.len());
                    p[i] = rng.next() as u8;
                }
                _ => {
                    let i = rng.below(p.len());
                    p.truncate(i.max(1));
                }
            }
        }
        let sealed = reseal(&p);
        let loaded = Bundle::from_bytes(&sealed);
        // `tvc`'s check of what it writes, which never decodes every function at once,
        // says what the loader says.
        assert_eq!(
            tv_vm::bundle::verify_bytes(&sealed).err(),
            loaded.as_ref().err().cloned()
        );
        match loaded {
            Err(_) => refused += 1,
            Ok(b) => {
                ran += 1;
                run_every_entry(&b);
            }
        }
    }
    assert!(refused > 0 && refused + ran == 3000);
}

#[test]
fn random_bytes_with_a_valid_header_are_refused() {
    let mut rng = Rng(42);
    for len in 0..400 {
        let p: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let loaded = Bundle::from_bytes(&reseal(&p));
        assert!(loaded.is_err(), "{len} random bytes loaded as {loaded:?}");
    }
}

/// Bundles kept from fuzzing (`*.bin`): each once broke the machine. Each still loads
/// (they were rewritten in the current format), so each still reaches the machine.
#[test]
fn every_bundle_kept_from_fuzzing_loads_and_runs_to_its_end() {
    let dir = "tests/fixtures/bundles";
    let mut kept: Vec<_> = std::fs::read_dir(dir)
        .expect(dir)
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    kept.sort();
    assert!(!kept.is_empty(), "no bundles in {dir}");
    for path in kept {
        let bytes = std::fs::read(&path).expect("bundle");
        let b = Bundle::from_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!b.entries.is_empty(), "{}: nothing to run", path.display());
        run_every_entry_within(&b, 100_000);
    }
}

fn run_every_entry(b: &Verified) {
    run_every_entry_within(b, 10_000);
}

fn run_every_entry_within(b: &Verified, instructions: u64) {
    let host = tv_runtime::host::Blocking(Mutex::new(tv_vm::host::EchoHost));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for e in &b.entries {
        let n = b
            .functions
            .get(e.function as usize)
            .map_or(0, |f| f.params.len());
        let limits = Limits {
            instructions,
            ..Limits::default()
        };
        rt.block_on(
            tv_runtime::Run::new(b, e.function, vec![serde_json::Value::Null; n], limits).on(&host),
        );
    }
}

fn one_function(code: Vec<Op>, locals: u16) -> Bundle {
    let mut b = bundle_of(r#"<task name="t"><instructions>x</instructions></task>"#).into_bundle();
    b.constants = vec![Const::Str("s".into())];
    b.functions = vec![Function {
        name: "f".into(),
        params: vec![Param {
            name: "p".into(),
            ty: ValueType::ANY,
            doc: String::new(),
        }],
        locals,
        lines: vec![Loc::default(); code.len()],
        code,
        returns: ValueType::ANY,
        matchable: None,
        doc: String::new(),
    }];
    b.entries.truncate(0);
    b
}

#[test]
fn the_verifier_refuses_what_would_break_the_machine() {
    let cases: Vec<(Vec<Op>, u16, &str)> = vec![
        (vec![Op::Jump(7)], 1, "past the end"),
        (vec![Op::Pop, Op::Return], 1, "needs 1 values"),
        (
            vec![Op::Const(9), Op::Return],
            1,
            "constant 9 does not exist",
        ),
        (vec![Op::Load(3), Op::Return], 1, "local 3 does not exist"),
        (
            vec![Op::Const(0), Op::Return],
            u16::MAX,
            "65535 locals, more than the 4096 a frame may have",
        ),
        (vec![Op::Const(0)], 1, "runs past the end"),
        (
            vec![Op::Const(0), Op::Call(5, 0), Op::Return],
            1,
            "function 5 does not exist",
        ),
        (vec![Op::Const(0), Op::Call(0, 0), Op::Return], 1, "takes 1"),
        (
            vec![Op::Const(0), Op::Builtin(0, 3), Op::Return],
            1,
            "called with 3 arguments",
        ),
        (
            vec![
                Op::Const(0),
                Op::Const(0),
                Op::Const(0),
                Op::Atomic(8),
                Op::Return,
            ],
            1,
            "task 8 does not exist",
        ),
        (
            vec![
                Op::Const(0),
                Op::JumpIfFalse(3),
                Op::Const(0),
                Op::Const(0),
                Op::Return,
            ],
            1,
            "on another path",
        ),
        (
            vec![Op::Const(0), Op::Return],
            0,
            "fewer locals than parameters",
        ),
        (
            vec![Op::Const(0), Op::Branch(3, 1), Op::Gather(1), Op::Return],
            1,
            "function 3 does not exist",
        ),
        (
            vec![Op::Branch(0, 0), Op::Gather(1), Op::Return],
            1,
            "called with 0 arguments, takes 1",
        ),
        (
            vec![Op::Const(0), Op::Branch(0, 1), Op::Gather(2), Op::Return],
            1,
            "`Gather` of 2 branches where 1 are held",
        ),
        (
            vec![
                Op::Const(0),
                Op::JumpIfFalse(4),
                Op::Const(0),
                Op::Branch(0, 1),
                Op::Const(0),
                Op::Return,
            ],
            1,
            "0 branches held here but 1 on another path",
        ),
    ];
    for (code, locals, expected) in cases {
        let b = one_function(code.clone(), locals);
        let err = tv_vm::bundle::verify::verify(&b).expect_err(&format!("{code:?} was accepted"));
        assert!(err.contains(expected), "{code:?}: {err}");
        assert!(Bundle::from_bytes(&b.to_bytes()).is_err());
    }
}

/// Types are stored as a flat table that the decoder holds to the nesting a written
/// type may have; a type built in memory is held to it by the verifier.
#[test]
fn the_verifier_refuses_types_nested_deeper_than_a_written_type_may_be() {
    let mut deep = tv_stdlib::types::Type::String;
    for _ in 0..200 {
        deep = tv_stdlib::types::Type::Array(Box::new(deep));
    }
    let deep = ValueType::from(deep);
    let mut b = one_function(vec![Op::Load(0), Op::Return], 1);
    b.functions[0].returns = deep.clone();
    let err = tv_vm::bundle::verify::verify(&b).expect_err("a deep return type");
    assert!(err.contains("nests deeper"), "{err}");
    b.functions[0].returns = ValueType::ANY;
    b.functions[0].params[0].ty = deep;
    let err = tv_vm::bundle::verify::verify(&b).expect_err("a deep parameter type");
    assert!(err.contains("parameter `p`"), "{err}");
    b.functions[0].params[0].ty = ValueType::ANY;
    assert_eq!(tv_vm::bundle::verify::verify(&b), Ok(()));
}

/// A function that gathers eight branches of itself in a loop, each frame with the most
/// locals a frame may have: under the async driver every branch is alive at once, so
/// without a shared memory budget it grew past gigabytes.
#[test]
fn branches_that_multiply_their_frames_hit_the_shared_memory_budget() {
    let mut b = bundle_of(r#"<task name="t"><instructions>x</instructions></task>"#).into_bundle();
    b.constants = vec![Const::Num(0.0)];
    let mut code = vec![Op::Branch(0, 0); 8];
    code.extend([Op::Gather(8), Op::Pop, Op::Jump(0)]);
    b.functions = vec![Function {
        name: "f".into(),
        params: Vec::new(),
        locals: tv_vm::limits::MAX_LOCALS,
        lines: vec![Loc::default(); code.len()],
        code,
        returns: ValueType::ANY,
        matchable: None,
        doc: String::new(),
    }];
    b.entries = vec![tv_vm::bundle::Entry {
        name: "f".into(),
        function: 0,
    }];
    let b = Bundle::from_bytes(&b.to_bytes()).expect("verifies");
    let limits = Limits {
        memory: 32 << 20,
        ..Limits::default()
    };
    let host = tv_runtime::host::Blocking(Mutex::new(tv_vm::host::EchoHost));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let r = rt
        .block_on(tv_runtime::Run::new(&b, 0, Vec::new(), limits).on(&host))
        .result;
    let r = serde_json::Value::from(r);
    let error = &r["notes"]["error"];
    assert_eq!(error["resource"], "memory", "{r:#}");
    assert_eq!(error["metrics"]["limit"], 32 << 20);
}

/// A loop that ends a director-evaluator loop again and again on its own result: each
/// failure carries the last one in its details, so without a nesting check the value
/// grew until dropping it overflowed the stack.
#[test]
fn a_loop_end_wrapped_in_itself_stops_at_the_nesting_limit() {
    let code = vec![
        Op::Const(0),
        Op::Complete,
        Op::Const(0),
        Op::Const(0),
        Op::EndLoop(tv_vm::isa::LOOP_EXHAUSTED),
        Op::Jump(2),
    ];
    let b = one_function(code, 1);
    let b = Bundle::from_bytes(&b.to_bytes()).expect("verifies");
    let mut vm = tv_vm::interp::Vm::new(&b, 0, vec![serde_json::Value::Null], Limits::default());
    let r = serde_json::Value::from(vm.run_with(&mut tv_vm::host::EchoHost));
    assert_eq!(
        r["notes"]["error"]["resource"], "depth",
        "{}",
        r["notes"]["error"]
    );
}
