//! Keys and sealing: the password KDF, the random content key and the key
//! slots that wrap it, the per-session key schedule, and the codec that
//! compresses and seals (or opens and decompresses) each page and index
//! node; the chunker's keyed gear tables and chunk-id key. The fuzz
//! harness reaches in only through `seam`, which this module owns and the
//! harness sets.
//!
//! Secrets live in zeroizing types with redacted `Debug`, in memory locked
//! against swapping where the system allows (`locked`). Every nonce is a
//! [`PageNonce`] built in one place; see `schedule` for why none repeats.

mod aead;
mod backend;
mod chunk_keys;
mod codec;
mod compress;
mod kdf;
#[allow(unsafe_code)]
mod kdf_memory;
mod keyslot;
mod locked;
mod schedule;
#[cfg(feature = "fuzzing")]
pub(crate) mod seam;
mod secret;
mod spool;
#[cfg(test)]
mod wycheproof_tests;

pub use aead::{AeadBackend, AEAD_ENV};
pub use backend::ChaChaBackend;
pub use chunk_keys::ChunkKeys;
pub(crate) use codec::{
    open_data_page, open_data_page_into, open_index_node, open_root, open_session_body, page_buffer_capacity,
    seal_data_page, seal_index_node, seal_root, seal_session_body, to_seal, Sealed, Sealing,
};
#[cfg(feature = "fuzzing")]
pub(crate) use compress::decompress;
pub(crate) use compress::looks_incompressible;
pub use kdf::{KdfParams, DEFAULT_KDF_BUDGET};
pub(crate) use keyslot::{
    unwrap_key_file_slots, unwrap_password_slots, wrap_key_file_slot, wrap_password_slot, PasswordFailure,
};
pub(crate) use locked::Locked;
pub(crate) use schedule::{PageNonce, SessionKeys};
pub use secret::Password;
pub(crate) use secret::{random_bytes, ContentKey};
pub(crate) use spool::SpoolCipher;

/// Authentication failed: a tag did not verify. Deliberately carries no
/// detail of what inside the sealed data was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AuthFailed;
