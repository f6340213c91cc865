//! A bundle's functions, nearly all of its bytes, encoded by hand. The bytes are
//! exactly those of bincode's serde encoding with the bundle's configuration (integers
//! of variable length, little endian), which is what the reader decodes; this only
//! skips serde's value-by-value dispatch, which took most of the encoding's time. The
//! tests below compare the two encodings on every opcode at every operand width.

use super::{Function, Loc, MatchInfo, Param};
use crate::isa::{CmpOp, Op, Quote};

/// Appends the encoding of `f`.
pub(crate) fn function(f: &Function, out: &mut Vec<u8>) {
    // Fields in declaration order, as the derived `Serialize` writes them; the pattern
    // names every field, so a new one cannot be left out here.
    let Function {
        name,
        params,
        locals,
        code,
        lines,
        returns,
        matchable,
    } = f;
    string(name, out);
    uint(params.len() as u64, out);
    for Param { name, ty } in params {
        string(name, out);
        string(ty, out);
    }
    uint(u64::from(*locals), out);
    uint(code.len() as u64, out);
    for &o in code {
        op(o, out);
    }
    uint(lines.len() as u64, out);
    for &Loc { file, line, col } in lines {
        uint(u64::from(file), out);
        uint(u64::from(line), out);
        uint(u64::from(col), out);
    }
    string(returns, out);
    match matchable {
        None => out.push(0),
        Some(MatchInfo {
            task_type,
            subtype,
            description,
        }) => {
            out.push(1);
            string(task_type, out);
            match subtype {
                None => out.push(0),
                Some(s) => {
                    out.push(1);
                    string(s, out);
                }
            }
            string(description, out);
        }
    }
}

