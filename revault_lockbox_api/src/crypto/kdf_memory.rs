//! The Argon2id matrix (64 MiB at the default cost) in memory of its own:
//! an anonymous mapping asked for transparent huge pages.
//!
//! Why not a `Vec<Block>`: the kernel then faults it in 4 KiB at a time
//! (16,384 faults, each zeroing a page) before Argon2id's random reads
//! across it miss the TLB; and the allocator's memset zeroes it a second
//! time. With `MADV_HUGEPAGE` on a 2 MiB-aligned range it is 32 faults and
//! far fewer TLB misses (measured in docs/BENCHMARKS.md, "Fixed cost"), and
//! fresh anonymous memory is already zero, which Argon2 needs no more than
//! a valid value. The matrix is wiped on every core before it is unmapped,
//! so nothing password-derived outlives the derivation.

use std::io;

use argon2::Block;
use memmap2::{MmapMut, MmapOptions};
use rayon::prelude::*;
use zeroize::Zeroize;

/// A transparent huge page on x86-64 and most 64-bit systems; the mapping
/// is over-allocated by one so that an aligned range fits.
const HUGE_PAGE: usize = 2 << 20;

/// Zeroed Argon2 blocks in a private anonymous mapping, wiped when dropped.
pub(crate) struct KdfMemory {
    map: MmapMut,
    /// Byte offset of the first block: the first huge-page boundary.
    start: usize,
    blocks: usize,
}

impl KdfMemory {
    /// Maps room for `blocks` blocks (fails only when the system refuses
    /// the memory). Huge pages are a request: without them the memory is
    /// the same, only slower to fault in.
    pub(crate) fn new(blocks: usize) -> io::Result<KdfMemory> {
        let bytes =
            blocks.checked_mul(Block::SIZE).ok_or_else(|| io::Error::other("KDF memory overflows"))?;
        let map = MmapOptions::new().len(bytes + HUGE_PAGE).map_anon()?;
        let start = map.as_ptr().align_offset(HUGE_PAGE);
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let _ = map.advise_range(memmap2::Advice::HugePage, start, bytes);
        Ok(KdfMemory { map, start, blocks })
    }

    /// The blocks, for `Argon2::hash_password_into_with_memory`.
    pub(crate) fn blocks(&mut self) -> &mut [Block] {
        let bytes = &mut self.map[self.start..self.start + self.blocks * Block::SIZE];
        // SAFETY: the range lies inside the mapping (`new` mapped `start`,
        // below HUGE_PAGE, plus `blocks * Block::SIZE` bytes and more) and
        // is borrowed mutably from it for the slice's lifetime. Its start is
        // 2 MiB-aligned, so aligned for `Block` (64). `Block` is
        // `[u64; 128]` with no padding, so every bit pattern, including the
        // mapping's initial zeroes, is a valid value.
        unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<Block>(), self.blocks) }
    }
}

impl Drop for KdfMemory {
    fn drop(&mut self) {
        self.blocks().par_iter_mut().for_each(Zeroize::zeroize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_zeroed_aligned_and_writable() {
        let mut memory = KdfMemory::new(3000).unwrap();
        let blocks = memory.blocks();
        assert_eq!(blocks.len(), 3000);
        assert_eq!(blocks.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(blocks.iter().all(|b| b.as_ref().iter().all(|&w| w == 0)));
        blocks[2999].as_mut()[127] = 7;
        assert_eq!(memory.blocks()[2999].as_ref()[127], 7);
    }
}
