//! Memory for secrets, locked against swapping where the system allows.
//!
//! `mlock(2)` works on whole pages and does not nest: unlocking one secret's
//! page would unlock another secret sharing it. So locks are counted per
//! page in one registry, and a page is unlocked only when the last secret on
//! it is gone. Locking is best effort: a refusal (`RLIMIT_MEMLOCK`, no
//! `CAP_IPC_LOCK`) leaves the secret in ordinary memory and never fails the
//! operation. The locking itself is the `region` crate's.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

use zeroize::Zeroize;

/// Pages holding at least one secret: how many secrets each holds, and its
/// lock when the system granted one.
static LOCKED_PAGES: Mutex<BTreeMap<usize, (usize, Option<region::LockGuard>)>> = Mutex::new(BTreeMap::new());

fn registry() -> MutexGuard<'static, BTreeMap<usize, (usize, Option<region::LockGuard>)>> {
    // The registry holds no invariant a panicking holder could break half-way.
    LOCKED_PAGES.lock().unwrap_or_else(|e| e.into_inner())
}

/// The pages of `len` bytes at `addr` held locked (best effort) while this
/// lives.
struct PageLock {
    first: usize,
    last: usize,
}

impl PageLock {
    fn new(addr: *const u8, len: usize) -> Option<PageLock> {
        if len == 0 {
            return None;
        }
        let size = region::page::size();
        let (first, last) = (addr as usize / size, (addr as usize + len - 1) / size);
        let mut pages = registry();
        for page in first..=last {
            let held = pages.entry(page).or_insert((0, None));
            if held.0 == 0 {
                held.1 = region::lock((page * size) as *const u8, size).ok();
            }
            held.0 += 1;
        }
        Some(PageLock { first, last })
    }
}

impl Drop for PageLock {
    fn drop(&mut self) {
        let mut pages = registry();
        for page in self.first..=self.last {
            if let Some(held) = pages.get_mut(&page) {
                held.0 -= 1;
                if held.0 == 0 {
                    pages.remove(&page); // its guard unlocks the page
                }
            }
        }
    }
}

/// How many pages holding secrets the system has locked.
#[cfg(test)]
fn locked_page_count() -> usize {
    registry().values().filter(|held| held.1.is_some()).count()
}

/// A secret value in its own heap allocation, locked while it lives; the
/// value wipes itself on drop (a `Zeroizing` or `ZeroizeOnDrop` type). The
/// page is unlocked just before the value is dropped, so that it is never
/// unlocked after being freed.
pub(crate) struct Locked<T> {
    _lock: Option<PageLock>,
    value: Box<T>,
}

impl<T> Locked<T> {
    /// Moves `value` into locked memory (copies made while building it are
    /// the builder's to wipe).
    pub(crate) fn new(value: T) -> Locked<T> {
        let value = Box::new(value);
        let lock = PageLock::new((&*value as *const T).cast(), std::mem::size_of::<T>());
        Locked { _lock: lock, value }
    }
}

impl<T: Default> Locked<T> {
    /// A default (zeroed) value in locked memory, to fill in place.
    pub(crate) fn zeroed() -> Locked<T> {
        Locked::new(T::default())
    }
}

impl<T: Clone> Clone for Locked<T> {
    fn clone(&self) -> Self {
        Locked::new(T::clone(&self.value))
    }
}

impl<T> Deref for Locked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Locked<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T> fmt::Debug for Locked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Locked([redacted])")
    }
}

/// Secret bytes in a buffer of fixed capacity, locked while it lives, wiped
/// (the whole capacity) before it is unlocked and freed. It never grows, so
/// no copy is ever left behind by a reallocation.
pub(crate) struct SecretBytes {
    lock: Option<PageLock>,
    buf: Box<[u8]>,
    len: usize,
}

impl SecretBytes {
    /// An empty buffer with room for `capacity` bytes.
    pub(crate) fn with_capacity(capacity: usize) -> SecretBytes {
        let buf = vec![0u8; capacity].into_boxed_slice();
        let lock = PageLock::new(buf.as_ptr(), buf.len());
        SecretBytes { lock, buf, len: 0 }
    }

    /// A copy of `bytes`.
    pub(crate) fn copy_of(bytes: &[u8]) -> SecretBytes {
        let mut secret = SecretBytes::with_capacity(bytes.len());
        secret.buf.copy_from_slice(bytes);
        secret.len = bytes.len();
        secret
    }

    /// The bytes held.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The room after the bytes held, to read into; [`add_len`](Self::add_len)
    /// then counts what was put there.
    pub(crate) fn spare(&mut self) -> &mut [u8] {
        &mut self.buf[self.len..]
    }

    /// Counts `n` more bytes of [`spare`](Self::spare) as held.
    pub(crate) fn add_len(&mut self, n: usize) {
        assert!(n <= self.buf.len() - self.len, "more bytes than the spare room");
        self.len += n;
    }

    /// Keeps only the first `len` bytes (the rest stays in the buffer until
    /// it is wiped on drop).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

impl Clone for SecretBytes {
    fn clone(&self) -> Self {
        SecretBytes::copy_of(self.as_slice())
    }
}

impl Drop for SecretBytes {
    fn drop(&mut self) {
        self.buf.zeroize();
        self.lock.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmLck` line of /proc/self/status, in KiB.
    fn vm_locked_kib() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmLck:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// Whether this process may lock a page at all (root, or a memlock limit).
    fn can_lock() -> bool {
        let probe = [0u8; 1];
        region::lock(probe.as_ptr(), 1).is_ok()
    }

    #[test]
    fn secrets_are_locked_while_they_live_and_counted_per_page() {
        if !can_lock() {
            // CI runs as root, where locking must work: there a skip is a failure.
            let why = "this process may not lock memory (not root, and RLIMIT_MEMLOCK too small)";
            assert!(
                std::env::var_os("LOCKBOX_REQUIRE_MLOCK").is_none(),
                "LOCKBOX_REQUIRE_MLOCK is set and {why}"
            );
            eprintln!("skipped: {why}; set LOCKBOX_REQUIRE_MLOCK to make this a failure");
            return;
        }
        let a = SecretBytes::copy_of(b"correct horse");
        let b = Locked::new([7u8; 32]);
        assert!(locked_page_count() >= 1);
        assert!(vm_locked_kib().is_some_and(|kib| kib >= 4), "VmLck: {:?}", vm_locked_kib());
        // Both on one page or not: dropping one leaves the other's page locked.
        let page = region::page::size();
        let b_page = (&*b as *const [u8; 32]) as usize / page;
        drop(a);
        assert!(registry().get(&b_page).is_some_and(|held| held.1.is_some()));
        drop(b);
    }

    #[test]
    fn secret_bytes_fill_without_growing() {
        let mut s = SecretBytes::with_capacity(8);
        let spare = s.spare();
        spare[..3].copy_from_slice(b"abc");
        s.add_len(3);
        assert_eq!(s.as_slice(), b"abc");
        assert_eq!(s.spare().len(), 5);
        s.truncate(2);
        assert_eq!(s.as_slice(), b"ab");
        assert_eq!(s.clone().as_slice(), b"ab");
        assert!(std::panic::catch_unwind(move || s.add_len(7)).is_err());
    }
}
