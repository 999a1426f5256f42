//! A buddy allocator over offsets, after rckSock section 3.4 (Clauss): the
//! first connection gets the whole buffer, each further connection splits a
//! buddy (the largest block in use, when no block is free), and each close
//! merges buddies again, letting a neighbour grow back into the space.
//!
//! It manages offsets only and lives in the endpoint's private memory: the
//! shared region never holds allocator state.
//!
//! Invariants (checked against a model by the proptest below): the blocks
//! tile `[0, total)` without gap or overlap, each block is a power of two
//! between `min` and `total` and aligned to its size, every owner holds
//! exactly one block, the first owner of an empty allocator gets all of it,
//! and once every owner has freed its block one free block of `total`
//! remains.

use std::collections::BTreeMap;

/// What [`BuddyAllocator::alloc`] handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grant {
    /// Offset of the new block.
    pub off: u32,
    /// Size of the new block (a power of two).
    pub size: u32,
    /// If an owner's block was split to make room: that owner and its new
    /// (halved) size. The owner keeps the lower half, the new block is the upper.
    pub split: Option<(u64, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    size: u32,
    owner: Option<u64>,
}

/// Buddy allocator over `[0, total)` with blocks between `min` and `total`
/// bytes (both powers of two). Owners are caller-chosen ids.
#[derive(Debug, Clone)]
pub(crate) struct BuddyAllocator {
    total: u32,
    min: u32,
    blocks: BTreeMap<u32, Block>,
    owners: BTreeMap<u64, u32>,
}

impl BuddyAllocator {
    /// An allocator with one free block of `total` bytes. Returns None unless
    /// `min` and `total` are powers of two with `min <= total`.
    pub fn new(total: u32, min: u32) -> Option<Self> {
        if !total.is_power_of_two() || !min.is_power_of_two() || min > total {
            return None;
        }
        let mut blocks = BTreeMap::new();
        blocks.insert(
            0,
            Block {
                size: total,
                owner: None,
            },
        );
        Some(Self {
            total,
            min,
            blocks,
            owners: BTreeMap::new(),
        })
    }

    /// Total bytes managed.
    #[cfg(test)]
    pub fn total(&self) -> u32 {
        self.total
    }

    /// Smallest block size.
    #[cfg(test)]
    pub fn min(&self) -> u32 {
        self.min
    }

    /// Gives `owner` a block: the largest free block if there is one, else the
    /// upper half of the largest block in use (its owner keeps the lower half).
    /// Returns None if `owner` already holds a block or nothing can be split.
    pub fn alloc(&mut self, owner: u64) -> Option<Grant> {
        if self.owners.contains_key(&owner) {
            return None;
        }
        let free = self
            .blocks
            .iter()
            .filter(|(_, b)| b.owner.is_none())
            .max_by(|a, b| a.1.size.cmp(&b.1.size).then(b.0.cmp(a.0)))
            .map(|(&o, b)| (o, b.size));
        if let Some((off, size)) = free {
            self.blocks.insert(
                off,
                Block {
                    size,
                    owner: Some(owner),
                },
            );
            self.owners.insert(owner, off);
            return Some(Grant {
                off,
                size,
                split: None,
            });
        }
        let (voff, vsize, vowner) = self
            .blocks
            .iter()
            .filter(|(_, b)| b.size > self.min)
            .max_by(|a, b| a.1.size.cmp(&b.1.size).then(b.0.cmp(a.0)))
            .map(|(&o, b)| (o, b.size, b.owner))?;
        let vowner = vowner?;
        let half = vsize / 2;
        self.blocks.insert(
            voff,
            Block {
                size: half,
                owner: Some(vowner),
            },
        );
        self.blocks.insert(
            voff + half,
            Block {
                size: half,
                owner: Some(owner),
            },
        );
        self.owners.insert(owner, voff + half);
        Some(Grant {
            off: voff + half,
            size: half,
            split: Some((vowner, half)),
        })
    }

    /// Releases `owner`'s block and merges buddies. If the block's buddy
    /// below it is in use and of the same size, that owner grows into the
    /// merged block: returned as (owner, new size). Returns None if `owner`
    /// held nothing.
    pub fn free(&mut self, owner: u64) -> Option<Vec<(u64, u32)>> {
        let off = self.owners.remove(&owner)?;
        let mut grown = Vec::new();
        let mut off = off;
        let mut size = self.blocks.get(&off)?.size;
        self.blocks.insert(off, Block { size, owner: None });
        loop {
            if size >= self.total {
                break;
            }
            let buddy = off ^ size;
            let Some(&b) = self.blocks.get(&buddy) else {
                break;
            };
            if b.size != size {
                break;
            }
            match b.owner {
                None => {
                    self.blocks.remove(&off.max(buddy));
                    off = off.min(buddy);
                    size *= 2;
                    self.blocks.insert(off, Block { size, owner: None });
                }
                Some(o) if buddy < off => {
                    // The lower buddy's owner absorbs the freed upper half.
                    self.blocks.remove(&off);
                    size *= 2;
                    self.blocks.insert(
                        buddy,
                        Block {
                            size,
                            owner: Some(o),
                        },
                    );
                    grown.push((o, size));
                    off = buddy;
                    // Keep absorbing while the next buddy up is free.
                    loop {
                        if size >= self.total {
                            break;
                        }
                        let nb = off ^ size;
                        if nb < off {
                            break;
                        }
                        match self.blocks.get(&nb) {
                            Some(x) if x.size == size && x.owner.is_none() => {
                                self.blocks.remove(&nb);
                                size *= 2;
                                self.blocks.insert(
                                    off,
                                    Block {
                                        size,
                                        owner: Some(o),
                                    },
                                );
                                if let Some(g) = grown.last_mut() {
                                    g.1 = size;
                                }
                            }
                            _ => break,
                        }
                    }
                    break;
                }
                Some(_) => break,
            }
        }
        Some(grown)
    }

