//! The user's edit-run loop (DESIGN §17): `tvm run` of templates compiled in memory,
//! `tvm info`, `--output text`, and settings from a `.env` in the working directory.

use crate::support::files::{self, TempDir};
use crate::support::http::{Reply, Server};
use serde_json::Value;

/// A workflow of one LLM step and one script step, with documented inputs.
const WORKFLOW: &str = r#"<library>
  <task name="greet" type="sequential">
    <description>Greet someone, then count the words</description>
    <inputs>
      <input name="who">Whom to greet</input>
      <input name="times" type="number">How many greetings</input>
    </inputs>
    <steps>
      <task><instructions>Greet {{who}} {{times}} times</instructions></task>
      <task type="script">
        <script_execution><command>printf '%s' {{output}} | wc -w</command></script_execution>
      </task>
    </steps>
  </task>
  <template name="shout" params="text:string" returns="string">
    <task><instructions>Shout {{text}}</instructions><model>anthropic:claude-sonnet-4-5</model></task>
  </template>
  <type name="Verdict">{ok: boolean, why?: string}</type>
  <template name="judge" params="text:string">
    <task><instructions>Is {{text}} kind?</instructions><output_format type="json" schema="Verdict"/></task>
  </template>
</library>
"#;

/// `tvm run XML --entry shout --arg text=hi`, then `rest`.
fn shout<'a>(xml: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", xml, "--entry", "shout", "--arg", "text=hi"];
    args.extend_from_slice(rest);
    args
}

