//! Every fixture under `tests/fixtures`: invalid programs are rejected with exactly
//! the diagnostics in `snapshots/diagnostics`; valid ones compile without errors, with
//! their syntax tree in `snapshots/ast`, their warnings in `snapshots/diagnostics` and
//! the JSON Schemas of their types in `snapshots/schemas`.

use tv_tests::{compile, each_fixture, fixtures, in_suite, outlined, rendered};
use tv_vm::bundle::{Bundle, BundleError, Verified};

#[test]
fn every_invalid_fixture_is_rejected_with_its_snapshotted_diagnostics() {
    let all = fixtures("invalid");
    assert!(all.len() >= 60, "only {} invalid fixtures", all.len());
    each_fixture("invalid", |f| {
        let c = compile(f);
        assert!(c.diags.has_errors(), "{} was accepted", f.path.display());
        in_suite("diagnostics", || {
            insta::assert_snapshot!(format!("invalid__{}", f.name), rendered(&c));
        });
        // A large program is checked holding its items' outlines, and building the
        // items again for their bodies' checks: the same diagnostics, and no bundle.
        for (window, bundle) in [(1, false), (3, false), (1, true), (3, true)] {
            let again = outlined(f, window, bundle);
            assert_eq!(
                rendered(&again),
                rendered(&c),
                "{}: outlined, windows of {window}",
                f.path.display()
            );
            assert!(again.bundle.is_none());
        }
    });
}

/// A valid fixture checked from outlines has the diagnostics of `whole` and compiles to
/// `bytes`, its items built again a window at a time: lowered after the check, or as
/// they are checked (the bundle is then made with the check, unless the standard
/// templates planned from the text were not those called).
fn outlined_makes(f: &tv_tests::Fixture, whole: &tv_compiler::driver::Compilation, bytes: &[u8]) {
    let mut texts = whole.sources.files().filter(|(_, file)| !file.std);
    let names_std = texts.any(|(_, file)| {
        ["repair_json", "evaluate_output"]
            .iter()
            .any(|name| file.text.contains(name))
    });
    for window in [1, 3, tv_compiler::driver::WINDOW] {
        for bundle in [false, true] {
            let mut again = outlined(f, window, bundle);
            let shown = format!("{}: outlined, windows of {window}", f.path.display());
            assert_eq!(rendered(&again), rendered(whole), "{shown}");
            // A fixture that names a standard template may or may not call it.
            if !(bundle && names_std) {
                assert_eq!(again.bundle.is_some(), bundle, "{shown}");
            }
            let made = tv_compiler::driver::compile_to_bytes_in(
                &mut again,
                &mut Default::default(),
                window,
            )
            .unwrap_or_else(|_| panic!("{shown}: no bytes"));
            assert!(made == bytes, "{shown}, made with the check: {bundle}");
        }
    }
}

#[test]
fn every_valid_fixture_compiles_and_its_syntax_tree_is_snapshotted() {
    assert!(!fixtures("valid").is_empty());
    each_fixture("valid", |f| {
        let c = compile(f);
        assert!(
            !c.diags.has_errors(),
            "{} was rejected:\n{}",
            f.path.display(),
            rendered(&c)
        );
        in_suite("ast", || {
            insta::assert_snapshot!(
                format!("valid__{}", f.name),
                tv_compiler::ast::dump_program(&c.program, &c.sources, &c.symbols.word_vars)
            );
        });
        let (ir, bundle) = tv_compiler::driver::compile(&c).expect("a valid fixture compiles");
        let bytes = bundle.to_bytes();
        // `tvc compile` makes the same bytes a window of templates at a time.
        for window in [1, 3, tv_compiler::driver::WINDOW] {
            let mut again = compile(f);
            let streamed = tv_compiler::driver::compile_to_bytes_in(
                &mut again,
                &mut Default::default(),
                window,
            )
            .unwrap_or_else(|_| panic!("{}: no bytes", f.path.display()));
            assert!(
                streamed == bytes,
                "{}: windows of {window}",
                f.path.display()
            );
        }
        outlined_makes(f, &c, &bytes);
        let back = Bundle::from_bytes(&bytes)
            .unwrap_or_else(|e| panic!("{}: the bundle does not load back: {e}", f.path.display()));
        assert_eq!(
            *back,
            bundle,
            "{}: the bundle changes on a round trip",
            f.path.display()
        );
        in_suite("ir", || {
            insta::assert_snapshot!(
                format!("valid__{}", f.name),
                tv_compiler::ir::dump(&ir, &c.sources)
            );
        });
        in_suite("bytecode", || {
            insta::assert_snapshot!(
                format!("valid__{}", f.name),
                tv_vm::disasm::disassemble(&bundle)
            );
        });
        if !c.diags.is_empty() {
            in_suite("diagnostics", || {
                insta::assert_snapshot!(format!("valid__{}", f.name), rendered(&c));
            });
        }
        let schemas = tv_compiler::schemas::dump(&c.program, &c.sources);
        if !schemas.is_empty() {
            in_suite("schemas", || {
                insta::assert_snapshot!(format!("valid__{}", f.name), schemas);
            });
        }
    });
}