    /// The block `owner` holds, as (offset, size).
    #[cfg(test)]
    pub fn block_of(&self, owner: u64) -> Option<(u32, u32)> {
        let off = *self.owners.get(&owner)?;
        Some((off, self.blocks.get(&off)?.size))
    }

    /// All blocks in offset order, as (offset, size, owner).
    #[cfg(test)]
    pub fn blocks(&self) -> impl Iterator<Item = (u32, u32, Option<u64>)> + '_ {
        self.blocks.iter().map(|(&o, b)| (o, b.size, b.owner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn first_gets_all_then_halves() {
        let mut b = BuddyAllocator::new(8192, 64).unwrap();
        let g = b.alloc(1).unwrap();
        assert_eq!(
            g,
            Grant {
                off: 0,
                size: 8192,
                split: None
            }
        );
        let g = b.alloc(2).unwrap();
        assert_eq!(
            g,
            Grant {
                off: 4096,
                size: 4096,
                split: Some((1, 4096))
            }
        );
        let g = b.alloc(3).unwrap();
        assert_eq!(g.size, 2048);
        assert_eq!(b.free(3).unwrap(), vec![(1, 4096)]);
        assert_eq!(b.free(2).unwrap(), vec![(1, 8192)]);
        assert_eq!(b.block_of(1), Some((0, 8192)));
        assert!(b.free(1).unwrap().is_empty());
        assert_eq!(b.blocks().collect::<Vec<_>>(), vec![(0, 8192, None)]);
    }

    #[test]
    fn runs_out_at_min() {
        let mut b = BuddyAllocator::new(256, 64).unwrap();
        for i in 0..4 {
            assert!(b.alloc(i).is_some());
        }
        assert!(b.alloc(9).is_none());
        assert!(b.alloc(0).is_none());
    }

    // The allocator against a simple model: random connect/close sequences
    // never overlap, the blocks always tile the buffer, the first connection
    // gets everything, and everything merges back into one block.
    #[derive(Debug, Clone)]
    enum Op {
        Open,
        Close(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![3 => Just(Op::Open), 2 => any::<usize>().prop_map(Op::Close)]
    }

    fn check_tiling(b: &BuddyAllocator) {
        let mut next = 0u32;
        for (off, size, _) in b.blocks() {
            assert_eq!(off, next, "gap or overlap at {off}");
            assert!(size.is_power_of_two() && size >= b.min());
            assert_eq!(off % size, 0, "block not aligned to its size");
            next = off + size;
        }
        assert_eq!(next, b.total());
    }

    proptest! {
        #[test]
        fn random_connect_close(total_log in 8u32..16, min_log in 4u32..8, ops in prop::collection::vec(op(), 1..200)) {
            let total = 1u32 << total_log;
            let min = 1u32 << min_log.min(total_log);
            let mut b = BuddyAllocator::new(total, min).unwrap();
            // Model: owner -> (off, size), maintained from the allocator's reports.
            let mut model: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
            let mut next_id = 0u64;
            for o in ops {
                match o {
                    Op::Open => {
                        let id = next_id;
                        next_id += 1;
                        let was_empty = model.is_empty();
                        let can = model.len() < (total / min) as usize;
                        match b.alloc(id) {
                            Some(g) => {
                                prop_assert!(can);
                                if was_empty {
                                    prop_assert_eq!((g.off, g.size), (0, total), "first gets all");
                                }
                                if let Some((v, vs)) = g.split {
                                    let e = model.get_mut(&v).expect("split a live owner");
                                    prop_assert_eq!(e.1, vs * 2);
                                    prop_assert_eq!(e.0 + vs, g.off);
                                    e.1 = vs;
                                }
                                model.insert(id, (g.off, g.size));
                            }
                            None => prop_assert!(!can, "refused with room left"),
                        }
                    }
                    Op::Close(k) => {
                        if model.is_empty() { continue; }
                        let id = *model.keys().nth(k % model.len()).unwrap();
                        model.remove(&id);
                        for (o, size) in b.free(id).unwrap() {
                            let e = model.get_mut(&o).expect("grew a live owner");
                            prop_assert!(size > e.1);
                            e.1 = size;
                        }
                    }
                }
                check_tiling(&b);
                // No two live blocks overlap, and the model agrees with the allocator.
                let mut v: Vec<_> = model.values().copied().collect();
                v.sort();
                for w in v.windows(2) {
                    prop_assert!(w[0].0 + w[0].1 <= w[1].0, "overlap {:?}", w);
                }
                for (id, blk) in &model {
                    prop_assert_eq!(b.block_of(*id), Some(*blk));
                }
            }
            let ids: Vec<u64> = model.keys().copied().collect();
            for id in ids {
                model.remove(&id);
                for (o, size) in b.free(id).unwrap() {
                    model.get_mut(&o).unwrap().1 = size;
                }
            }
            prop_assert_eq!(b.blocks().collect::<Vec<_>>(), vec![(0, total, None)]);
            prop_assert_eq!(b.alloc(99).map(|g| (g.off, g.size)), Some((0, total)));
        }
    }
}
