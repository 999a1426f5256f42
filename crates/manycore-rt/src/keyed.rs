//! `Keyed<K, V>`: a heap entry ordered by (key, arrival), smallest first when
//! wrapped in `Reverse` in a `BinaryHeap`; equal keys keep arrival order.
//! The timer queue and the scheduler queue both use it.

/// A value with an ordering key and an arrival number.
pub(crate) struct Keyed<K, V> {
    pub(crate) key: K,
    pub(crate) seq: u64,
    pub(crate) val: V,
}

impl<K: Ord, V> PartialEq for Keyed<K, V> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key && self.seq == o.seq
    }
}
impl<K: Ord, V> Eq for Keyed<K, V> {}
impl<K: Ord, V> PartialOrd for Keyed<K, V> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<K: Ord, V> Ord for Keyed<K, V> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (&self.key, self.seq).cmp(&(&o.key, o.seq))
    }
}
