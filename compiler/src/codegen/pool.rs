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
pub(super) struct Pool {
    pub(super) items: Vec<Const>,
    /// Strings, the most common constants, are found by a hash of their text: the
    /// first string of each hash by its slot, so a constant costs one copy, into the
    /// pool, however often it is used, and the pool outlives the IR it was taken from
    /// (`tvc compile` frees each window's IR once it is generated).
    strings: HashMap<u64, u32>,
    /// Strings whose hash an earlier, different string has.
    clashes: HashMap<String, u32>,
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

impl Pool {
    /// Whether every constant's position fits the `u32` operands that name it; past
    /// that, positions stay at `u32::MAX` (see [`crate::ir::id`]).
    pub(super) fn fits(&self) -> bool {
        self.items.len() <= super::NUMBERED
    }

    /// Pools the constants of a function and renames them in its code.
    pub(super) fn take(&mut self, uses: Uses<'_>, code: &mut [Op]) {
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

    fn string(&mut self, s: Cow<'_, str>) -> u32 {
        use std::hash::BuildHasher;
        let hash = rustc_hash::FxBuildHasher.hash_one(&*s);
        let next = crate::ir::id(self.items.len());
        match self.strings.get(&hash) {
            None => {
                self.strings.insert(hash, next);
            }
            Some(&i) if matches!(self.items.get(i as usize), Some(Const::Str(t)) if *t == *s) => {
                return i;
            }
            Some(_) => match self.clashes.get(&*s) {
                Some(&i) => return i,
                None => {
                    self.clashes.insert(s.to_string(), next);
                }
            },
        }
        self.items.push(Const::Str(s.into_owned()));
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

    fn keys(&mut self, fields: &[(String, Expr)]) -> u32 {
        let first = crate::ir::id(self.items.len());
        self.items
            .extend(fields.iter().map(|(k, _)| Const::Str(k.clone())));
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_share_a_slot_and_a_string_whose_hash_clashes_gets_its_own() {
        use std::hash::BuildHasher;
        let mut pool = Pool::default();
        let a = pool.string(Cow::Borrowed("a"));
        assert_eq!(pool.string(Cow::Owned("a".to_string())), a);
        // As if "b" hashed as "a" does: it must not be taken for "a".
        let b_hash = rustc_hash::FxBuildHasher.hash_one("b");
        pool.strings.insert(b_hash, a);
        let b = pool.string(Cow::Borrowed("b"));
        assert_ne!(b, a);
        assert_eq!(pool.string(Cow::Borrowed("b")), b);
        assert_eq!(pool.string(Cow::Borrowed("a")), a);
        assert_eq!(pool.items, [Const::Str("a".into()), Const::Str("b".into())]);
    }
}
