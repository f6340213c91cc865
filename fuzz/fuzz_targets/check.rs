//! Any bytes as a template file: diagnostics that point inside the file and render,
//! and for a program without errors, a bundle that verifies, survives a round trip
//! through its bytes and runs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tv_compiler::driver;

fuzz_target!(|data: &[u8]| {
    let c = driver::check_bytes("fuzz.xml", data);
    for d in c.diags.iter() {
        let text = &c.sources.get(d.span.file).text;
        let (start, end) = (d.span.start as usize, d.span.end as usize);
        assert!(
            start <= end && end <= text.len(),
            "span {:?} outside a file of {} bytes: {}",
            d.span,
            text.len(),
            d.message
        );
        assert!(
            text.is_char_boundary(start) && text.is_char_boundary(end),
            "span {:?} splits a character: {}",
            d.span,
            d.message
        );
    }
    let _ = c.diags.render(&c.sources, false);
    if c.diags.has_errors() {
        return;
    }
    let (_, bundle) = driver::compile(&c).expect("a program without errors compiles");
    tv_vm::bundle::verify::verify(&bundle).expect("the compiler's bundle verifies");
    let back = tv_fuzz::assert_round_trip(&bundle);
    tv_fuzz::run_every_entry(&back, &[], &mut tv_fuzz::Scripted::plain());
});