/// An unsigned integer of any width: one byte up to 250, else a marker byte and the
/// value in the fewest of 2, 4 or 8 bytes.
fn uint(v: u64, out: &mut Vec<u8>) {
    if v <= 250 {
        out.push(v as u8);
    } else if let Ok(v) = u16::try_from(v) {
        out.push(251);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = u32::try_from(v) {
        out.push(252);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        out.push(253);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn string(s: &str, out: &mut Vec<u8>) {
    uint(s.len() as u64, out);
    out.extend_from_slice(s.as_bytes());
}

/// An opcode: its variant's index, then its operands (a `u8` and a `bool` as one byte).
fn op(o: Op, out: &mut Vec<u8>) {
    use Op::*;
    // The indices are the variants' places in `Op`, which only ever grows at its end;
    // all are below 251, so each is one byte.
    match o {
        Const(a) => with(0, a.into(), out),
        Load(a) => with(1, a.into(), out),
        Store(a) => with(2, a.into(), out),
        Pop => out.push(3),
        Dup => out.push(4),
        Field(a) => with(5, a.into(), out),
        Index(a) => with(6, a.into(), out),
        Not => out.push(7),
        Compare(c) => with(8, cmp(c), out),
        Jump(a) => with(9, a.into(), out),
        JumpIfFalse(a) => with(10, a.into(), out),
        JumpIfTrue(a) => with(11, a.into(), out),
        Concat(n) => with(12, n.into(), out),
        Builtin(f, n) => {
            with(13, f.into(), out);
            out.push(n);
        }
        Call(f, n) => {
            with(14, f.into(), out);
            out.push(n);
        }
        Return => out.push(15),
        Value => out.push(16),
        Atomic(t) => with(17, t.into(), out),
        Script(t) => with(18, t.into(), out),
        MakeArray(n) => with(19, n.into(), out),
        MakeObject(k, n) => {
            with(20, k.into(), out);
            uint(n.into(), out);
        }
        Complete => out.push(21),
        JumpIfFailed(a) => with(22, a.into(), out),
        FailSequence(s, n) => {
            with(23, s.into(), out);
            uint(n.into(), out);
        }
        Append(l) => with(24, l.into(), out),
        IndexDyn => out.push(25),
        LoopGuard => out.push(26),
        Accumulate(b) => out.extend_from_slice(&[27, b.into()]),
        FailReduce => out.push(28),
        CheckReturn(c) => with(29, c.into(), out),
        ReturnIfFailed => out.push(30),
        ShellQuote => out.push(31),
        Increment(l) => with(32, l.into(), out),
        Gather(n) => with(33, n.into(), out),
        AccumulateLocal(l, b) => {
            with(34, l.into(), out);
            out.push(b.into());
        }
        KeepValue(l) => with(35, l.into(), out),
        TextConst(c) => with(36, c.into(), out),
        TextLocal(l) => with(37, l.into(), out),
        TextValue => out.push(38),
        AtomicAccumulated(t, l, b) => {
            with(39, t.into(), out);
            uint(l.into(), out);
            out.push(b.into());
        }
        Evaluation => out.push(40),
        EndLoop(mode) => out.extend_from_slice(&[41, mode]),
        ShellQuoteIn(q) => out.extend_from_slice(&[42, quote(q)]),
        AtomicFocused(t) => with(43, t.into(), out),
        Finish(t) => with(44, t.into(), out),
    }
}

/// A variant index and the variant's first operand.
fn with(index: u8, operand: u64, out: &mut Vec<u8>) {
    out.push(index);
    uint(operand, out);
}

fn quote(q: Quote) -> u8 {
    match q {
        Quote::Bare => 0,
        Quote::Double => 1,
        Quote::Single => 2,
    }
}

fn cmp(c: CmpOp) -> u64 {
    match c {
        CmpOp::Eq => 0,
        CmpOp::Ne => 1,
        CmpOp::Lt => 2,
        CmpOp::Le => 3,
        CmpOp::Gt => 4,
        CmpOp::Ge => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn config() -> impl bincode::config::Config {
        bincode::config::standard()
    }

    fn by_serde<T: serde::Serialize>(v: &T) -> Vec<u8> {
        bincode::serde::encode_to_vec(v, config()).expect("encodes")
    }

    fn by_hand(o: Op) -> Vec<u8> {
        let mut out = Vec::new();
        op(o, &mut out);
        out
    }

    /// Every opcode whose operands can be read from `operands`, found without listing
    /// them: a variant index followed by operand bytes decodes to an opcode when the
    /// index names a variant and the bytes suit its operands.
    fn every_opcode(operands: &[u8]) -> Vec<Op> {
        (0..=u8::MAX)
            .filter_map(|index| {
                let bytes = [&[index][..], operands].concat();
                bincode::serde::decode_from_slice::<Op, _>(&bytes, config())
                    .ok()
                    .map(|(o, _)| o)
            })
            .collect()
    }

    #[test]
    fn every_opcode_at_every_operand_width_is_encoded_as_serde_encodes_it() {
        // Operands of one byte, then two, four and eight: 250 and 251 are where the
        // one-byte form ends.
        let widths: [&[u8]; 4] = [
            &[1, 1, 1, 1, 1, 1],
            &[250, 0, 1, 250, 1, 0],
            &[251, 0xff, 0xff, 0, 251, 0x34, 0x12, 1],
            &[252, 0x78, 0x56, 0x34, 0x12, 252, 0x78, 0x56, 0x34, 0x12, 1],
        ];
        let all = every_opcode(widths[0]).len();
        assert!(all >= 40, "only {all} opcodes decoded");
        let mut seen = 0;
        for operands in widths {
            for o in every_opcode(operands) {
                assert_eq!(by_hand(o), by_serde(&o), "{o:?}");
                seen += 1;
            }
        }
        // Comparisons and flags have no operands of more than one byte.
        assert!(seen > 3 * all, "{seen} opcodes compared");
    }

    #[test]
    fn a_function_with_every_field_filled_is_encoded_as_serde_encodes_it() {
        let long = "n".repeat(300);
        let functions = [
            Function {
                name: long.clone(),
                params: vec![
                    Param {
                        name: "topic".into(),
                        ty: "string".into(),
                    };
                    260
                ],
                locals: 70_000u32 as u16,
                code: every_opcode(&[7, 7, 1, 1]),
                lines: vec![
                    Loc {
                        file: 1,
                        line: 70_000,
                        col: 251
                    };
                    3
                ],
                returns: "object".into(),
                matchable: Some(MatchInfo {
                    task_type: "atomic".into(),
                    subtype: Some("review".into()),
                    description: long,
                }),
            },
            Function {
                name: "f".into(),
                params: Vec::new(),
                locals: 0,
                code: Vec::new(),
                lines: Vec::new(),
                returns: "any".into(),
                matchable: Some(MatchInfo {
                    task_type: "atomic".into(),
                    subtype: None,
                    description: String::new(),
                }),
            },
        ];
        for f in functions {
            let mut out = Vec::new();
            function(&f, &mut out);
            assert_eq!(out, by_serde(&f));
        }
    }

    proptest! {
        #[test]
        fn any_bytes_that_decode_to_an_opcode_encode_back_as_serde_encodes_it(
            bytes in proptest::collection::vec(any::<u8>(), 1..12)
        ) {
            if let Ok((o, _)) = bincode::serde::decode_from_slice::<Op, _>(&bytes, config()) {
                prop_assert_eq!(by_hand(o), by_serde(&o));
            }
        }
    }
}
