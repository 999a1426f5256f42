//! The function registry: every [`remote_fn!`](crate::remote_fn) of the
//! program, collected at start with `inventory`, sorted by name. A
//! function's id is its index in that order, so ranks that run the same
//! program agree on every id without exchanging names; `World::init` checks
//! that they do by comparing a hash of the whole table (names, kinds and
//! signatures as written) and, when the hashes differ, names a function
//! that differs.

use crate::error::CallError;
use crate::join::Ctx;
use std::any::Any;
use std::sync::OnceLock;

/// What a stub returns: `Ok` once the result is appended to the output.
pub(crate) type StubResult = Result<(), CallError>;

/// The stub of a method (see [`Handler::Method`]).
pub(crate) type MethodStub = fn(&mut dyn Any, &[u8], &mut Vec<u8>) -> StubResult;

/// The type-erased entry point of a registered function (its *stub*):
/// decodes the arguments, runs the body, appends the encoded result to the
/// output buffer (which already holds the reply's header).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum Handler {
    /// `fn(A) -> R`.
    Call(fn(&[u8], &mut Vec<u8>) -> StubResult),
    /// `fn(A, Bulk) -> R`.
    Bulk(fn(&[u8], Vec<u8>, &mut Vec<u8>) -> StubResult),
    /// `fn(&mut T, A) -> R`.
    Method(MethodStub),
    /// `fn(Ctx, A) -> R`.
    Task(for<'a> fn(Ctx<'a>, &[u8], &mut Vec<u8>) -> StubResult),
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind())
    }
}

impl Handler {
    fn kind(&self) -> &'static str {
        match self {
            Handler::Call(_) => "fn",
            Handler::Bulk(_) => "bulk fn",
            Handler::Method(_) => "method",
            Handler::Task(_) => "task",
        }
    }
}

/// One registered function, as `remote_fn!` submits it.
#[doc(hidden)]
pub struct Entry {
    /// The name (the function's identifier as written).
    pub name: &'static str,
    /// The argument types as written.
    pub args: &'static str,
    /// The result type as written.
    pub result: &'static str,
    /// The stub.
    pub handler: Handler,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.signature())
    }
}

impl Entry {
    /// `kind name(args) -> result`: what the ranks compare.
    pub fn signature(&self) -> String {
        format!(
            "{} {}({}) -> {}",
            self.handler.kind(),
            self.name,
            self.args,
            self.result
        )
    }
}

inventory::collect!(Entry);

/// The sorted table of a program's remote functions.
#[derive(Debug)]
pub struct Registry {
    entries: Vec<&'static Entry>,
    hash: u64,
}

impl Registry {
    /// This program's registry, built on first use.
    /// `Err` names a function defined twice.
    pub fn global() -> Result<&'static Registry, String> {
        static GLOBAL: OnceLock<Result<Registry, String>> = OnceLock::new();
        GLOBAL
            .get_or_init(|| Registry::from_entries(inventory::iter::<Entry>.into_iter().collect()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A registry of these entries; `Err` names a duplicate name.
    pub fn from_entries(mut entries: Vec<&'static Entry>) -> Result<Registry, String> {
        entries.sort_by(|a, b| a.name.cmp(b.name));
        if let Some(w) = entries.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(w[0].name.to_string());
        }
        let mut hash = Fnv::new();
        for e in &entries {
            hash.write(e.signature().as_bytes());
            hash.write(b"\n");
        }
        Ok(Registry {
            entries,
            hash: hash.0,
        })
    }

    /// The id of the function named `name`.
    pub fn id_of(&self, name: &str) -> Option<u32> {
        self.entries
            .binary_search_by(|e| e.name.cmp(name))
            .ok()
            .map(|i| i as u32)
    }

    /// The function with id `id`.
    pub fn get(&self, id: u32) -> Option<&'static Entry> {
        self.entries.get(id as usize).copied()
    }

    /// How many functions there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A hash of every signature in order (FNV-1a, 64 bits: the same in
    /// every process, unlike std's randomly keyed hasher).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// Every signature in id order, one a line: what ranks exchange when
    /// their hashes differ.
    pub fn table(&self) -> String {
        let mut s = String::new();
        for e in &self.entries {
            s.push_str(&e.signature());
            s.push('\n');
        }
        s
    }
}

#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
/// A signature that is in `a`'s table and not in `b`'s, or the other way
/// round: `(signature, true)` if it is `a`'s. `None` if the tables agree.
pub fn first_difference(a: &str, b: &str) -> Option<(String, bool)> {
    let sa: std::collections::BTreeSet<&str> = a.lines().collect();
    let sb: std::collections::BTreeSet<&str> = b.lines().collect();
    if let Some(x) = sa.difference(&sb).next() {
        return Some((x.to_string(), true));
    }
    sb.difference(&sa).next().map(|x| (x.to_string(), false))
}

struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests;
