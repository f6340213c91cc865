//! Constants. Each function lists the constants it uses while it is generated, on
//! whichever thread; the lists are then pooled in function order, equal constants
//! sharing one slot. Pooling in function order, each list in the order of its uses,
//! gives the pool a single pass over the functions would give.

use crate::ir::Expr;
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use tv_vm::bundle::Const;
use tv_vm::isa::Op;

/// One use of a constant, borrowed from the IR where it can be.
pub(super) enum Use<'ir> {
    Str(&'ir str),
    Owned(Const),
    /// The keys of an object: consecutive string slots of their own, never shared.
    Keys(&'ir [(String, Expr)]),
}

/// The constants one function uses, one entry per use; until they are pooled, its
/// instructions name constants by their position here.
pub(super) struct Uses<'ir>(Vec<Use<'ir>>);

impl<'ir> Uses<'ir> {
    /// Room for the constants of a typical function, which uses about ten.
    pub(super) fn new() -> Self {
        Uses(Vec::with_capacity(16))
    }

    pub(super) fn add(&mut self, u: Use<'ir>) -> u32 {
        self.0.push(u);
        // Each use is an instruction, and the function's length is checked.
        crate::ir::id(self.0.len() - 1)
    }
}

/// The constant pool of the bundle.
#[derive(Default)]
pub(super) struct Pool<'ir> {
    pub(super) items: Vec<Const>,
    /// Strings, the most common constants, are keyed by the IR's own text where it
    /// has it: a constant costs one copy, into the pool, however often it is used.
    strings: HashMap<Cow<'ir, str>, u32>,
    others: HashMap<Key, u32>,
}

/// A non-string constant as a map key: numbers by their bits, so `0.0` and `-0.0`
/// stay apart.
#[derive(PartialEq, Eq, Hash)]
enum Key {
    Null,
    Bool(bool),
    Num(u64),
}

impl<'ir> Pool<'ir> {
    /// Whether every constant's position fits the `u32` operands that name it; past
    /// that, positions stay at `u32::MAX` (see [`crate::ir::id`]).
    pub(super) fn fits(&self) -> bool {
        self.items.len() <= super::NUMBERED
    }

    /// Pools the constants of a function and renames them in its code.
    pub(super) fn take(&mut self, uses: Uses<'ir>, code: &mut [Op]) {
        let slots: Vec<u32> = uses
            .0
            .into_iter()
            .map(|u| match u {
                Use::Str(s) => self.string(Cow::Borrowed(s)),
                Use::Owned(c) => self.constant(c),
                Use::Keys(fields) => self.keys(fields),
            })
            .collect();
        for op in code {
            if let Some(c) = op.constant_mut() {
                // Every position was handed out by this function's `Uses`.
                if let Some(&slot) = slots.get(*c as usize) {
                    *c = slot;
                }
            }
        }
    }

    fn string(&mut self, s: Cow<'ir, str>) -> u32 {
        if let Some(&i) = self.strings.get(&*s) {
            return i;
        }
        let next = crate::ir::id(self.items.len());
        self.items.push(Const::Str(s.to_string()));
        self.strings.insert(s, next);
        next
    }

    fn constant(&mut self, c: Const) -> u32 {
        let key = match c {
            Const::Str(s) => return self.string(Cow::Owned(s)),
            Const::Null => Key::Null,
            Const::Bool(b) => Key::Bool(b),
            Const::Num(n) => Key::Num(n.to_bits()),
        };
        let next = crate::ir::id(self.items.len());
        let i = *self.others.entry(key).or_insert(next);
        if i == next {
            self.items.push(c);
        }
        i
    }

    fn keys(&mut self, fields: &'ir [(String, Expr)]) -> u32 {
        let first = crate::ir::id(self.items.len());
        self.items
            .extend(fields.iter().map(|(k, _)| Const::Str(k.clone())));
        first
    }
}
