//! `tvc` at the edges of what it accepts: inputs too large for the bytecode, files
//! that are not regular files. Each case runs the real binary, so that an abort (a
//! stack overflow) or a hang shows as a failed test, not as a crashed test runner.

use std::path::{Path, PathBuf};
use std::process::Command;

fn tvc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tvc"))
        .args(args)
        .output()
        .expect("run tvc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory of this test's own, under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tvc-bounds-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn arg(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

#[test]
fn a_program_whose_counts_do_not_fit_the_bytecode_writes_no_bundle() {
    let dir = scratch("operands");
    let params: Vec<String> = (0..256).map(|i| format!("p{i}")).collect();
    let args: String = (0..256).map(|i| format!("<arg>v{i}</arg>")).collect();
    let src = dir.join("calls.xml");
    std::fs::write(
        &src,
        format!(
            "<library><template name=\"f\" params=\"{}\"><task><instructions>{{{{p0}}}}</instructions></task></template>\n<template name=\"g\" params=\"y\"><call template=\"f\">{args}</call></template></library>",
            params.join(",")
        ),
    )
    .expect("write the source");
    let out = dir.join("calls.tvb");
    let (code, stdout, stderr) = tvc(&["compile", arg(&src), "-o", arg(&out)]);
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.contains("calls.xml:2:31: error: 256 arguments to one template call: the bytecode allows at most 255"),
        "{stderr}"
    );
    assert!(
        !out.exists(),
        "a bundle the machine would refuse was written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_device_named_on_the_command_line_is_refused_without_being_read() {
    // `/dev/zero` never ends: reading it whole used to fill the memory.
    let (code, _, stderr) = tvc(&["check", "/dev/zero"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.starts_with("/dev/zero:1:1: error: not a regular file (a device, FIFO or socket), so it is not read"),
        "{stderr}"
    );
}

#[test]
fn a_fifo_below_a_directory_is_refused_without_waiting_for_a_writer() {
    let dir = scratch("fifo");
    std::fs::create_dir(dir.join("nested")).expect("nested directory");
    let fifo = dir.join("nested/pipe.xml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    std::fs::write(
        dir.join("ok.xml"),
        "<task><instructions>x</instructions></task>",
    )
    .expect("write a template");
    // Opening the FIFO would block until something writes to it; nothing will.
    let (code, _, stderr) = tvc(&["check", arg(&dir)]);
    assert_eq!(code, 1, "{stderr}");
    let expected = format!(
        "{}:1:1: error: not a regular file (a device, FIFO or socket), so it is not read",
        fifo.display()
    );
    assert!(stderr.starts_with(&expected), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_symbolic_link_back_to_a_parent_directory_is_refused_not_followed_forever() {
    let dir = scratch("loop");
    std::fs::create_dir(dir.join("sub")).expect("sub directory");
    std::fs::write(
        dir.join("ok.xml"),
        "<task><instructions>x</instructions></task>",
    )
    .expect("write a template");
    std::os::unix::fs::symlink("..", dir.join("sub/up")).expect("make the link");
    let (code, _, stderr) = tvc(&["check", arg(&dir)]);
    assert_eq!(code, 2, "{stderr}");
    let real = std::fs::canonicalize(&dir).expect("real path");
    assert_eq!(
        stderr,
        format!(
            "tvc: error: {}: this directory is {} again, through a symbolic link: a directory loop is not followed\n",
            dir.join("sub/up").display(),
            real.display()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}
