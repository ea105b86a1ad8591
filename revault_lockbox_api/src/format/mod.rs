//! Bytes on disk: every magic, size, limit and key-derivation label of the
//! `.lbox` format, and the encoding and decoding of each structure.
//!
//! Nothing here touches a file or a key: the structures are plain data, and
//! `docs/FORMAT.md` is their specification. Every length read from input is
//! checked against a named maximum below before it sizes an allocation.

mod codec;
mod header;
mod index;
mod page;
mod trailer;

pub use codec::DecodeError;
pub use header::{
    decode_key_slots, encode_key_slots, ArchiveId, Header, KeySlot, PasswordSlot, HEADER_PREFIX_LEN,
};
pub use index::{Entry, EntryKind, FileLocation, Index, PageRecord, Session};
pub(crate) use page::PageAad;
pub use page::{Codec, PageKind};
pub use trailer::{Trailer, TRAILER_BODY_LEN, TRAILER_LEN};

/// First bytes of every archive. The high byte and CR LF SUB catch text-mode
/// transfers, as PNG's signature does.
pub const MAGIC: [u8; 8] = *b"\x89LBOX\r\n\x1a";
/// First bytes of the fixed-size trailer at the end of every archive.
pub const TRAILER_MAGIC: [u8; 8] = *b"LBOXTAIL";
/// The format version this library writes, and the only one it reads.
pub const VERSION: u16 = 1;

/// Length of the random archive id bound into every page, index and slot.
pub const ARCHIVE_ID_LEN: usize = 16;
/// Length of a write session's random salt (HKDF salt for its subkeys).
pub const SESSION_SALT_LEN: usize = 32;
/// Length of the content key and of every subkey.
pub const KEY_LEN: usize = 32;
/// Length of a ChaCha20-Poly1305 nonce.
pub const NONCE_LEN: usize = 12;
/// Length of a Poly1305 tag.
pub const TAG_LEN: usize = 16;
/// Length of an Argon2id salt in a password slot.
pub const KDF_SALT_LEN: usize = 16;
/// Length of a SHA-256 digest.
pub const DIGEST_LEN: usize = 32;

/// Most key slots one archive may carry.
pub const MAX_KEY_SLOTS: usize = 16;
/// Largest key-slot body accepted (a password slot's body is 88 bytes).
pub const MAX_KEY_SLOT_LEN: usize = 1024;
/// Largest key-slot block: the count and `MAX_KEY_SLOTS` slots of the
/// largest size, each with its kind and length.
pub const MAX_KEY_SLOT_BLOCK_LEN: usize = 2 + MAX_KEY_SLOTS * (3 + MAX_KEY_SLOT_LEN);
/// Password slots a reader tries before giving up: each try costs a full
/// Argon2id derivation.
pub const MAX_PASSWORD_SLOTS_TRIED: usize = 4;
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

/// Largest plaintext of one page (the presets use 64 KiB to 8 MiB; writers
/// accept 4 KiB to this).
pub const MAX_PAGE_PLAIN_LEN: u32 = 16 << 20;
/// Largest stored page: a page is stored raw when zstd does not shrink it, so
/// stored bytes never exceed the plaintext plus the tag.
pub const MAX_PAGE_STORED_LEN: u32 = MAX_PAGE_PLAIN_LEN + TAG_LEN as u32;
/// Largest sealed index accepted.
pub const MAX_INDEX_STORED_LEN: u64 = 1 << 30;
/// Largest decompressed index accepted.
pub const MAX_INDEX_PLAIN_LEN: u64 = 2 << 30;
/// Longest stored path or link target, in bytes.
pub const MAX_PATH_LEN: usize = 16 * 1024;
/// Most write sessions (the create plus appends) one archive may record.
pub const MAX_SESSIONS: usize = 1 << 16;

/// HKDF-SHA256 `info` labels: one subkey per purpose, so a key never serves
/// two purposes.
pub mod labels {
    /// Seals data pages of one write session.
    pub const PAGE_KEY: &[u8] = b"revault-lockbox v1 page key";
    /// Seals the index written by one write session.
    pub const INDEX_KEY: &[u8] = b"revault-lockbox v1 index key";
    /// Authenticates the trailer written by one write session.
    pub const TRAILER_KEY: &[u8] = b"revault-lockbox v1 trailer key";
    /// Domain separator at the start of every key-slot AAD.
    pub const KEY_SLOT_AAD: &[u8] = b"revault-lockbox v1 key slot";
}
