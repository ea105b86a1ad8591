//! Bytes on disk: every magic, size, limit and key-derivation label of the
//! `.lbox` format, and the encoding and decoding of each structure.
//!
//! Nothing here touches a file or a key: the structures are plain data, and
//! `docs/FORMAT.md` is their specification. Every length read from input is
//! checked against a named maximum below before it sizes an allocation.

mod chunk_index;
mod chunks;
mod codec;
mod entry;
mod extra;
mod frame;
mod hash;
mod header;
mod header_copy;
mod links;
mod metadata;
mod node;
mod page;
mod path;
mod recovery;
mod root;
mod session_header;
mod sessions;
mod signature;
mod trailer;
mod walk_rules;

pub(crate) use chunk_index::{ChunkEntry, ChunksLeaf, CHUNK_ENTRY_LEN};
pub(crate) use chunks::{decode_chunk_list, encode_chunk_list, ChunkRef};
#[cfg(test)]
pub(crate) use chunks::{CHUNK_RECORD_LEN, MAX_CHUNK_LEN};
pub use codec::DecodeError;
pub(crate) use entry::{encoded_record_len, Extent, Record};
pub use entry::{Entry, EntryKind};
pub use extra::SparseMap;
pub(crate) use extra::{check_name, check_xattr, check_xattr_list};
pub(crate) use frame::{Frame, UnitKind, FRAME_LEN};
pub(crate) use hash::{session_header_hash, unit_hash, Hash};
pub use header::check_slot_label;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use header::decode_slot;
#[cfg(feature = "fuzzing")]
pub(crate) use header::encode_slot;
pub(crate) use header::{
    decode_labeled_slot, encode_labeled_slot, recipient_slot_aad, HeaderPrefix, KeyFileSlot, KeySlot,
    PasswordSlot,
};
pub(crate) use header_copy::{
    decode_header_copy, encode_header_copy, head_of_copy, header_copy_allowed, header_copy_len,
};
pub(crate) use links::FirstLinks;
pub use metadata::{Metadata, Xattr};
pub(crate) use node::{Child, EntriesLeaf, Internal, PageRecord, PagesLeaf, PAGE_RECORD_LEN};
pub(crate) use page::{Codec, IndexNodeId, Table};
pub(crate) use path::{check_entry_path, check_symlink_target, is_within, path_cmp};
pub(crate) use recovery::{record_hasher, recovery_allowed};
pub use recovery::{
    sums_check, Footer, Layout, LayoutError, RecordLayout, RecordOwner, FOOTER_LEN, MAX_GROUP_SHARDS,
    MAX_PERCENT, SHARD_LEN, SHARD_SUM_LEN,
};
pub(crate) use root::{Root, Run, TreeTop};
pub use session_header::{check_label, SessionInfo, SessionKind};
pub(crate) use session_header::{HeaderClear, SESSION_HEADER_CLEAR_LEN};
pub(crate) use sessions::{
    decode_internal, decode_leaf, encode_internal, encode_leaf, sessions_under, SessionRecord, SessionsChild,
    SessionsTop, Summary, SESSIONS_PER_NODE,
};
pub(crate) use signature::{
    decode_signatures, encode_signatures, signed_message, Signature, FLAG_ADOPTS, HYBRID_PUBLIC_KEY_LEN,
    HYBRID_SIGNATURE_LEN, MAX_HYBRID_SIGNATURES, SCHEME_HYBRID,
};
pub(crate) use trailer::{Trailer, TRAILER_LEN};
pub(crate) use walk_rules::WalkRecord;

