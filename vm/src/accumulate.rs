//! The accumulated context of a sequence, reduce or loop (`accumulate_data`): the
//! results of earlier steps as text for the next step's context, a 200-character
//! summary each (`minimal`/`notes_only`) or content and notes (`full`/`full_output`).

use crate::shared::SharedText;
use serde_json::{Map, Value};
use std::sync::Arc;
use tv_stdlib::values::to_text;

/// Accumulated context is kept to the most recent steps that fit in this many bytes,
/// so a long sequence costs the same per step instead of ever more.
pub(crate) const MAX_ACCUMULATED: usize = 16 * 1024;

/// The accumulated context of one sequence, built step by step: each result is turned
/// into text once, when it first shows up, and every step's context is a window of the
/// same buffer ([`SharedText`]), so a step costs the text it adds, not the context it
/// passes on.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    full: bool,
    /// Results taken in so far, and how many of them were dropped for the cap.
    seen: usize,
    dropped: usize,
    /// The text of the kept steps is `text[start..]`; `lengths` has each kept step's
    /// length, oldest first. Dropped text is removed once it outweighs the cap, which
    /// moves the buffer once per 16 KiB appended rather than on every step.
    text: Arc<String>,
    start: usize,
    lengths: std::collections::VecDeque<usize>,
}

impl Accumulator {
    /// The context for the next step, given every result so far. Results are only ever
    /// appended; a shorter list, or another format, starts the context afresh.
    pub(crate) fn update(&mut self, results: &Value, full: bool) -> SharedText {
        let items = results.as_array().map(Vec::as_slice).unwrap_or_default();
        if items.len() < self.seen || full != self.full {
            *self = Accumulator {
                full,
                ..Accumulator::default()
            };
        }
        // Unshared once the previous step's request is answered; copied only if a
        // host still holds it.
        let text = Arc::make_mut(&mut self.text);
        for (i, r) in items.iter().enumerate().skip(self.seen) {
            let before = text.len();
            write_step(text, i, r, full);
            self.lengths.push_back(text.len() - before);
        }
        self.seen = items.len();
        while text.len() - self.start > MAX_ACCUMULATED && self.lengths.len() > 1 {
            self.start += self.lengths.pop_front().unwrap_or_default();
            self.dropped += 1;
        }
        if self.start > MAX_ACCUMULATED {
            text.drain(..self.start);
            self.start = 0;
        }
        let note = match self.dropped {
            0 => String::new(),
            n => format!("({n} earlier steps left out)\n"),
        };
        SharedText::window(&note, self.text.clone(), self.start)
    }
}

fn write_step(out: &mut String, i: usize, r: &Value, full: bool) {
    use std::fmt::Write as _;
    let content = r.get("content").map(text_of).unwrap_or_default();
    let n = i + 1;
    // Writing into a String cannot fail.
    let _ = if full {
        let notes = r.get("notes").map(notes_for_prompt).unwrap_or_default();
        write!(
            out,
            "Step {n} output:\n{content}\nStep {n} notes: {notes}\n"
        )
    } else {
        let summary = match content.char_indices().nth(200) {
            Some((end, _)) => &content[..end],
            None => &content,
        };
        writeln!(out, "Step {n}: {summary}")
    };
}

/// A step's notes as the next steps' prompts show them: usage, cache marks and warnings
/// are for the people running the workflow, not for the model
/// ([`crate::result::OPERATOR_NOTES`]).
fn notes_for_prompt(notes: &Value) -> std::borrow::Cow<'_, str> {
    use crate::result::OPERATOR_NOTES;
    match notes {
        Value::Object(m) if OPERATOR_NOTES.iter().any(|k| m.contains_key(*k)) => {
            let kept: Map<String, Value> = m
                .iter()
                .filter(|(k, _)| !OPERATOR_NOTES.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            std::borrow::Cow::Owned(Value::Object(kept).to_string())
        }
        other => text_of(other),
    }
}

/// A value as text, borrowed when it already is a string.
fn text_of(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(to_text(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The accumulated context of `results` built in one go, by a fresh accumulator.
    fn accumulate(results: &Value, full: bool) -> String {
        Accumulator::default().update(results, full).to_string()
    }

    fn complete(content: String) -> Value {
        crate::result::TaskResult::complete(content).into()
    }

    #[test]
    fn accumulated_context_keeps_the_latest_steps_within_its_cap() {
        let results: Vec<Value> = (0..1000)
            .map(|i| complete(format!("{i}:{}", "x".repeat(195))))
            .collect();
        let text = accumulate(&Value::Array(results), false);
        assert!(text.len() <= MAX_ACCUMULATED + 64, "{}", text.len());
        assert!(text.starts_with("(9"), "{}", &text[..40]);
        assert!(text
            .trim_end()
            .ends_with(&format!("Step 1000: 999:{}", "x".repeat(195))));
        let few = accumulate(&json!([complete("a".into()), complete("b".into())]), false);
        assert_eq!(few, "Step 1: a\nStep 2: b\n");
    }

    #[test]
    fn context_built_step_by_step_equals_the_context_built_in_one_go() {
        let mut acc = Accumulator::default();
        let mut results = Vec::new();
        for i in 0..400 {
            results.push(complete(format!("{i}:{}", "é".repeat(i % 150))));
            let all = Value::Array(results.clone());
            assert_eq!(
                acc.update(&all, false).to_string(),
                accumulate(&all, false),
                "step {i}"
            );
        }
        let all = Value::Array(results);
        assert_eq!(acc.update(&all, true).to_string(), accumulate(&all, true));
        let shorter = json!([complete("again".into())]);
        assert_eq!(
            acc.update(&shorter, true).to_string(),
            accumulate(&shorter, true)
        );
    }

    #[test]
    fn full_output_context_shows_each_steps_notes_without_its_usage() {
        let step = json!({"status": "COMPLETE", "content": "done",
            "notes": {"usage": {"calls": 1, "inputTokens": 812}, "cached": true, "contextFiles": ["a.rs"]}});
        let text = accumulate(&json!([step]), true);
        assert_eq!(
            text,
            "Step 1 output:\ndone\nStep 1 notes: {\"contextFiles\":[\"a.rs\"]}\n"
        );
    }

    #[test]
    fn a_context_still_held_by_a_host_is_not_changed_by_the_next_step() {
        let mut acc = Accumulator::default();
        let mut results = vec![complete("a".repeat(MAX_ACCUMULATED))];
        let held = acc.update(&Value::Array(results.clone()), true);
        let before = held.to_string();
        assert!(before.starts_with("Step 1 output:\naaa"));
        results.push(complete("b".into()));
        let next = acc.update(&Value::Array(results), true);
        assert_eq!(held.to_string(), before);
        assert_eq!(
            next.to_string(),
            "(1 earlier steps left out)\nStep 2 output:\nb\nStep 2 notes: {}\n"
        );
    }
}