fn output(cmd: &mut std::process::Command) -> (i32, String, String) {
    let out = cmd.output().expect("run tvm");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn templates_run_directly_as_their_compiled_bundle_runs() {
    let dir = TempDir::new("run-xml");
    dir.write("templates/greet.xml", WORKFLOW);
    let xml = dir
        .path()
        .join("templates/greet.xml")
        .to_string_lossy()
        .into_owned();
    let folder = dir.path().join("templates").to_string_lossy().into_owned();
    let bundle = files::compiled(dir.path(), WORKFLOW)
        .to_string_lossy()
        .into_owned();
    let args = [
        "--entry",
        "greet",
        "--arg",
        "who=Ada",
        "--arg",
        "times=2",
        "--provider",
        "echo",
    ];
    let mut results = Vec::new();
    for program in [&xml, &bundle, &folder] {
        let mut all = vec!["run", program.as_str()];
        all.extend_from_slice(&args);
        let (code, stdout, stderr) = files::run_tvm(&all, &[]);
        assert_eq!(code, 0, "{program}: {stderr}");
        let r: Value = serde_json::from_str(&stdout).expect("a result");
        results.push(r["content"].clone());
    }
    // echo answers with the prompt: "Prompt:\nGreet Ada 2 times" is 5 words.
    assert_eq!(
        results,
        [Value::from("5\n"), Value::from("5\n"), Value::from("5\n")]
    );
}

#[test]
fn templates_with_errors_are_reported_as_tvc_reports_them_and_nothing_runs() {
    let dir = TempDir::new("run-xml-errors");
    let marker = dir.path().join("ran");
    let broken = format!(
        "<library>\n  <task name=\"t\" type=\"script\">\n    <script_execution><command>touch {}</command></script_execution>\n  </task>\n  <task name=\"u\"><instructions>{{{{nope}}}}</instructions></task>\n</library>\n",
        marker.display()
    );
    dir.write("broken.xml", broken);
    let xml = dir.path().join("broken.xml").to_string_lossy().into_owned();
    let (code, stdout, stderr) =
        files::run_tvm(&["run", &xml, "--entry", "t"], &[("NO_COLOR", "1")]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(&format!("{xml}:5:34: error: undeclared variable `nope`")),
        "{stderr}"
    );
    assert!(
        stderr.contains("tvm: error: the templates have an error, so nothing was run"),
        "{stderr}"
    );
    assert!(
        !marker.exists(),
        "a script ran although the templates had errors"
    );
}

#[test]
fn a_journaled_run_of_templates_resumes_from_them_and_refuses_them_once_edited() {
    let dir = TempDir::new("run-xml-journal");
    dir.write("greet.xml", WORKFLOW);
    let xml = dir.path().join("greet.xml").to_string_lossy().into_owned();
    let journal = dir
        .path()
        .join("run.journal")
        .to_string_lossy()
        .into_owned();
    let run = shout(&xml, &["--provider", "echo", "--journal", &journal]);
    let (code, first, stderr) = files::run_tvm(&run, &[]);
    assert_eq!(code, 0, "{stderr}");
    let (code, again, stderr) = files::run_tvm(&["resume", &journal], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(first, again);
    dir.write("greet.xml", WORKFLOW.replace("Shout", "Whisper"));
    let (code, _, stderr) = files::run_tvm(&["resume", &journal], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("it was recompiled or replaced"), "{stderr}");
}

#[test]
fn text_output_prints_the_final_content_alone_and_a_failure_on_stderr() {
    let dir = TempDir::new("run-text");
    dir.write("greet.xml", WORKFLOW);
    let xml = dir.path().join("greet.xml").to_string_lossy().into_owned();
    let (code, stdout, stderr) = files::run_tvm(
        &shout(&xml, &["--provider", "echo", "--output", "text"]),
        &[],
    );
    assert_eq!(
        (code, stdout.as_str()),
        (0, "Prompt:\nShout hi\n"),
        "{stderr}"
    );
    let cassette = dir.path().join("empty.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let cassette = cassette.to_string_lossy().into_owned();
    let (code, stdout, stderr) = files::run_tvm(
        &shout(
            &xml,
            &[
                "--provider",
                "replay",
                "--cassette",
                &cassette,
                "--output",
                "text",
            ],
        ),
        &[],
    );
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.contains("tvm: the run failed: the cassette has no reply"),
        "{stderr}"
    );
}

#[test]
fn a_full_disk_under_text_output_ends_the_run_with_a_message() {
    let dir = TempDir::new("run-text-full");
    dir.write("greet.xml", WORKFLOW);
    let xml = dir.path().join("greet.xml").to_string_lossy().into_owned();
    let full = std::fs::File::create("/dev/full").expect("/dev/full");
    let mut cmd = files::tvm(&shout(&xml, &["--provider", "echo", "--output", "text"]));
    let (code, _, stderr) = output(cmd.stdout(full));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("tvm: error: cannot write the output: No space left on device"),
        "{stderr}"
    );
}

#[test]
fn a_stderr_that_cannot_be_written_loses_its_messages_not_the_run() {
    let dir = TempDir::new("run-stderr-full");
    // A warning at compile time and a failed run's message: both go to stderr.
    dir.write("greet.xml", WORKFLOW.replace("<library>", "<library>\n  <task name=\"u\"><instructions>x</instructions><manual_xml>true</manual_xml></task>"));
    let xml = dir.path().join("greet.xml").to_string_lossy().into_owned();
    let cassette = dir.path().join("empty.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let cassette = cassette.to_string_lossy().into_owned();
    let args = shout(&xml, &["--provider", "replay", "--cassette", &cassette]);
    let full = std::fs::File::create("/dev/full").expect("/dev/full");
    let (code, stdout, _) = output(files::tvm(&args).stderr(full));
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("\"status\": \"FAILED\""), "{stdout}");
}

#[test]
fn info_lists_entry_points_with_typed_documented_parameters_the_types_and_the_models_named() {
    let dir = TempDir::new("info");
    let bundle = files::compiled(dir.path(), WORKFLOW)
        .to_string_lossy()
        .into_owned();
    let (code, stdout, stderr) = files::run_tvm(&["info", &bundle], &[]);
    assert_eq!(code, 0, "{stderr}");
    for line in [
        "greet(who: any, times: number) -> string",
        "    Greet someone, then count the words",
        "    --arg who    any     Whom to greet",
        "    --arg times  number  How many greetings",
        "shout(text: string) -> string",
        "judge(text: string) -> Verdict",
        "types:",
        "    Verdict = {ok: boolean, why?: string}",
        "    anthropic:claude-sonnet-4-5 (1 task)",
        "    (the run's default model) (2 tasks)",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "no line {line:?} in:\n{stdout}"
        );
    }
    let (code, stdout, _) = files::run_tvm(&["info", &bundle, "--json"], &[]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["entries"][0]["params"][1]["type"], "number");
    assert_eq!(v["entries"][0]["params"][0]["doc"], "Whom to greet");
    assert_eq!(v["entries"][2]["returns"], "Verdict");
    assert_eq!(v["types"]["Verdict"], "{ok: boolean, why?: string}");
    // Models are records, never a display string used as a key.
    let models = v["models"].as_array().expect("a list of models");
    assert!(models.contains(&serde_json::json!(
        {"provider": "anthropic", "model": "claude-sonnet-4-5", "tasks": 1}
    )));
    assert!(models.contains(&serde_json::json!({"provider": null, "model": null, "tasks": 2})));
}

/// An entry point calling a helper, and a loop whose director's reply is typed.
const HELPERS: &str = r#"<library>
  <type name="Draft">{title: string, body: string}</type>
  <template name="summarize" params="text:string">
    <task><description>Summarize a text</description><instructions>Summarize {{text}}</instructions></task>
  </template>
  <task name="review" type="sequential">
    <description>Review a change</description>
    <inputs><input name="diff" type="string">The change</input></inputs>
    <steps>
      <call template="summarize"><arg>diff</arg></call>
      <task><instructions>Review {{output}}</instructions></task>
    </steps>
  </task>
  <task name="polish" type="director_evaluator_loop">
    <description>Draft until the judge agrees</description>
    <inputs><input name="topic">What to write about</input></inputs>
    <director><task><instructions>Write about {{topic}}</instructions><output_format type="json" schema="Draft"/></task></director>
    <evaluator><task><instructions>Judge {{director_result}}</instructions></task></evaluator>
  </task>
