//! The one bounded cache every reader keeps what it opened in: data pages,
//! decoded index nodes, a browser's page-table leaves and entries. Opening
//! (read, authenticate, decompress, decode) costs far more than finding a
//! key, and readers come back to the same few things (the pages of a file
//! read in small pieces, the nodes every lookup descends through, the
//! entries a directory listing just gave): a few stay, the least recently
//! used dropped first, so memory stays flat whatever the archive's size.
//! Shared between threads (a mount serves several requests at once, and
//! keeps its open states of the archive in one too).

use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard};

use lru::LruCache;

/// A cache of at most a fixed number of values, the least recently used
/// dropped first; shared between threads.
pub struct Bounded<K, V> {
    items: Mutex<LruCache<K, V>>,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    /// A cache of at most `capacity` values (at least one).
    pub fn new(capacity: usize) -> Bounded<K, V> {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Bounded { items: Mutex::new(LruCache::new(capacity)) }
    }

    /// Keeps `value` at `key`, dropping the least recently used if full.
    pub fn put(&self, key: K, value: V) {
        self.lock().put(key, value);
    }

    /// Removes and returns the most recently used value `matches` accepts.
    pub fn take(&self, matches: impl Fn(&V) -> bool) -> Option<V> {
        let mut items = self.lock();
        let key = items.iter().find(|(_, v)| matches(v)).map(|(k, _)| k.clone())?;
        items.pop(&key)
    }

    // A poisoned lock only means a reader panicked holding it: the cache
    // holds whole values either way.
    fn lock(&self) -> MutexGuard<'_, LruCache<K, V>> {
        self.items.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Bounded<K, V> {
    /// The value at `key`, now the most recently used.
    pub fn get(&self, key: &K) -> Option<V> {
        self.lock().get(key).cloned()
    }

    /// The value at `key`, or the one `open` makes (outside the lock, so
    /// other readers go on meanwhile), then kept.
    pub fn get_or_open<E>(&self, key: K, open: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        if let Some(hit) = self.get(&key) {
            return Ok(hit);
        }
        let value = open()?;
        self.put(key, value.clone());
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_goes_first() {
        let cache = Bounded::new(2);
        cache.put(1, "a");
        cache.put(2, "b");
        assert_eq!(cache.get(&1), Some("a")); // 2 is now the oldest
        cache.put(3, "c");
        assert_eq!((cache.get(&1), cache.get(&2), cache.get(&3)), (Some("a"), None, Some("c")));
    }

    #[test]
    fn a_value_is_opened_once_and_an_error_kept_nowhere() {
        let cache = Bounded::new(4);
        assert_eq!(cache.get_or_open(7, || Err::<u8, _>("bad")), Err("bad"));
        assert_eq!(cache.get_or_open(7, || Ok::<_, &str>(1)), Ok(1));
        assert_eq!(cache.get_or_open(7, || Ok::<_, &str>(2)), Ok(1));
    }

    #[test]
    fn take_removes_what_it_returns() {
        let cache = Bounded::new(4);
        cache.put(1, 10);
        cache.put(2, 20);
        assert_eq!(cache.take(|v| *v > 5), Some(20)); // the most recent match
        assert_eq!(cache.take(|v| *v == 20), None);
        assert_eq!(cache.get(&1), Some(10));
    }

    #[test]
    fn a_capacity_of_zero_keeps_one() {
        let cache = Bounded::new(0);
        cache.put(1, 1);
        assert_eq!(cache.get(&1), Some(1));
    }
}
