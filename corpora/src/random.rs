//! Incompressible bytes: stands in for media, archives and encrypted files.

use std::io::{self, Read};

use crate::Rng;

/// An [`io::Read`] that yields exactly `len` incompressible bytes.
///
/// The stream is the bytes of [`Rng::fill`] over the whole length, whatever
/// buffer sizes the caller reads with, so a prefix of a longer stream equals
/// a shorter stream of the same seed.
#[derive(Clone, Debug)]
pub struct RandomReader {
    rng: Rng,
    remaining: u64,
    /// Unread high bytes of the last word, in order.
    spare: [u8; 8],
    spare_len: usize,
}

impl RandomReader {
    /// Creates a reader of `len` pseudo-random bytes from `seed`.
    pub fn new(seed: u64, len: u64) -> Self {
        RandomReader { rng: Rng::new(seed), remaining: len, spare: [0; 8], spare_len: 0 }
    }

    /// Bytes left to read.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }
}

impl Read for RandomReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let want = (out.len() as u64).min(self.remaining) as usize;
        let out = &mut out[..want];

        let from_spare = self.spare_len.min(want);
        let start = 8 - self.spare_len;
        out[..from_spare].copy_from_slice(&self.spare[start..start + from_spare]);
        self.spare_len -= from_spare;

        let rest = &mut out[from_spare..];
        let whole = rest.len() / 8 * 8;
        self.rng.fill(&mut rest[..whole]);
        let tail = &mut rest[whole..];
        if !tail.is_empty() {
            self.spare = self.rng.next_u64().to_le_bytes();
            tail.copy_from_slice(&self.spare[..tail.len()]);
            self.spare_len = 8 - tail.len();
        }

        self.remaining -= want as u64;
        Ok(want)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_in_chunks(mut r: impl Read, sizes: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 4096];
        let mut i = 0;
        loop {
            let size = sizes[i % sizes.len()];
            i += 1;
            let n = r.read(&mut buf[..size]).unwrap();
            if n == 0 && size > 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    #[test]
    fn exact_length_and_chunking_does_not_matter() {
        let len = 10_007;
        let whole = read_in_chunks(RandomReader::new(5, len), &[4096]);
        assert_eq!(whole.len() as u64, len);
        let odd = read_in_chunks(RandomReader::new(5, len), &[1, 7, 0, 3, 8, 13, 1000]);
        assert_eq!(whole, odd);
        let mut direct = vec![0u8; len as usize];
        Rng::new(5).fill(&mut direct);
        assert_eq!(whole, direct);
    }

    #[test]
    fn prefix_property_and_seed_sensitivity() {
        let short = read_in_chunks(RandomReader::new(9, 100), &[33]);
        let long = read_in_chunks(RandomReader::new(9, 1000), &[64]);
        assert_eq!(short[..], long[..100]);
        let other = read_in_chunks(RandomReader::new(10, 100), &[33]);
        assert_ne!(short, other);
    }

    #[test]
    fn zero_length_reads_nothing() {
        let mut r = RandomReader::new(1, 0);
        assert_eq!(r.read(&mut [0u8; 16]).unwrap(), 0);
    }

    #[test]
    fn random_data_is_incompressible() {
        let data = read_in_chunks(RandomReader::new(3, 256 * 1024), &[4096]);
        let packed = zstd::bulk::compress(&data, 3).unwrap();
        assert!(
            packed.len() as f64 >= data.len() as f64 * 0.99,
            "random data compressed to {} of {}",
            packed.len(),
            data.len()
        );
    }
}
