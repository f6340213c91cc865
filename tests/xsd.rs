//! The XML Schema of `tvc schema` (DESIGN §17) against the shipped templates, with
//! `xmllint`: every example and valid fixture validates, and fixtures whose fault is one
//! of structure fail it for that fault. The schema is made from the compiler's language
//! table (`compiler/src/language`), the text the binary prints (`cli/tests/tvc/cli.rs`
//! checks that `tvc schema` prints exactly it), held by `snapshots/schema/tv.xsd.snap`.

use std::path::{Path, PathBuf};
use std::process::Command;
use tv_compiler::language::xsd;
use tv_test_support::temp::TempDir;
use tv_tests::in_suite;

/// Invalid fixtures that the schema rejects, one a line: the fixture, then what
/// `xmllint` must say about it (the fault the fixture is about, not another one).
#[rustfmt::skip]
const STRUCTURAL: &[(&str, &str)] = &[
    ("unknown_element_typo.xml", "Element 'instrutions': This element is not expected"),
    ("unknown_element_in_library.xml", "Element 'macro': This element is not expected"),
    ("unknown_element_in_steps.xml", "Element 'step': This element is not expected"),
    ("test_bad_expectations.xml", "Element 'given': This element is not expected"),
    ("unknown_element_in_context_management.xml", "Element 'inherit': This element is not expected"),
    ("unknown_attribute_on_task.xml", "The attribute 'typ' is not allowed"),
    ("unknown_attribute_on_arg.xml", "The attribute 'nmae' is not allowed"),
    ("unknown_attribute_on_input.xml", "The attribute 'default' is not allowed"),
    ("wrong_root_element.xml", "Element 'foo': No matching global declaration"),
    ("root_is_cond.xml", "Element 'cond': No matching global declaration"),
    ("template_without_name.xml", "Element 'template': The attribute 'name' is required"),
    ("call_without_template_attribute.xml", "Element 'call': The attribute 'template' is required"),
    ("case_without_test.xml", "Element 'case': The attribute 'test' is required"),
    ("input_without_name.xml", "Element 'input': The attribute 'name' is required"),
    ("template_body_empty.xml", "Element 'template': Missing child element(s)"),
    ("unknown_task_type.xml", "The value 'parallel' is not an element of the set"),
    ("unknown_output_format_type.xml", "The value 'yaml' is not an element of the set"),
    ("bad_file_paths_source.xml", "The value 'glob' is not an element of the set"),
    ("bad_inherit_context_value.xml", "The value 'partial' is not an element of the set"),
    ("bad_accumulation_format_value.xml", "The value 'summary' is not an element of the set"),
    ("bad_fresh_context_value.xml", "The value 'on' is not an element of the set"),
    ("bool_field_not_true_false.xml", "The value 'yes' is not an element of the set {'true', 'false'}"),
    ("bool_field_capitalized.xml", "The value 'True' is not an element of the set {'true', 'false'}"),
    ("accumulate_data_not_boolean.xml", "The value '1' is not an element of the set {'true', 'false'}"),
    ("context_relevance_include_not_boolean.xml", "The value 'sometimes' is not an element of the set"),
    ("max_iterations_zero.xml", "'0' is not a valid value of the atomic type 'xs:positiveInteger'"),
    ("map_concurrency_out_of_range.xml", "The value '5000' is greater than the maximum value allowed ('1024')"),
    ("retries_out_of_range.xml", "The value '11' is greater than the maximum value allowed ('10')"),
    ("model_settings_out_of_range.xml", "The value '2.5' is greater than the maximum value allowed ('2')"),
];

#[test]
fn the_schema_tvc_schema_prints_is_its_snapshot_to_the_byte() {
    let schema = xsd();
    in_suite("schema", || insta::assert_snapshot!("tv.xsd", schema));
    // insta forgives white space at the end; the schema's readers may not.
    let snap = std::fs::read_to_string("snapshots/schema/tv.xsd.snap").expect("the snapshot");
    let (_, kept) = snap.split_once("\n---\n").expect("the snapshot's header");
    assert!(
        kept == schema,
        "the schema differs from its snapshot in white space"
    );
}

/// `xmllint`'s exit status when a document is well-formed but does not validate.
const INVALID: i32 = 3;

/// The schema in a file of its own, as a user writes it with `tvc schema > tv.xsd`.
fn schema_file() -> (TempDir, PathBuf) {
    let dir = TempDir::new("xsd");
    dir.write("tv.xsd", xsd());
    let path = dir.path().join("tv.xsd");
    (dir, path)
}

/// `xmllint --noout --schema SCHEMA FILE`: its exit status and what it said.
fn xmllint(schema: &Path, file: &Path) -> (i32, String) {
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schema)
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run xmllint ({e}): run scripts/test-deps, which installs it (Debian package libxml2-utils)")
        });
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), said)
}

/// The `*.xml` files directly in `dir`, in name order.
fn xml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "xml"))
        .collect();
    out.sort();
    out
}

/// Every example, every valid fixture (its file, or the files of its folder) and the
/// workflow tests' fixtures.
fn valid_templates() -> Vec<PathBuf> {
    let mut out = xml_files(Path::new("examples"));
    let valid = Path::new("tests/fixtures/valid");
    out.extend(xml_files(valid));
    out.extend(xml_files(Path::new("tests/fixtures/workflow_tests")));
    let mut folders: Vec<PathBuf> = std::fs::read_dir(valid)
        .expect("the valid fixtures")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        out.extend(xml_files(&folder));
    }
    out
}

#[test]
fn every_example_and_valid_fixture_validates_against_the_schema() {
    let (_dir, schema) = schema_file();
    let files = valid_templates();
    assert!(files.len() >= 70, "only {} templates found", files.len());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| match xmllint(&schema, f) {
            (0, _) => None,
            (code, said) => Some(format!("{} (exit {code}):\n{said}", f.display())),
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn fixtures_wrong_in_structure_fail_the_schema_for_their_fault() {
    let (_dir, schema) = schema_file();
    assert!(STRUCTURAL.len() >= 10);
    let mut wrong = Vec::new();
    for (name, expected) in STRUCTURAL {
        let file = Path::new("tests/fixtures/invalid").join(name);
        assert!(file.is_file(), "{} is gone", file.display());
        let (code, said) = xmllint(&schema, &file);
        if code != INVALID || !said.contains(expected) {
            wrong.push(format!(
                "{name}: exit {code}, expected `{expected}`:\n{said}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
