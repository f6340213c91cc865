//! The `--help` of `tvc`, `tvm` and each of their commands, as recorded: moved or
//! reworded flags show up here before a user meets them.

use std::process::Command;

/// The NATS flags show the value of their variable in the help: none is set here.
const SHOWN_VARIABLES: [&str; 7] = [
    "NATS_CREDS",
    "NATS_TOKEN",
    "NATS_USER",
    "NATS_PASSWORD",
    "NATS_CA",
    "NATS_CERT",
    "NATS_KEY",
];

/// The help `cmd` prints for `args` then `--help`: it succeeds and says nothing on stderr.
fn help(mut cmd: Command, args: &[&str]) -> String {
    for name in SHOWN_VARIABLES {
        cmd.env_remove(name);
    }
    let out = cmd.args(args).arg("--help").output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "{args:?}: {stderr}"
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Compares `text` with `cli/tests/snapshots/help/NAME.snap`.
fn recorded(name: &str, text: &str) {
    insta::with_settings!({
        snapshot_path => "snapshots/help",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(name, text);
    });
}

#[test]
fn the_help_of_tvm_and_of_each_of_its_commands_is_as_recorded() {
    for command in [
        "", "run", "resume", "batch", "worker", "disasm", "info", "test",
    ] {
        let args: Vec<&str> = [command].into_iter().filter(|c| !c.is_empty()).collect();
        let text = help(crate::support::files::tvm(&[]), &args);
        let name = ["tvm", command].join(" ").trim().replace(' ', "_");
        recorded(&name, &text);
    }
}

#[test]
fn the_help_of_tvc_and_of_each_of_its_commands_is_as_recorded() {
    for command in ["", "check", "compile", "schema"] {
        let args: Vec<&str> = [command].into_iter().filter(|c| !c.is_empty()).collect();
        let text = help(Command::new(env!("CARGO_BIN_EXE_tvc")), &args);
        let name = ["tvc", command].join(" ").trim().replace(' ', "_");
        recorded(&name, &text);
    }
}
