//! The commitments: BLAKE3 in its key-derivation mode, one context per
//! use, so that no hash of one kind can stand for another. A unit's hash
//! is recorded by whatever points to it; the trailer's commit hash covers
//! the root's, the session header's and the previous trailer's, and so
//! every byte a reader accepts (FORMAT.md §3.8).

use super::HASH_LEN;

/// Context of a unit's hash: its frame and sealed bytes.
const UNIT: &str = "revault-lockbox v3 unit";
/// Context of a session header's hash.
const SESSION_HEADER: &str = "revault-lockbox v3 session header";
/// Context of a trailer's commit hash.
const COMMIT: &str = "revault-lockbox v3 commit";

/// A 32-byte commitment.
pub(crate) type Hash = [u8; HASH_LEN];

fn hash(context: &str, bytes: &[u8]) -> Hash {
    *blake3::Hasher::new_derive_key(context).update(bytes).finalize().as_bytes()
}

/// The hash of a unit as stored: its frame, then its sealed bytes.
pub(crate) fn unit_hash(frame: &[u8], sealed: &[u8]) -> Hash {
    *blake3::Hasher::new_derive_key(UNIT).update(frame).update(sealed).finalize().as_bytes()
}

/// The hash of a whole session header (clear part and sealed body).
pub(crate) fn session_header_hash(header: &[u8]) -> Hash {
    hash(SESSION_HEADER, header)
}

/// The commit hash of a trailer's core (the trailer without its
/// signature length and tag).
pub(crate) fn commit_hash(core: &[u8]) -> Hash {
    hash(COMMIT, core)
}
