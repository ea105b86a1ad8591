//! The chunker's secrets: its gear tables and the key of chunk ids, both
//! from the archive's content key, so that neither where chunks are cut nor
//! what their ids are means anything without it (docs/DEDUP.md).
//!
//! Why a whole table and not fastcdc's seed: its seed is one `u64` XORed
//! into every entry of a public table, which the 2025 attacks on keyed
//! chunkers (IACR ePrint 2025/532, 2025/558) recover from observed chunk
//! sizes. Here every entry is 64 bits of HKDF output under the key.

use std::fmt;

use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

use super::{ContentKey, Locked};
use crate::format::{labels, ARCHIVE_ID_LEN, KEY_LEN};

/// Entries of a gear table: one per byte value.
const GEAR_ENTRIES: usize = 256;

/// The two gear tables fastcdc's `cut_gear` takes: `gear[b]` and
/// `gear[b] << 1`.
type GearTables = [[u64; GEAR_ENTRIES]; 2];

/// The keyed gear tables and the chunk-id key of one archive, in locked
/// memory, wiped on drop; `Debug` prints nothing of them.
pub struct ChunkKeys {
    gear: Locked<Zeroizing<GearTables>>,
    id_key: Locked<Zeroizing<[u8; KEY_LEN]>>,
}

impl ChunkKeys {
    /// The archive's chunk keys:
    /// `PRK = HKDF-Extract-SHA256(salt = archive_id, ikm = content_key)`,
    /// the gear table from `HKDF-Expand(PRK, CHUNK_GEAR, 2048)` read as 256
    /// little-endian `u64`, the id key from `HKDF-Expand(PRK, CHUNK_ID_KEY, 32)`.
    pub(crate) fn derive(content_key: &ContentKey, archive_id: &[u8; ARCHIVE_ID_LEN]) -> ChunkKeys {
        let hk = Hkdf::<Sha256>::new(Some(archive_id), content_key.bytes());
        let mut okm = Zeroizing::new([0u8; GEAR_ENTRIES * 8]);
        hk.expand(labels::CHUNK_GEAR, okm.as_mut()).expect("2048 bytes is a valid HKDF output length");
        let mut gear = Locked::new(Zeroizing::new([[0u64; GEAR_ENTRIES]; 2]));
        for (i, entry) in okm.chunks_exact(8).enumerate() {
            let value = u64::from_le_bytes(entry.try_into().expect("8 bytes"));
            gear[0][i] = value;
            gear[1][i] = value << 1;
        }
        let mut id_key = Locked::new(Zeroizing::new([0u8; KEY_LEN]));
        hk.expand(labels::CHUNK_ID_KEY, id_key.as_mut()).expect("32 bytes is a valid HKDF output length");
        ChunkKeys { gear, id_key }
    }

    /// The chunk keys an archive with content key `content_key` and id
    /// `archive_id` has, for callers that hold such a key themselves
    /// (benches, studies, test vectors); an archive's writer derives them
    /// from its own content key. The caller wipes its copy of the key.
    pub fn from_key_bytes(content_key: &[u8; KEY_LEN], archive_id: &[u8; ARCHIVE_ID_LEN]) -> ChunkKeys {
        ChunkKeys::derive(&ContentKey::from_bytes(content_key), archive_id)
    }

    /// The gear table, `gear[b]` for byte value `b`.
    pub(crate) fn gear(&self) -> &[u64; GEAR_ENTRIES] {
        &self.gear[0]
    }

    /// The gear table shifted left by one bit, as `cut_gear` wants it.
    pub(crate) fn gear_shifted(&self) -> &[u64; GEAR_ENTRIES] {
        &self.gear[1]
    }

    /// The key of keyed-BLAKE3 chunk ids.
    pub(crate) fn id_key(&self) -> &[u8; KEY_LEN] {
        &self.id_key
    }
}

impl fmt::Debug for ChunkKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ChunkKeys([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_the_content_key_and_the_archive_id() {
        let a = ChunkKeys::from_key_bytes(&[1; KEY_LEN], &[2; ARCHIVE_ID_LEN]);
        let other_key = ChunkKeys::from_key_bytes(&[3; KEY_LEN], &[2; ARCHIVE_ID_LEN]);
        let other_id = ChunkKeys::from_key_bytes(&[1; KEY_LEN], &[4; ARCHIVE_ID_LEN]);
        for b in [&other_key, &other_id] {
            assert_ne!(a.gear(), b.gear());
            assert_ne!(a.id_key(), b.id_key());
        }
        assert!(a.gear().iter().zip(a.gear_shifted()).all(|(g, s)| *s == g << 1));
        assert_ne!(&a.id_key()[..8], &a.gear()[0].to_le_bytes(), "separate labels");
    }

    #[test]
    fn debug_shows_no_key_material() {
        let k = ChunkKeys::from_key_bytes(&[1; KEY_LEN], &[2; ARCHIVE_ID_LEN]);
        assert_eq!(format!("{k:?}"), "ChunkKeys([redacted])");
    }
}
