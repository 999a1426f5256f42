//! `Awaiting`: the table of calls waiting for their replies under the
//! progress lock (`Progress`), by sequence number. Most callers wait for
//! one call at a time, so the newest entry is kept apart, where a reply is
//! found without hashing; older entries live in a hash map. Invariant: a
//! sequence number is in at most one of the two places (the newest entry
//! moves to the map only when a newer one takes its place), so a lookup
//! finds exactly what was registered and not yet removed.

use crate::shared::SeqHasher;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

pub(crate) struct Awaiting<V> {
    newest: Option<(u64, V)>,
    older: HashMap<u64, V, BuildHasherDefault<SeqHasher>>,
}

impl<V> Default for Awaiting<V> {
    fn default() -> Self {
        Awaiting {
            newest: None,
            older: HashMap::default(),
        }
    }
}

impl<V> Awaiting<V> {
    /// Registers `v` under `seq` (sequence numbers are unique: `seq` is not
    /// registered already).
    pub(crate) fn insert(&mut self, seq: u64, v: V) {
        if let Some((s, old)) = self.newest.replace((seq, v)) {
            self.older.insert(s, old);
        }
    }

    /// Removes and returns what is registered under `seq`.
    pub(crate) fn remove(&mut self, seq: u64) -> Option<V> {
        if self.newest.as_ref().is_some_and(|(s, _)| *s == seq) {
            return self.newest.take().map(|(_, v)| v);
        }
        if self.older.is_empty() {
            return None;
        }
        self.older.remove(&seq)
    }

    /// Entries registered and not yet removed.
    pub(crate) fn len(&self) -> usize {
        self.older.len() + usize::from(self.newest.is_some())
    }
}

#[cfg(test)]
mod tests;
