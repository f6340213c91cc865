//! A bundle the verifier has accepted. Only [`Verified::new`] (and
//! [`super::Bundle::from_bytes`], which calls it) makes one, so a machine that takes a
//! `&Verified` runs nothing unchecked: the interpreter's cheap index checks rely on
//! what the verifier proved.
//!
//! Here too is the choice of the entry point a run starts at, which `tvm run`, `tvm
//! batch` and `tvm worker` share: the one named, else the bundle's only entry point,
//! where entry points are, as `tvm info` lists them, the items no other item calls.

use super::{verify, Bundle, Entry};
use crate::isa::Op;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Deref;

/// A verified bundle. It derefs to its [`Bundle`] for reading; it cannot be changed,
/// since a change could break what was proved (take it apart with
/// [`Verified::into_bundle`] and verify the result again). Its field is private, so no
/// code outside this module wraps a bundle without the verifier:
///
/// ```compile_fail,E0423
/// fn unchecked(b: tv_vm::bundle::Bundle) -> tv_vm::bundle::Verified {
///     tv_vm::bundle::Verified(b)
/// }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Verified(Bundle);

/// Why the verifier refused a bundle: an index out of range, a stack that does not
/// balance, ... (see [`verify`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError(pub(super) String);

impl VerifyError {
    /// What the verifier found, without the "the bundle is invalid" of its display.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for VerifyError {}

impl Verified {
    /// Verifies `bundle`.
    pub fn new(bundle: Bundle) -> Result<Verified, VerifyError> {
        verify::verify(&bundle).map_err(VerifyError)?;
        Ok(Verified(bundle))
    }

    /// The bundle, to change it (it has to be verified again before it runs).
    pub fn into_bundle(self) -> Bundle {
        self.0
    }

    /// The function a run starts at: the entry named `name`, else the bundle's only
    /// entry, else its only entry point that no other item calls.
    pub fn entry_point(&self, name: Option<&str>) -> Result<u32, EntryError> {
        let (roots, called) = self.entry_points();
        let names = || Names {
            roots: roots.iter().map(|n| n.to_string()).collect(),
            called: called.iter().map(|n| n.to_string()).collect(),
        };
        match name {
            Some(n) => self
                .entry(n)
                .map(|e| e.function)
                .ok_or_else(|| EntryError::Unknown(n.to_string(), names())),
            None if self.entries.len() == 1 => Ok(self.entries[0].function),
            None => match roots[..] {
                [only] => self
                    .entry(only)
                    .map(|e| e.function)
                    .ok_or_else(|| EntryError::Ambiguous(names())),
                _ => Err(EntryError::Ambiguous(names())),
            },
        }
    }
}

impl Deref for Verified {
    type Target = Bundle;

    fn deref(&self) -> &Bundle {
        &self.0
    }
}

/// Why no entry point was chosen. Its display lists the entry points.
/// Why a run has no entry point to start at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryError {
    /// No entry has the name given.
    Unknown(String, Names),
    /// No name was given, and the bundle has several entry points.
    Ambiguous(Names),
}

/// A bundle's entry points by name: those no other item calls, then the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// The entry points: the items no other item calls.
    pub roots: Vec<String>,
    /// The items another item calls, which a run may still start at.
    pub called: Vec<String>,
}

impl fmt::Display for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.roots.join(", "))?;
        if !self.called.is_empty() {
            write!(f, "; also callable: {}", self.called.join(", "))?;
        }
        Ok(())
    }
}

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryError::Unknown(name, names) => {
                write!(
                    f,
                    "no entry point `{name}` in the bundle (entries: {names})"
                )
            }
            EntryError::Ambiguous(names) => write!(
                f,
                "the bundle has several entry points; choose one with --entry ({names})"
            ),
        }
    }
}

impl std::error::Error for EntryError {}

impl Bundle {
    /// Each entry (in the bundle's order) with the items that call it. A function's
    /// calls count for the item it belongs to: the bodies an item runs apart are named
    /// after it (`item~1`, `item~1~2`), so a call from one of them is a call from the
    /// item. An item calling only itself is not called by another.
    pub fn entry_callers(&self) -> Vec<(&Entry, BTreeSet<&str>)> {
        let mut callers: BTreeMap<u32, BTreeSet<&str>> = BTreeMap::new();
        for f in &self.functions {
            let owner = f.name.split('~').next().unwrap_or(&f.name);
            for op in &f.code {
                if let Op::Call(callee, _) = op {
                    let callee_name = self.functions.get(*callee as usize).map(|c| &c.name);
                    if callee_name.is_some_and(|n| n != owner) {
                        callers.entry(*callee).or_default().insert(owner);
                    }
                }
            }
        }
        self.entries
            .iter()
            .filter(|e| (e.function as usize) < self.functions.len())
            .map(|e| (e, callers.remove(&e.function).unwrap_or_default()))
            .collect()
    }

    /// The names of the items no other item calls (the entry points), and of those
    /// another item calls, each in the bundle's order.
    pub fn entry_points(&self) -> (Vec<&str>, Vec<&str>) {
        let (called, roots): (Vec<_>, Vec<_>) = self
            .entry_callers()
            .into_iter()
            .partition(|(_, by)| !by.is_empty());
        (
            roots.into_iter().map(|(e, _)| e.name.as_str()).collect(),
            called.into_iter().map(|(e, _)| e.name.as_str()).collect(),
        )
    }
}