/// First bytes of every archive. The high byte and CR LF SUB catch text-mode
/// transfers, as PNG's signature does.
pub(crate) const MAGIC: [u8; 8] = *b"\x89LBOX\r\n\x1a";
/// First bytes of the fixed-size trailer at the end of every archive.
pub(crate) const TRAILER_MAGIC: [u8; 8] = *b"LBOXTAIL";
/// First bytes of every session header.
pub(crate) const SESSION_MAGIC: [u8; 8] = *b"LBOXSESS";
/// First bytes of a signature block.
pub(crate) const SIGNATURE_MAGIC: [u8; 8] = *b"LBOXSIGN";
/// The format version this library writes in a new archive (and in the
/// rewrite of a compaction).
pub(crate) const VERSION: u16 = 4;
/// The oldest format version this library reads; it reads every version
/// from this one to [`VERSION`], and appends to an archive in its own.
pub(crate) const OLDEST_VERSION: u16 = 3;
/// The first version whose files may be lists of chunks (docs/DEDUP.md):
/// a session of an older archive stores every file whole.
const FIRST_CHUNKED_VERSION: u16 = 4;
/// The version a key slot's AAD binds (FORMAT.md §3.3): the slot layout's,
/// unchanged since version 3, so that a compaction to a newer version keeps
/// the slots byte for byte (it cannot wrap a recipient's slot again
/// without that recipient's identity).
pub(crate) const SLOT_AAD_VERSION: u16 = 3;

/// Whether this library reads archives of format `version`.
pub(crate) fn is_readable_version(version: u16) -> bool {
    (OLDEST_VERSION..=VERSION).contains(&version)
}

/// Whether a session of an archive of format `version` may store a file as
/// a list of chunks.
pub(crate) fn chunking_allowed(version: u16) -> bool {
    version >= FIRST_CHUNKED_VERSION
}
/// Length of a BLAKE3 commitment.
pub(crate) const HASH_LEN: usize = 32;
/// Longest session label (`-m TEXT`), in bytes of UTF-8.
pub const MAX_LABEL_LEN: usize = 1024;
/// Longest tool name and version in a session header.
pub(crate) const MAX_TOOL_LEN: usize = 64;
/// Longest signature block a trailer may point to.
pub(crate) const MAX_SIGNATURE_BLOCK_LEN: u32 = 64 << 10;
/// Most signatures in one signature block.
pub(crate) const MAX_SIGNATURES: usize = 16;

// BLAKE3 contexts and the other fixed strings of format version 3 live
// beside their structures (`hash`, `signature`); the HKDF labels below
// keep their version-2 text (FORMAT.md §4).

/// Length of the fixed header prefix at offset 0.
pub(crate) const HEADER_PREFIX_LEN: usize = 32;
/// Key slots in the slot table; each may be empty.
pub(crate) const KEY_SLOTS: usize = 16;
/// Bytes of one key slot on disk (kind, length, body, zero padding) are a
/// power of two from this ...
pub(crate) const MIN_KEY_SLOT_LEN: usize = 256;
/// ... to this (room for a post-quantum hybrid recipient's stanza). A
/// writer takes the smallest that holds its slots, so that an archive
/// locked with a password carries 4 KiB of table, not 64.
pub(crate) const MAX_KEY_SLOT_LEN: usize = 4096;
/// Largest key-slot body: the largest slot less its kind and length.
pub(crate) const MAX_KEY_SLOT_BODY_LEN: usize = MAX_KEY_SLOT_LEN - 3;
/// Longest label of a key slot (its length is one byte).
pub const MAX_SLOT_LABEL_LEN: usize = 255;
/// The lowest offset of a data page: the header prefix and the smallest
/// slot table before it.
pub(crate) const MIN_DATA_START: u64 = (HEADER_PREFIX_LEN + KEY_SLOTS * MIN_KEY_SLOT_LEN) as u64;

