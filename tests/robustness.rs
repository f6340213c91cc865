//! Bad input of every kind gets diagnostics, never a panic: random bytes, mutated
//! fixtures, truncations, huge and deeply nested documents.

use proptest::prelude::*;
use tv_compiler::driver::{self, Compilation};
use tv_tests::fixtures;

/// Every diagnostic points inside its file, and rendering it works.
fn assert_well_formed(c: &Compilation) {
    for d in c.diags.iter() {
        let text = &c.sources.get(d.span.file).text;
        let len = text.len();
        assert!(
            d.span.start <= d.span.end && d.span.end as usize <= len,
            "span {:?} outside a file of {len} bytes: {}",
            d.span,
            d.message
        );
        assert!(
            text.is_char_boundary(d.span.start as usize)
                && text.is_char_boundary(d.span.end as usize),
            "span {:?} splits a character: {}",
            d.span,
            d.message
        );
    }
    let _ = c.diags.render(&c.sources, false);
    let _ = tv_compiler::ast::dump_program(&c.program, &c.sources, &c.symbols.word_vars);
}

fn corpus() -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for kind in ["valid", "invalid"] {
        for f in fixtures(kind).into_iter().filter(|f| f.path.is_file()) {
            all.push(std::fs::read(&f.path).expect("fixture"));
        }
    }
    all
}

/// Fragments that upset XML readers and expression parsers.
const NASTY: &[&str] = &[
    "<",
    ">",
    "&",
    "&amp;",
    "&#x0;",
    "\"",
    "'",
    "{{",
    "}}",
    "\\{{",
    "(",
    ")",
    ",",
    "=",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "</task>",
    "<task>",
    "<cond><case test=\"x\">",
    "{{f(",
    "\u{0}",
    "\u{feff}",
    "é",
    "\n",
    "<?xml version=\"1.0\"?>",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, usize),
    Delete(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 0..NASTY.len()).prop_map(|(i, n)| Mutation::Insert(i, n)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Mutation::Delete(i, n)),
    ]
}

