//! Any bytes as a bundle file, as they are and with a header resealed to match the
//! payload: refused with an error, or verified and run without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tv_vm::bundle::Bundle;

/// Magic, version, length and checksum.
const HEADER: usize = 14;

fuzz_target!(|data: &[u8]| {
    let _ = Bundle::from_bytes(data);
    if data.len() < HEADER {
        return;
    }
    let Ok(bundle) = Bundle::from_bytes(&tv_fuzz::reseal(&data[HEADER..])) else {
        return;
    };
    tv_vm::bundle::verify::verify(&bundle).expect("a loaded bundle verifies");
    let bundle = tv_fuzz::assert_round_trip(&bundle);
    let _ = tv_vm::disasm::disassemble(&bundle);
    tv_fuzz::run_every_entry(&bundle, &[], &mut tv_fuzz::Scripted::plain());
});