/// Length of the random archive id bound into every page, index and slot.
pub(crate) const ARCHIVE_ID_LEN: usize = 16;
/// Length of a write session's random salt (HKDF salt for its subkeys).
pub(crate) const SESSION_SALT_LEN: usize = 32;
/// Length of the content key and of every subkey.
pub(crate) const KEY_LEN: usize = 32;
/// Length of a ChaCha20-Poly1305 nonce.
pub(crate) const NONCE_LEN: usize = 12;
/// Length of a Poly1305 tag.
pub(crate) const TAG_LEN: usize = 16;
/// Length of an Argon2id salt in a password slot.
pub(crate) const KDF_SALT_LEN: usize = 16;
/// Length of a SHA-256 digest.
pub(crate) const DIGEST_LEN: usize = 32;

/// Password slots a reader tries before giving up: each try costs a full
/// Argon2id derivation.
pub(crate) const MAX_PASSWORD_SLOTS_TRIED: usize = 4;
/// Argon2id memory cost limit a reader accepts, in KiB (1 GiB): a hostile
/// archive must not make the reader allocate more.
pub const MAX_KDF_MEMORY_KIB: u32 = 1 << 20;
/// Argon2id pass limit a reader accepts.
pub const MAX_KDF_PASSES: u32 = 64;
/// Argon2id lane limit a reader accepts.
pub const MAX_KDF_LANES: u32 = 64;
/// Argon2id work limit a reader accepts: memory (KiB) times passes, 4 GiB
/// passes in all (about 3 s on the development machine; the default costs
/// 192 MiB passes).
pub const MAX_KDF_WORK: u64 = 4 << 20;

/// Largest plaintext of one data page (the presets use 64 KiB to 8 MiB;
/// writers accept 4 KiB to this).
pub(crate) const MAX_PAGE_PLAIN_LEN: u32 = 16 << 20;
/// Largest stored data page: a page is stored raw when zstd does not shrink
/// it, so stored bytes never exceed the plaintext plus the tag.
pub(crate) const MAX_PAGE_STORED_LEN: u32 = MAX_PAGE_PLAIN_LEN + TAG_LEN as u32;
/// Plaintext a writer puts in one index node before it starts the next.
pub(crate) const INDEX_NODE_TARGET_LEN: usize = 64 << 10;
/// Largest index node plaintext a reader accepts. A node holds at least one
/// record, and the largest entry (two paths of `MAX_PATH_LEN`) fits.
pub(crate) const MAX_INDEX_NODE_LEN: u32 = 128 << 10;
/// Largest root plaintext: the sessions table, each session's pages tree
/// top and the tops of the entries runs.
pub(crate) const MAX_ROOT_LEN: u32 = 1 << 20;
/// Deepest index tree a reader follows (a leaf is level 0).
pub(crate) const MAX_TREE_LEVELS: u8 = 16;
/// Longest stored path or link target, in bytes.
pub(crate) const MAX_PATH_LEN: usize = 16 * 1024;
/// Longest path component, in bytes: `NAME_MAX`, which file systems
/// refuse to go past, so no extraction could create a longer one.
pub(crate) const MAX_NAME_LEN: usize = 255;
/// Longest symbolic link target, in bytes: `PATH_MAX` less its NUL, the
/// most `symlink(2)` accepts.
pub(crate) const MAX_SYMLINK_TARGET_LEN: usize = 4095;
/// Longest extended-attribute name, in bytes (Linux `XATTR_NAME_MAX`).
pub(crate) const MAX_XATTR_NAME_LEN: usize = 255;
/// Longest extended-attribute value, in bytes (Linux `XATTR_SIZE_MAX`).
pub(crate) const MAX_XATTR_VALUE_LEN: usize = 64 << 10;
/// Most bytes one entry's extended attributes take encoded (names, values
/// and their lengths): a largest value and room for more, while the
/// largest entry still fits one index node.
pub(crate) const MAX_XATTRS_LEN: usize = 72 << 10;
/// Largest logical size of a file or hard link: a file system's `off_t`
/// is signed, so no file of 2^63 bytes or more can be restored, and every
/// reader refuses such an entry (FORMAT.md §3.5), not only `extract`.
pub(crate) const MAX_FILE_SIZE: u64 = i64::MAX as u64;
/// Most data segments of one sparse file's map (16 bytes each); a file
/// with more is stored with its smallest holes filled.
pub(crate) const MAX_SPARSE_SEGMENTS: usize = 1024;
/// Most write sessions (the create plus appends) one archive may record:
/// `16^5`, daily appends for 2,900 years (the sessions tree keeps each
/// session's cost bounded, so the limit is about nothing else).
pub(crate) const MAX_SESSIONS: usize = 1 << 20;
/// Most entries runs a root lists: a lookup reads a path's nodes in each,
/// so a writer merges them into one before there would be more.
pub(crate) const MAX_RUNS: usize = 16;