</library>
"#;

#[test]
fn info_lists_what_other_items_call_apart_and_a_loop_returns_its_directors_type() {
    let dir = TempDir::new("info-helpers");
    let bundle = files::compiled(dir.path(), HELPERS)
        .to_string_lossy()
        .into_owned();
    let (code, stdout, stderr) = files::run_tvm(&["info", &bundle], &[]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("no line {line:?} in:\n{stdout}"))
    };
    let (review, polish) = (
        at("review(diff: string) -> string"),
        at("polish(topic: any) -> Draft"),
    );
    let apart = at("also callable (called by the items above; run one with --entry NAME):");
    let helper = at("    summarize(text: string) -> string");
    assert!(
        review < apart && polish < apart && apart < helper,
        "{stdout}"
    );
    assert_eq!(lines[helper + 1], "        Summarize a text");
    assert_eq!(lines[helper + 2], "        --arg text  string");
    assert_eq!(lines[helper + 3], "        called by review");
    let (code, stdout, _) = files::run_tvm(&["info", &bundle, "--json"], &[]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    let names = |key: &str| -> Vec<String> {
        (v[key].as_array().expect(key).iter())
            .map(|e| e["name"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(names("entries"), ["review", "polish"]);
    assert_eq!(names("alsoCallable"), ["summarize"]);
    assert_eq!(
        v["alsoCallable"][0]["calledBy"],
        serde_json::json!(["review"])
    );
    assert_eq!(v["entries"][1]["returns"], "Draft");
    // `tvm run` without --entry names the same entry points.
    let (code, _, stderr) = files::run_tvm(&["run", &bundle, "--provider", "echo"], &[]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "tvm: error: the bundle has several entry points; choose one with --entry \
         (review, polish; also callable: summarize)\n"
    );
}

#[test]
fn a_dotenv_file_gives_keys_and_settings_the_environment_wins_and_a_typo_is_named() {
    let rt = files::runtime();
    let server = rt.block_on(Server::scripted(vec![Reply::completion("Hello.", 3, 2)]));
    let dir = TempDir::new("dotenv");
    dir.write("greet.xml", WORKFLOW);
    dir.write(
        ".env",
        format!(
            "# settings for this folder\nexport OPENAI_API_KEY=sk-from-dotenv\nOPENAI_BASE_URL=\"{}/v1\"\nTVM_PROVIDER=openai # not echo\nTVM_MODEL='from-dotenv'\nPATH=/nowhere\nTVM_MODLE=value-of-a-typo\n",
            server.url()
        ),
    );
    let run = [
        "run",
        "greet.xml",
        "--entry",
        "shout",
        "--arg",
        "text=hi",
        "--force-model",
        "openai:m",
    ];
    let (code, stdout, stderr) = output(files::tvm(&run).current_dir(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"Hello.\""), "{stdout}");
    let [sent] = &server.requests()[..] else {
        panic!("one request expected")
    };
    assert_eq!(sent.header("authorization"), Some("Bearer sk-from-dotenv"));
    // A misspelt setting is named, by its line and name, never by its value.
    assert!(
        stderr.contains("tvm: warning: .env:7: `TVM_MODLE` is not a setting of tvm"),
        "{stderr}"
    );
    assert!(!stderr.contains("value-of-a-typo"), "{stderr}");
    // The environment wins over the file; `PATH` in the file was not taken, or no
    // script could have been found at all.
    let (code, stdout, stderr) = output(
        files::tvm(&[
            "run",
            "greet.xml",
            "--entry",
            "greet",
            "--arg",
            "who=x",
            "--arg",
            "times=1",
        ])
        .current_dir(dir.path())
        .env("TVM_PROVIDER", "echo"),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"content\": \"5\\n\""), "{stdout}");
    assert_eq!(server.hits(), 1);
    assert!(!stderr.contains("sk-from-dotenv"), "{stderr}");
}

#[test]
fn a_malformed_dotenv_is_named_by_its_line_and_its_values_never_printed() {
    let dir = TempDir::new("dotenv-bad");
    dir.write("greet.xml", WORKFLOW);
    dir.write(".env", "TVM_PROVIDER=echo\nsk-live-0123456789\n");
    let (code, stdout, stderr) = output(files::tvm(&["info", "greet.xml"]).current_dir(dir.path()));
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert_eq!(stderr, "tvm: error: .env:2: not NAME=VALUE\n");
    dir.write(".env", format!("TVM_X=\"{}\"\n", "k".repeat(1 << 20)));
    let (code, _, stderr) = output(files::tvm(&["info", "greet.xml"]).current_dir(dir.path()));
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "tvm: error: .env is larger than 1 MiB, the most a .env file may have\n"
    );
}
