use super::*;
use crate::config::RunConfig;
use tv_test_support::temp::TempDir;

/// The state of a batch over `out` in `dir`, opened as a batch run again opens it (so
/// that its rows' journals are looked for).
fn reopened(dir: &TempDir) -> State {
    let header = Header::new(
        Path::new("b.tvb"),
        "ab".repeat(32),
        "main",
        &RunConfig::defaults(),
    );
    let open = || {
        let (state, _) = State::open(
            &dir.path().join("state"),
            header.clone(),
            "cd",
            &dir.path().join("out.jsonl"),
            Start::Continue,
        )
        .expect("the state opens");
        state
    };
    open().close();
    open()
}

fn args() -> serde_json::Map<String, Value> {
    serde_json::Map::from_iter([("topic".to_string(), json!("tea"))])
}

#[test]
fn a_row_journal_with_no_whole_header_starts_afresh_and_a_damaged_one_fails_its_row() {
    let dir = TempDir::new("state-journals");
    let state = reopened(&dir);
    let torn = dir.path().join("state/0.journal");
    std::fs::write(&torn, r#"{"journal":2,"bund"#).unwrap();
    let journal = state.journal(0, args()).expect("a fresh journal");
    assert!(
        !journal.on_disk() && !torn.exists(),
        "the torn journal is gone"
    );

    let damaged = dir.path().join("state/1.journal");
    let header = serde_json::to_string(&state.header).unwrap();
    std::fs::write(&damaged, format!("{header}\nnot a record\n")).unwrap();
    let Err(e) = state.journal(1, args()) else {
        panic!("a damaged journal was resumed");
    };
    assert_eq!(e.kind(), &JournalKind::Damaged { line: Some(2) });
    assert!(damaged.exists(), "what the row kept stays for a look");
    state.close();
}
