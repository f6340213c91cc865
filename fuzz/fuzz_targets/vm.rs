//! Generated programs that verify, run to their end with a scripted host whose
//! replies come from the input, under small limits: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|program: tv_fuzz::Program| {
    let Ok(bundle) = tv_vm::bundle::Verified::new(program.bundle()) else {
        return;
    };
    let bundle = tv_fuzz::assert_round_trip(&bundle);
    let _ = tv_vm::disasm::disassemble(&bundle);
    tv_fuzz::run_every_entry(&bundle, &program.args(), &mut program.host());
});