/// Content-defined chunks (docs/DEDUP.md, "The chunker and chunk ids"):
/// the default sizes, in bytes. Not written by any writer yet: format v4's.
pub(crate) mod chunk_sizes {
    /// Default smallest chunk (the last chunk of a file may be shorter).
    pub(crate) const DEFAULT_MIN: usize = 64 << 10;
    /// Default target average chunk: the chunk-size study of docs/DEDUP.md
    /// (half the daily new bytes of 1 MiB, an index 4x as large only for
    /// data in large files, 0.02 % of it).
    pub(crate) const DEFAULT_AVG: usize = 256 << 10;
    /// Default largest chunk.
    pub(crate) const DEFAULT_MAX: usize = 1 << 20;
    /// Bounds a writer accepts: fastcdc's own (`v2020::MINIMUM_MIN` ...
    /// `MAXIMUM_MAX`), so every accepted setting has masks in its table.
    pub(crate) const MIN_MIN: usize = 64;
    /// Largest accepted minimum.
    pub(crate) const MAX_MIN: usize = 1 << 20;
    /// Smallest accepted average.
    pub(crate) const MIN_AVG: usize = 256;
    /// Largest accepted average.
    pub(crate) const MAX_AVG: usize = 4 << 20;
    /// Smallest accepted maximum.
    pub(crate) const MIN_MAX: usize = 1 << 10;
    /// Largest accepted maximum.
    pub(crate) const MAX_MAX: usize = 16 << 20;
}

/// Length of a chunk id (keyed BLAKE3).
pub(crate) const CHUNK_ID_LEN: usize = 32;

/// HKDF-SHA256 `info` labels: one subkey per purpose, so a key never serves
/// two purposes.
pub(crate) mod labels {
    /// Seals data pages of one write session.
    pub(crate) const PAGE_KEY: &[u8] = b"revault-lockbox v2 page key";
    /// Seals the index nodes and root written by one write session.
    pub(crate) const INDEX_KEY: &[u8] = b"revault-lockbox v2 index key";
    /// Authenticates the trailer written by one write session.
    pub(crate) const TRAILER_KEY: &[u8] = b"revault-lockbox v2 trailer key";
    /// Domain separator at the start of every password-slot AAD.
    pub(crate) const KEY_SLOT_AAD: &[u8] = b"revault-lockbox v2 key slot";
    /// Domain separator at the start of every key-file-slot AAD, and the
    /// HKDF `info` of its key-encryption key.
    pub(crate) const KEY_FILE_SLOT_AAD: &[u8] = b"revault-lockbox v2 key-file slot";
    /// Domain separator at the start of every recipient-slot AAD.
    pub(crate) const RECIPIENT_SLOT_AAD: &[u8] = b"revault-lockbox v2 recipient slot";
    /// The chunker's gear table: 2048 bytes of HKDF output under the
    /// archive's chunk PRK (docs/DEDUP.md).
    pub(crate) const CHUNK_GEAR: &[u8] = b"revault-lockbox v4 chunk gear";
    /// The key of chunk ids (keyed BLAKE3), under the same PRK.
    pub(crate) const CHUNK_ID_KEY: &[u8] = b"revault-lockbox v4 chunk id";
}

#[cfg(test)]
mod known_answers;
