//! The chunk sizes a chunker cuts to, checked once when they are made.

use std::fmt;

use fastcdc::v2020::{select_masks, Normalization};

use crate::format::chunk_sizes::{
    DEFAULT_AVG, DEFAULT_MAX, DEFAULT_MIN, MAX_AVG, MAX_MAX, MAX_MIN, MIN_AVG, MIN_MAX, MIN_MIN,
};

/// FastCDC's normalization level: level 2, which the FastCDC paper (Xia et
/// al., USENIX ATC 2016, §4.4 and §5) recommends, most chunks near the
/// average with little loss of dedup.
pub(crate) const NORMALIZATION: Normalization = Normalization::Level2;

/// The smallest, average and largest chunk a [`Chunker`](super::Chunker)
/// cuts. The defaults are 64 KiB, 256 KiB and 1 MiB (docs/DEDUP.md says
/// why); smaller ones serve tests that need many chunks on the same code
/// path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkParams {
    min: usize,
    avg: usize,
    max: usize,
}

/// Why a [`ChunkParams`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkParamsError {
    /// A size is odd: FastCDC tests cut points two bytes at a time.
    #[error("chunk sizes must be even, and the {name} chunk size is {value}")]
    Odd {
        /// Which size: "smallest", "average" or "largest".
        name: &'static str,
        /// The size given.
        value: usize,
    },
    /// A size lies outside what the chunker supports.
    #[error("the {name} chunk size {value} is outside {low}..={high} bytes")]
    OutOfRange {
        /// Which size: "smallest", "average" or "largest".
        name: &'static str,
        /// The size given.
        value: usize,
        /// The lowest accepted.
        low: usize,
        /// The highest accepted.
        high: usize,
    },
    /// The sizes are not in order.
    #[error("chunk sizes must grow: smallest {min} < average {avg} < largest {max}")]
    NotIncreasing {
        /// The smallest given.
        min: usize,
        /// The average given.
        avg: usize,
        /// The largest given.
        max: usize,
    },
}

impl ChunkParams {
    /// Sizes in bytes, checked: each even and within fastcdc's bounds
    /// (smallest 64 B ..= 1 MiB, average 256 B ..= 4 MiB, largest
    /// 1 KiB ..= 16 MiB), and `min < avg < max`.
    pub fn new(min: usize, avg: usize, max: usize) -> Result<ChunkParams, ChunkParamsError> {
        for (name, value, low, high) in [
            ("smallest", min, MIN_MIN, MAX_MIN),
            ("average", avg, MIN_AVG, MAX_AVG),
            ("largest", max, MIN_MAX, MAX_MAX),
        ] {
            if !(low..=high).contains(&value) {
                return Err(ChunkParamsError::OutOfRange { name, value, low, high });
            }
            if value % 2 != 0 {
                return Err(ChunkParamsError::Odd { name, value });
            }
        }
        if !(min < avg && avg < max) {
            return Err(ChunkParamsError::NotIncreasing { min, avg, max });
        }
        Ok(ChunkParams { min, avg, max })
    }

    /// The smallest chunk, in bytes (a file's last chunk may be shorter).
    pub fn min(&self) -> usize {
        self.min
    }

    /// The target average chunk, in bytes.
    pub fn avg(&self) -> usize {
        self.avg
    }

    /// The largest chunk, in bytes.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The strict and relaxed cut masks for the average size at level 2,
    /// from fastcdc's table.
    pub(crate) fn masks(&self) -> (u64, u64) {
        select_masks(self.avg, NORMALIZATION)
    }
}

impl Default for ChunkParams {
    /// 64 KiB, 256 KiB and 1 MiB.
    fn default() -> ChunkParams {
        ChunkParams::new(DEFAULT_MIN, DEFAULT_AVG, DEFAULT_MAX).expect("the default sizes are valid")
    }
}

impl fmt::Display for ChunkParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{} bytes", self.min, self.avg, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sizes() {
        let p = ChunkParams::default();
        assert_eq!((p.min(), p.avg(), p.max()), (64 << 10, 256 << 10, 1 << 20));
    }

    /// Bad sizes are refused with one line naming the size, never a panic
    /// inside fastcdc (whose checks are debug assertions only).
    #[test]
    fn bad_params_are_refused_with_a_clear_message() {
        let cases: [((usize, usize, usize), &str); 9] = [
            ((0, 1024, 4096), "the smallest chunk size 0 is outside 64..=1048576 bytes"),
            ((64, 128, 4096), "the average chunk size 128 is outside 256..=4194304 bytes"),
            ((64, 256, 512), "the largest chunk size 512 is outside 1024..=16777216 bytes"),
            ((64, 8 << 20, 16 << 20), "the average chunk size 8388608 is outside 256..=4194304 bytes"),
            ((64, 1024, 32 << 20), "the largest chunk size 33554432 is outside 1024..=16777216 bytes"),
            ((65, 1024, 4096), "chunk sizes must be even, and the smallest chunk size is 65"),
            ((64, 1025, 4096), "chunk sizes must be even, and the average chunk size is 1025"),
            ((4096, 1024, 8192), "chunk sizes must grow: smallest 4096 < average 1024 < largest 8192"),
            ((1024, 4096, 4096), "chunk sizes must grow: smallest 1024 < average 4096 < largest 4096"),
        ];
        for ((min, avg, max), message) in cases {
            let err = ChunkParams::new(min, avg, max).unwrap_err();
            assert_eq!(err.to_string(), message);
            assert!(!err.to_string().contains('\n'));
        }
        assert!(ChunkParams::new(64, 256, 1024).is_ok(), "the lowest bounds");
        assert!(ChunkParams::new(1 << 20, 4 << 20, 16 << 20).is_ok(), "the highest bounds");
    }
}
