//! Turns a crash of the `bundle` or `vm` target into a bundle file for
//! `tests/fixtures/bundles/`:
//! `cargo +nightly run --release --example keep -- <bundle|vm> <artifact> <out.bin>`.

use arbitrary::{Arbitrary, Unstructured};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, artifact, out] = &args[..] else {
        eprintln!("usage: keep <bundle|vm> <artifact> <out.bin>");
        std::process::exit(2);
    };
    let data = std::fs::read(artifact).expect("artifact");
    let bytes = match target.as_str() {
        // What the target ran: the payload under a header that matches it.
        "bundle" => tv_fuzz::reseal(data.get(14..).unwrap_or_default()),
        "vm" => tv_fuzz::Program::arbitrary_take_rest(Unstructured::new(&data))
            .expect("a program")
            .bundle()
            .to_bytes(),
        other => panic!("no target {other}"),
    };
    std::fs::write(out, bytes).expect("write");
}
