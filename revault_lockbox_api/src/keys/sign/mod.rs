//! Signing keys: who wrote a session. A hybrid key pairs Ed25519 (RFC 8032)
//! with ML-DSA-65 (FIPS 204), so a signature stays unforgeable while either
//! algorithm holds: a signature is valid only when both halves verify.
//!
//! A session signature signs one message, [`SIGNATURE_LABEL`] || archive id
//! (16 bytes) || session number (u32, little-endian) || the session's
//! commit hash (32 bytes): the label keeps it from meaning anything
//! elsewhere; the id and the number keep it from being copied to another
//! archive or another session. A public key is named by its
//! [`Fingerprint`] (`lbsig1…`), SHA-256 of [`FINGERPRINT_LABEL`] and the
//! whole key. `docs/KEYS.md` ("Signing keys") gives the bytes and the key
//! files' text, with known-answer vectors.
//!
//! The arithmetic is the crates' (`ed25519-dalek`, `ml-dsa`) behind the
//! few functions of `halves`, which the archive and the Wycheproof
//! vectors share.

mod file;
mod halves;
mod key;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod wycheproof_tests;

pub use key::{
    Fingerprint, SessionSignature, SigningKey, VerifyingKey, FINGERPRINT_LEN, PUBLIC_KEY_LEN, SIGNATURE_LEN,
};

/// The label that starts every signed message.
pub const SIGNATURE_LABEL: &[u8] = b"revault-lockbox v3 session signature";
/// The label hashed before the public key into its fingerprint.
pub const FINGERPRINT_LABEL: &[u8] = b"revault-lockbox signing key fingerprint";
/// The bech32 prefix of a fingerprint.
pub(crate) const FINGERPRINT_HRP: bech32::Hrp = bech32::Hrp::parse_unchecked("lbsig");
