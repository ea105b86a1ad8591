//! Content the unit tests archive.

/// `len` bytes that compress a little, different for each `seed`.
pub(crate) fn content(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|j| ((j * 31 + seed * 7) ^ (j / 97)) as u8).collect()
}
