//! Signing keys: who wrote a session. A hybrid key pairs Ed25519 (RFC 8032)
//! with ML-DSA-65 (FIPS 204), so a signature stays unforgeable while either
//! algorithm holds: a signature is valid only when both halves verify.
//!
//! A session signature signs FORMAT.md §3.10's message: a label || the
//! archive id || the session's commit hash (which covers its header, and
//! so its number, and every earlier session by the hash chain) || flags:
//! the label keeps it from meaning anything elsewhere; the id and the
//! commit keep it from being copied to another archive or another
//! session. `block` makes and checks a session's signature block; `trusted`
//! reads files of trusted signers. A public key is named by its
//! [`Fingerprint`] (`lbsig1…`), SHA-256 of [`FINGERPRINT_LABEL`] and the
//! whole key. `docs/KEYS.md` ("Signing keys") gives the bytes and the key
//! files' text, with known-answer vectors.
//!
//! The arithmetic is the crates' (`ed25519-dalek`, `ml-dsa`) behind the
//! few functions of `halves`, which the archive and the Wycheproof
//! vectors share.

mod block;
mod file;
mod halves;
mod key;
#[cfg(test)]
mod tests;
mod trusted;
#[cfg(test)]
mod wycheproof_tests;

pub use block::SignatureCheck;
pub(crate) use block::{check_signatures, sign_block};
pub use key::{
    Fingerprint, SessionSignature, SigningKey, VerifyingKey, FINGERPRINT_LEN, PUBLIC_KEY_LEN, SIGNATURE_LEN,
};
pub use trusted::{parse_signers, read_signers_file};

/// The label hashed before the public key into its fingerprint.
pub const FINGERPRINT_LABEL: &[u8] = b"revault-lockbox signing key fingerprint";
/// The bech32 prefix of a fingerprint.
pub(crate) const FINGERPRINT_HRP: bech32::Hrp = bech32::Hrp::parse_unchecked("lbsig");