fn apply(mut bytes: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
    match *m {
        Mutation::Flip(i, b) if !bytes.is_empty() => {
            let i = i % bytes.len();
            bytes[i] ^= b;
        }
        Mutation::Flip(..) => {}
        Mutation::Truncate(i) => bytes.truncate(at(i, bytes.len())),
        Mutation::Insert(i, n) => {
            let i = at(i, bytes.len());
            bytes.splice(i..i, NASTY[n].bytes());
        }
        Mutation::Delete(i, n) => {
            let i = at(i, bytes.len());
            let end = (i + n).min(bytes.len());
            bytes.drain(i..end);
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_get_diagnostics_not_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let c = driver::check_bytes("random.xml", &bytes);
        assert_well_formed(&c);
    }

    #[test]
    fn mutated_fixtures_get_diagnostics_not_a_panic(
        pick in any::<prop::sample::Index>(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let all = corpus();
        let mut bytes = all[pick.index(all.len())].clone();
        for m in &mutations {
            bytes = apply(bytes, m);
        }
        let c = driver::check_bytes("mutated.xml", &bytes);
        assert_well_formed(&c);
    }

    #[test]
    fn random_expressions_parse_or_report_without_panicking(src in "[a-z0-9 _.,()=!<>&|'\"{}\\\\-]{0,64}") {
        let (_, diags) = tv_compiler::parse_standalone(&src);
        for d in diags {
            prop_assert!(d.span.end as usize <= src.len());
        }
    }
}

#[test]
fn every_truncation_of_a_rich_fixture_is_handled() {
    let bytes =
        std::fs::read("tests/fixtures/valid/atomic_all_optional_fields.xml").expect("fixture");
    for cut in 0..bytes.len() {
        assert_well_formed(&driver::check_bytes("cut.xml", &bytes[..cut]));
    }
}

#[test]
fn a_program_of_several_megabytes_checks_cleanly() {
    let mut src = String::from("<library>\n");
    for i in 0..25_000 {
        src.push_str(&format!(
            "<template name=\"t{i}\" params=\"a,b:number\" returns=\"object\"><task><instructions>Step {i}: {{{{upper(a)}}}} {{{{t{}(a, b)}}}}</instructions><output_format type=\"json\" schema=\"object\"/></task></template>\n",
            (i + 1) % 25_000
        ));
    }
    src.push_str("</library>\n");
    assert!(src.len() > 4_000_000);
    let c = driver::check_texts([("big.xml", src.as_str())]);
    assert_eq!(
        c.diags.error_count(),
        0,
        "{}",
        c.diags.render_short(&c.sources)
    );
    // The templates call each other in one big ring: one cycle warning, not thousands.
    assert_eq!(c.diags.warning_count(), 1);
}

#[test]
fn nesting_far_past_the_limit_is_reported_once_without_overflowing_the_stack() {
    let depth = 50_000;
    let src = format!(
        "<task type=\"sequential\"><steps>{}<task><instructions>x</instructions></task>{}</steps></task>",
        "<cond><case test=\"true\">".repeat(depth),
        "</case></cond>".repeat(depth)
    );
    let c = driver::check_texts([("deep.xml", src.as_str())]);
    let short = c.diags.render_short(&c.sources);
    assert_eq!(c.diags.error_count(), 1, "{short}");
    assert!(short.contains("nested more than"), "{short}");

    let expr = format!(
        "<task><instructions>{{{{{}x{}}}}}</instructions></task>",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let c = driver::check_texts([("deep-expr.xml", expr.as_str())]);
    let short = c.diags.render_short(&c.sources);
    assert_eq!(c.diags.error_count(), 1, "{short}");
    assert!(short.contains("expression nested more than"), "{short}");
}

#[test]
fn a_type_nested_a_million_arrays_deep_is_refused_without_overflowing_the_stack() {
    let src = format!(
        "<template name=\"t\" params=\"a:string{}\"><task><instructions>{{{{a}}}}</instructions></task></template>",
        "[]".repeat(1_000_000)
    );
    let c = driver::check_texts([("deep-type.xml", src.as_str())]);
    assert_eq!(c.diags.error_count(), 1);
    assert!(c
        .diags
        .iter()
        .any(|d| d.message.contains("nests arrays 1000000 deep")));
}

#[test]
fn non_utf8_bytes_are_reported_at_their_line_and_column() {
    let c = driver::check_bytes(
        "latin1.xml",
        b"<task>\n  <instructions>caf\xe9</instructions>\n</task>",
    );
    assert_eq!(
        c.diags.render_short(&c.sources),
        "latin1.xml:2:20: error: the file is not valid UTF-8 (template files are UTF-8 text)\n"
    );
}

/// A test of one `<case>` whose expression is `test`, in a file of its own.
fn case_test(test: &str) -> String {
    format!(
        "<task type=\"sequential\"><steps><cond><case test=\"{test}\"><task><instructions>x</instructions></task></case></cond></steps></task>"
    )
}

#[test]
fn long_runs_of_operators_are_reported_once_without_overflowing_the_stack() {
    // Each of these builds a tree as deep as it is long, though nothing in it is
    // bracketed; 100k levels overflowed every stack the compiler ran on.
    let n = 100_000;
    let chain = |op: &str| vec!["true"; n].join(op);
    let path = format!("a.{}", vec!["b"; n].join("."));
    let cases = [
        ("bang", case_test(&format!("{}true", "!".repeat(n)))),
        ("not", case_test(&format!("{}true", "not ".repeat(n)))),
        ("and", case_test(&chain(" &amp;&amp; "))),
        ("or", case_test(&chain(" or "))),
        ("cmp", case_test(&chain(" == "))),
        (
            "path",
            format!("<task><inputs><input name=\"a\">x</input></inputs><instructions>{{{{{path}}}}}</instructions></task>"),
        ),
        ("index", case_test(&format!("a{}", ".1.2".repeat(n / 2)))),
    ];
    for (name, src) in cases {
        let c = driver::check_texts([(name, src.as_str())]);
        let short = c.diags.render_short(&c.sources);
        assert_eq!(c.diags.error_count(), 1, "{name}: {short}");
        assert!(
            short.contains("expression nests more than 256 operations deep"),
            "{name}: {short}"
        );
    }
}

#[test]
fn operators_up_to_the_limit_compile_to_a_bundle() {
    // 255 operators and a bracket: the deepest tree the limit lets through goes
    // through every stage and the verifier.
    let chain = vec!["x"; 256].join(" &amp;&amp; ");
    let src = format!(
        "<task type=\"sequential\"><inputs><input name=\"x\">v</input></inputs><steps><cond><case test=\"({chain})\"><task><instructions>{{{{x}}}}</instructions></task></case></cond></steps></task>"
    );
    let c = driver::check_texts([("limit.xml", src.as_str())]);
    let short = c.diags.render_short(&c.sources);
    assert_eq!(c.diags.error_count(), 0, "{short}");
    let (_, bundle) = driver::compile(&c).expect("a bundle");
    let bytes = driver::bundle_bytes(&bundle);
    tv_vm::bundle::Bundle::from_bytes(&bytes).expect("the machine accepts the bundle");
}

#[test]
fn a_task_with_thirty_thousand_inputs_compiles_without_overflowing_the_stack() {
    // Each input used to wrap the task in one more `let` node of the IR, and the
    // bytecode generator recursed through all of them.
    let inputs: String = (0..30_000)
        .map(|i| format!("<input name=\"i{i}\">v</input>"))
        .collect();
    let src = format!(
        "<task type=\"sequential\"><inputs>{inputs}</inputs><steps><task><instructions>x</instructions></task></steps></task>"
    );
    let c = driver::check_texts([("inputs.xml", src.as_str())]);
    assert_eq!(c.diags.error_count(), 0);
    // More locals than a frame may have: an error, never a bundle the machine refuses.
    let errors = compile_errors(&src);
    assert!(
        errors.contains(
            "30003 locals (inputs and variables) in one function: a function may have at most 4096"
        ),
        "{errors}"
    );
    let fewer: String = (0..4_000)
        .map(|i| format!("<input name=\"i{i}\">v</input>"))
        .collect();
    let src = format!(
        "<task type=\"sequential\"><inputs>{fewer}</inputs><steps><task><instructions>x</instructions></task></steps></task>"
    );
    let c = driver::check_texts([("inputs.xml", src.as_str())]);
    let (_, bundle) = driver::compile(&c).expect("a bundle");
    tv_vm::bundle::Bundle::from_bytes(&driver::bundle_bytes(&bundle)).expect("accepted");
}

/// The errors `driver::compile` gives for `src`, as `tvc` prints them.
fn compile_errors(src: &str) -> String {
    let c = driver::check_texts([("big.xml", src)]);
    assert_eq!(
        c.diags.error_count(),
        0,
        "{}",
        c.diags.render_short(&c.sources)
    );
    match driver::compile_timed(&c, &mut Default::default()) {
        Ok(_) => panic!("compiled a bundle whose operands cannot hold its counts"),
        Err(diags) => diags.render_short(&c.sources),
    }
}

#[test]
fn a_call_with_more_arguments_than_an_operand_holds_is_a_compile_error() {
    // `Call` counts its arguments in a byte: 300 used to be written as 44.
    let params: Vec<String> = (0..300).map(|i| format!("p{i}")).collect();
    let args: String = (0..300).map(|i| format!("<arg>v{i}</arg>")).collect();
    let src = format!(
        "<library><template name=\"f\" params=\"{}\"><task><instructions>{{{{p0}}}}</instructions></task></template>\n<template name=\"g\" params=\"y\"><call template=\"f\">{args}</call></template></library>",
        params.join(",")
    );
    assert_eq!(
        compile_errors(&src),
        "big.xml:2:31: error: 300 arguments to one template call: the bytecode allows at most 255\n"
    );
}

#[test]
fn an_index_past_what_an_operand_holds_is_a_compile_error() {
    // `Index` holds a `u32`: the index one past it used to be read as `u32::MAX`, an
    // element the template never named.
    let src = "<library><template name=\"f\" params=\"xs:string[]\"><task><instructions>{{xs.4294967296}} {{xs.4294967295}}</instructions></task></template></library>";
    assert_eq!(
        compile_errors(src),
        "big.xml:1:72: error: index 4294967296: the bytecode allows at most 4294967295\n"
    );
}

#[test]
fn a_function_with_more_locals_than_an_operand_holds_is_a_compile_error() {
    let inputs: String = (0..70_000)
        .map(|i| format!("<input name=\"i{i}\">v</input>"))
        .collect();
    let src = format!(
        "<task type=\"sequential\"><inputs>{inputs}</inputs><steps><task><instructions>x</instructions></task></steps></task>"
    );
    let errors = compile_errors(&src);
    assert!(
        errors.starts_with("big.xml:1:1: error: 70003 locals (inputs and variables) in one function: a function may have at most 4096"),
        "{errors}"
    );
}

/// The instructions of the program `src` compiles to.
fn code_size(src: &str) -> usize {
    let c = driver::check_texts([("reduce.xml", src)]);
    assert_eq!(
        c.diags.error_count(),
        0,
        "{}",
        c.diags.render_short(&c.sources)
    );
    let (_, bundle) = driver::compile(&c).expect("a bundle");
    bundle.functions.iter().map(|f| f.code.len()).sum()
}

#[test]
fn a_reduce_over_literal_inputs_compiles_to_code_linear_in_their_number() {
    // Each inner branch used to take every variable in scope, every input included:
    // N branch calls of N + 2 arguments.
    let reduce = |n: usize| {
        let inputs: String = (0..n)
            .map(|i| format!("<input name=\"i{i}\">v{i}</input>"))
            .collect();
        format!(
            "<task type=\"reduce\"><inputs>{inputs}</inputs><inner_task><instructions>{{{{current_input}}}}</instructions></inner_task><reduction_task><instructions>{{{{current_result}}}} {{{{accumulator}}}}</instructions></reduction_task></task>"
        )
    };
    let (small, large) = (code_size(&reduce(100)), code_size(&reduce(1000)));
    assert!(
        large <= 11 * small,
        "10 times the inputs take {large} instructions, {} times {small}",
        large as f64 / small as f64
    );
}

#[test]
fn each_duplicate_among_many_attributes_is_reported_with_both_places() {
    // Attributes are `name` (known) and then `x0`..: every `xN` is unknown, and the
    // last two repeat `name` and `x7`.
    let attrs: String = (0..20_000).map(|i| format!(" x{i}=\"v\"")).collect();
    let src = format!(
        "<task name=\"t\"{attrs} name=\"u\" x7=\"w\"><instructions>x</instructions></task>"
    );
    let c = driver::check_texts([("attrs.xml", src.as_str())]);
    let twice: Vec<_> = c
        .diags
        .iter()
        .filter(|d| d.message.contains("is given twice"))
        .collect();
    let at = |s: tv_compiler::source::Span| c.sources.location(s);
    let found: Vec<(String, String, String)> = twice
        .iter()
        .map(|d| (d.message.clone(), at(d.span), at(d.secondary[0].0)))
        .collect();
    let x7 = src.find(" x7=").expect("x7") + 2;
    let end = src.find(" name=\"u\"").expect("second name") + 2;
    assert_eq!(
        found,
        [
            (
                "attribute `name` is given twice".to_string(),
                format!("attrs.xml:1:{end}"),
                "attrs.xml:1:7".to_string()
            ),
            (
                "attribute `x7` is given twice".to_string(),
                format!("attrs.xml:1:{}", end + 9),
                format!("attrs.xml:1:{x7}")
            ),
        ]
    );
}

/// A library of `n` templates, each of whose body is `link(i)` handing on to
/// template `i + 1`; the last one asks a model.
fn chain(n: usize, link: impl Fn(usize) -> String) -> String {
    let mut src = String::from("<library>\n");
    for i in 0..n - 1 {
        src.push_str(&link(i));
        src.push('\n');
    }
    src.push_str(&format!(
        "<template name=\"t{}\" params=\"x:string[]\"><task><instructions>{{{{x}}}}</instructions></task></template>\n</library>\n",
        n - 1
    ));
    src
}

/// Template `i` of a chain, handing on to template `i + 1`.
type Link = fn(usize) -> String;

#[test]
fn a_chain_of_thirty_thousand_templates_each_calling_the_next_compiles_without_overflowing_the_stack(
) {
    // The type a template returns is the type of the template its body calls: working
    // it out used to recurse once per link, and overflowed at about 27,000 links.
    let links: [(&str, Link); 3] = [
        ("a <call> body", |i| {
            format!("<template name=\"t{i}\" params=\"x:string[]\"><call template=\"t{}\"><arg>x</arg></call></template>", i + 1)
        }),
        ("a cond whose case calls", |i| {
            format!("<template name=\"t{i}\" params=\"x:string[]\"><cond><case test=\"true\"><call template=\"t{}\"><arg>x</arg></call></case></cond></template>", i + 1)
        }),
        // Each map wraps the next one's type in one more array: past what a type may
        // nest, the inferred items are `any`, and the bundle still loads.
        ("a map whose body calls", |i| {
            format!("<template name=\"t{i}\" params=\"x:string[]\"><task type=\"map\" over=\"x\"><call template=\"t{}\"><arg>x</arg></call></task></template>", i + 1)
        }),
    ];
    for (shape, link) in links {
        let src = chain(30_000, link);
        let c = driver::check_texts([("chain.xml", src.as_str())]);
        let short = c.diags.render_short(&c.sources);
        assert_eq!(c.diags.error_count(), 0, "{shape}: {short}");
        let (_, bundle) = driver::compile(&c).expect(shape);
        let bytes = driver::bundle_bytes(&bundle);
        tv_vm::bundle::Bundle::from_bytes(&bytes).expect(shape);
    }
}
