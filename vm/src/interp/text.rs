//! Building text in place: a text template is an empty string on the stack that each
//! part is appended to. Literal and variable parts are appended where they are, so the
//! common template (words and variables) copies each byte once.

use crate::bundle::Const;
use crate::interp::{const_value, fault, Fault, Vm};
use crate::isa::Op;
use serde_json::Value;
use tv_stdlib::bounds::text_bound;
use tv_stdlib::values::{push_text, to_text};

impl Vm<'_> {
    /// Runs `TextConst`, `TextLocal` or `TextValue`, charging the bytes appended.
    pub(crate) fn text(&mut self, op: Op) -> Result<(), Fault> {
        self.reserve(self.part_bound(op)?)?;
        let base = self.frame_base()?;
        let appended = match op {
            Op::TextConst(c) => {
                let bundle = self.bundle;
                let part = bundle
                    .constants
                    .get(c as usize)
                    .ok_or_else(|| fault("no such constant"))?;
                let before = text_len(&self.stack, base);
                let text = top_text(&mut self.stack, base)?;
                match part {
                    Const::Str(s) => text.push_str(s),
                    other => push_text(text, &const_value(other)),
                }
                text.len() - before
            }
            Op::TextLocal(i) => {
                let frame = self.frames.last().ok_or_else(|| fault("no frame"))?;
                let part = frame
                    .locals
                    .get(i as usize)
                    .ok_or_else(|| fault("no such local"))?;
                let before = text_len(&self.stack, base);
                let text = top_text(&mut self.stack, base)?;
                push_text(text, part);
                text.len() - before
            }
            _ => {
                let part = self.pop()?;
                let before = text_len(&self.stack, base);
                let text = top_text(&mut self.stack, base)?;
                push_text(text, &part);
                text.len() - before
            }
        };
        self.charge(appended as u64)
    }
}

impl Vm<'_> {
    /// The most bytes appending the part of `op` can add, known before appending.
    fn part_bound(&self, op: Op) -> Result<u64, Fault> {
        Ok(match op {
            Op::TextConst(c) => match self.bundle.constants.get(c as usize) {
                Some(Const::Str(s)) => s.len() as u64,
                _ => 32,
            },
            Op::TextLocal(i) => {
                let frame = self.frames.last().ok_or_else(|| fault("no frame"))?;
                frame.locals.get(i as usize).map_or(0, text_bound)
            }
            _ => self.stack.last().map_or(0, text_bound),
        })
    }
}

/// The length of the text on top of the stack, where a value that is not yet text
/// counts as none: writing it out is charged like appending it.
fn text_len(stack: &[Value], base: usize) -> usize {
    match stack.get(base..).and_then(<[Value]>::last) {
        Some(Value::String(s)) => s.len(),
        _ => 0,
    }
}

/// The string on top of a frame's operand stack (any other value becomes its text).
fn top_text(stack: &mut [Value], base: usize) -> Result<&mut String, Fault> {
    let top = stack
        .get_mut(base..)
        .and_then(<[Value]>::last_mut)
        .ok_or_else(|| fault("the operand stack is empty"))?;
    if !top.is_string() {
        *top = Value::String(to_text(top));
    }
    if let Value::String(s) = top {
        // A template's text is usually a few hundred bytes: one allocation, not eight.
        if s.capacity() == 0 {
            s.reserve(256);
        }
    }
    match top {
        Value::String(s) => Ok(s),
        _ => Err(fault("text expected")),
    }
}
