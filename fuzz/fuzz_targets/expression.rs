//! Any text as an expression: a tree or errors inside the text, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let (expr, diags) = tv_compiler::parse_standalone(src);
    for d in &diags {
        assert!(
            d.span.start <= d.span.end && d.span.end as usize <= src.len(),
            "span {:?} outside {} bytes: {}",
            d.span,
            src.len(),
            d.message
        );
    }
    let _ = expr.to_string();
});