#[test]
fn every_invalid_fixture_says_what_it_rejects_on_its_first_line() {
    for f in fixtures("invalid") {
        let first = if f.path.is_dir() {
            continue;
        } else {
            std::fs::read(&f.path).unwrap_or_default()
        };
        if first.is_empty() {
            continue;
        }
        let text = String::from_utf8_lossy(&first);
        assert!(
            text.lines().next().is_some_and(|l| l.contains("rejects:")),
            "{} does not start with a `rejects:` comment",
            f.path.display()
        );
    }
}

#[test]
fn expressions_read_as_snapshotted_one_per_line() {
    let list = std::fs::read_to_string("tests/fixtures/expressions.txt").expect("expressions.txt");
    let mut out = String::new();
    for line in list
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (expr, diags) = tv_compiler::parse_standalone(line);
        out.push_str(&format!("{line}\n  => {expr}\n"));
        for d in diags {
            out.push_str(&format!(
                "  error {}..{}: {}\n",
                d.span.start, d.span.end, d.message
            ));
        }
    }
    in_suite("parser", || insta::assert_snapshot!("expressions", out));
}

#[test]
fn every_valid_fixture_has_its_xml_tree_snapshotted() {
    each_fixture("valid", |f| {
        let c = compile(f);
        in_suite("xml", || {
            insta::assert_snapshot!(
                format!("valid__{}", f.name),
                tv_compiler::xml::dump_docs(&tv_compiler::driver::xml_docs(&c), &c.sources)
            );
        });
    });
}

#[test]
fn every_snapshot_file_belongs_to_a_fixture() {
    let mut expected = std::collections::BTreeSet::new();
    for f in fixtures("invalid") {
        expected.insert(format!("diagnostics/invalid__{}.snap", f.name));
    }
    for f in fixtures("valid") {
        expected.insert(format!("ast/valid__{}.snap", f.name));
        expected.insert(format!("xml/valid__{}.snap", f.name));
        expected.insert(format!("ir/valid__{}.snap", f.name));
        expected.insert(format!("bytecode/valid__{}.snap", f.name));
        let c = compile(&f);
        if !c.diags.is_empty() {
            expected.insert(format!("diagnostics/valid__{}.snap", f.name));
        }
        if !tv_compiler::schemas::dump(&c.program, &c.sources).is_empty() {
            expected.insert(format!("schemas/valid__{}.snap", f.name));
        }
    }
    for f in fixtures("runs") {
        expected.insert(format!("runs/{}.snap", f.name));
    }
    expected.insert("parser/expressions.snap".to_string());
    let mut found = std::collections::BTreeSet::new();
    for suite in [
        "ast",
        "bytecode",
        "diagnostics",
        "ir",
        "parser",
        "runs",
        "schemas",
        "xml",
    ] {
        for e in std::fs::read_dir(format!("snapshots/{suite}")).expect("snapshot folder") {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            found.insert(format!("{suite}/{name}"));
        }
    }
    let stale: Vec<_> = found.difference(&expected).collect();
    assert!(
        stale.is_empty(),
        "snapshots without a fixture (delete them): {stale:?}"
    );
}

/// `tvm run FILE.xml` verifies the bundle it compiled instead of decoding the bytes it
/// hashes: for every valid fixture, that is the bundle a file of those bytes gives.
#[test]
fn verifying_each_valid_fixtures_bundle_in_memory_gives_what_reading_its_bytes_gives() {
    for f in fixtures("valid") {
        let c = compile(&f);
        let (_, bundle) = tv_compiler::driver::compile(&c).expect("compiles");
        let read = Bundle::from_bytes(&tv_compiler::driver::bundle_bytes(&bundle));
        let verified = Verified::new(bundle).map_err(BundleError::Invalid);
        assert!(verified.is_ok(), "{}: {verified:?}", f.path.display());
        assert!(read == verified, "{}", f.path.display());
    }
}

#[test]
fn every_entry_of_every_valid_fixture_runs_with_the_echo_host() {
    for f in fixtures("valid") {
        let c = compile(&f);
        let (_, bundle) = tv_compiler::driver::compile(&c).expect("compiles");
        let bundle = Verified::new(bundle).expect("verifies");
        for e in &bundle.entries {
            let args: serde_json::Map<String, serde_json::Value> = bundle.functions
                [e.function as usize]
                .params
                .iter()
                .map(|p| {
                    (
                        p.name.clone(),
                        serde_json::Value::String(format!("<{}>", p.name)),
                    )
                })
                .collect();
            let limits = tv_vm::limits::Limits {
                call_depth: 16,
                ..Default::default()
            };
            let r = tv_tests::run_with(
                &bundle,
                &e.name,
                serde_json::Value::Object(args),
                limits,
                &mut tv_vm::host::EchoHost,
            );
            let status = r["status"].as_str().unwrap_or("");
            assert!(
                matches!(status, "COMPLETE" | "FAILED"),
                "{} entry {}: {r}",
                f.path.display(),
                e.name
            );
            if status == "FAILED" {
                let e = &r["notes"]["error"];
                assert!(
                    e["type"] == "TASK_FAILURE" || e["type"] == "RESOURCE_EXHAUSTION",
                    "{r}"
                );
                // Run-time errors of the template itself are fine here (placeholder
                // arguments); a fault of the machine is not.
                let message = e["message"].as_str().unwrap_or("");
                assert!(
                    !message.contains("internal VM error"),
                    "{}: {r}",
                    f.path.display()
                );
            }
        }
    }
}
