//! `Sparse<T>`: a map from small integers (core and lane indices) to
//! values, in chunks of 64 allocated on first use. What a core keeps per
//! peer (the producer end and spill queue of each ring it sends on, the
//! consumer end of each ring it receives on) lives in one, so that a core
//! pays for the peers it talks to rather than for every core of the
//! runtime. A lookup is two indexed loads and no hashing: it is on the send
//! and receive paths.

/// Values per chunk: one word of the active-sender bitmap.
const CHUNK: usize = 64;

type Chunk<T> = Box<[Option<T>; CHUNK]>;

/// See the module docs.
pub(crate) struct Sparse<T> {
    chunks: Vec<Option<Chunk<T>>>,
}

impl<T> Default for Sparse<T> {
    fn default() -> Self {
        Self { chunks: Vec::new() }
    }
}

impl<T> Sparse<T> {
    /// The value at `i`, if any.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.as_deref()?[i % CHUNK].as_ref()
    }

    /// The value at `i`, if any, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i / CHUNK)?.as_deref_mut()?[i % CHUNK].as_mut()
    }

    /// Puts `v` at `i`; returns what was there.
    pub(crate) fn insert(&mut self, i: usize, v: T) -> Option<T> {
        let c = i / CHUNK;
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        let chunk = self.chunks[c].get_or_insert_with(|| Box::new(std::array::from_fn(|_| None)));
        chunk[i % CHUNK].replace(v)
    }

    /// The smallest index at or after `from` that holds a value. Lets a
    /// caller walk the map without holding a borrow across the steps.
    pub(crate) fn next_key(&self, from: usize) -> Option<usize> {
        let mut i = from;
        while let Some(chunk) = self.chunks.get(i / CHUNK) {
            match chunk {
                None => i = (i / CHUNK + 1) * CHUNK,
                Some(c) => {
                    if c[i % CHUNK].is_some() {
                        return Some(i);
                    }
                    i += 1;
                }
            }
        }
        None
    }

    /// Every (index, value), in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.chunks
            .iter()
            .enumerate()
            .filter_map(|(c, chunk)| chunk.as_deref().map(|ch| (c, ch)))
            .flat_map(|(c, ch)| {
                ch.iter()
                    .enumerate()
                    .filter_map(move |(j, v)| v.as_ref().map(|v| (c * CHUNK + j, v)))
            })
    }

    /// Every (index, value), in index order, mutably.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (usize, &mut T)> {
        self.chunks
            .iter_mut()
            .enumerate()
            .filter_map(|(c, chunk)| chunk.as_deref_mut().map(|ch| (c, ch)))
            .flat_map(|(c, ch)| {
                ch.iter_mut()
                    .enumerate()
                    .filter_map(move |(j, v)| v.as_mut().map(|v| (c * CHUNK + j, v)))
            })
    }
}
