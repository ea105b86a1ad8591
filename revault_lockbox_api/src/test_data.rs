//! Content the unit tests archive.

/// `len` bytes that compress a little, different for each `seed`.
pub(crate) fn content(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|j| ((j * 31 + seed * 7) ^ (j / 97)) as u8).collect()
}

/// `len` bytes that look random (BLAKE3's output stream of `seed`):
/// no repeats inside, so content-defined chunks of them never match by
/// chance.
pub(crate) fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; len];
    blake3::Hasher::new().update(&seed.to_le_bytes()).finalize_xof().fill(&mut data);
    data
}

/// Chunk sizes under which every file below 1 MiB is stored whole: for
/// tests of whole files' paths (read-ahead, page counts), which chunking
/// would take elsewhere.
pub(crate) fn whole_below_1_mib() -> crate::chunk::ChunkParams {
    crate::chunk::ChunkParams::new(1 << 20, 2 << 20, 4 << 20).expect("valid sizes")
}
