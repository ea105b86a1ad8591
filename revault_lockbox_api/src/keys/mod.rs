//! Public-key slots: age recipients and identities (X25519, the ML-KEM-768 +
//! X25519 post-quantum hybrid, SSH ed25519 and RSA keys, age plugins) and
//! the slot bodies that wrap an archive's content key to one recipient.
//!
//! The `age` crate does the work for X25519, SSH keys and identity files;
//! this module adds age v1.3's hybrid `mlkem768x25519` type (which the crate
//! lacks) through age's own `Recipient`/`Identity` traits, and the slot
//! body (`docs/KEYS.md` gives its bytes): an age stanza wrapping a fresh
//! file key, and the content key sealed under a key derived from it, with
//! the archive's AAD and the stanza text bound by the seal.
//!
//! Signing keys (`sign`): hybrid Ed25519 + ML-DSA-65 keys that sign a
//! session, their public keys, fingerprints and key files.
//!
//! # Mixing rule
//!
//! Any one slot opens the whole archive, so an archive is only as
//! post-quantum as its weakest slot. Following age, post-quantum (hybrid)
//! recipients are not mixed with classical-only ones (X25519, SSH):
//! [`check_recipient_mix`] refuses such a set unless the caller explicitly
//! allows it (the CLI asks for a flag). Password and key-file slots are
//! symmetric and not concerned. A plugin recipient counts as
//! classical-only: what it wraps with is known only to its plugin.
//!
//! # Limits
//!
//! Everything parsed is bounded before use: a slot body is at most
//! [`MAX_SLOT_BODY_LEN`] bytes, with at most [`MAX_SLOT_STANZAS`] stanzas and
//! lines of at most [`MAX_SLOT_LINE_LEN`] bytes; a recipient string is at most
//! [`MAX_RECIPIENT_LEN`] bytes; recipients and identity files at most
//! [`MAX_KEY_FILE_LEN`] bytes; a passphrase-protected age identity file
//! may cost at most 2^[`MAX_SCRYPT_LOG_N`] scrypt work. Malformed input is an
//! error naming what (and the line, for files); nothing panics.
//!
//! # Secrets
//!
//! Identities, file keys and content keys live in zeroizing types; `Debug`
//! of an [`Identity`] prints its public recipient only. A failed
//! authentication never says more than "no identity matched".

mod hybrid;
mod identity;
mod keyfile;
mod keygen;
mod plugin;
mod recipient;
mod sign;
mod slot;
mod table;
#[cfg(test)]
mod vector_tests;

pub use crate::error::KeyError;
pub use identity::{Identity, PassphraseFn};
pub use keyfile::KeyFile;
pub use keygen::keygen;
pub use plugin::{NoPluginUi, PluginUi};
pub use recipient::{parse_recipients, read_recipients_file, Recipient, RecipientKind};
pub(crate) use sign::{check_signatures, sign_block};
pub use sign::{
    parse_signers, read_signers_file, Fingerprint, SessionSignature, SignatureCheck, SigningKey,
    VerifyingKey, FINGERPRINT_LABEL, FINGERPRINT_LEN, PUBLIC_KEY_LEN, SIGNATURE_LEN,
};
pub(crate) use slot::stanza_types;
pub(crate) use slot::{unwrap_content_key, wrap_content_key};
pub use table::{KeySet, Unlock};

/// Largest slot body, in bytes (the archive's key-slot room).
pub const MAX_SLOT_BODY_LEN: usize = 4096;
/// Most stanzas one slot body may hold.
pub const MAX_SLOT_STANZAS: usize = 8;
/// Longest line in a slot body, newline excluded (a hybrid stanza's first
/// line is 1512 bytes).
pub const MAX_SLOT_LINE_LEN: usize = 2048;
/// Longest recipient string (an `age1pq1…` is 1960 bytes, a 16384-bit
/// `ssh-rsa` key about 2800).
pub const MAX_RECIPIENT_LEN: usize = 4096;
/// Largest recipients or identity file read.
pub const MAX_KEY_FILE_LEN: u64 = 1 << 20;
/// Most scrypt work (log2 N) a passphrase-protected age identity file may
/// ask for: 2^20 is 1 GiB of memory; age itself writes 2^18.
pub const MAX_SCRYPT_LOG_N: u8 = 20;

/// Checks that a set of recipients does not mix post-quantum (hybrid) with
/// classical-only recipients, unless `allow_mixed`. See the module docs
/// for why.
pub fn check_recipient_mix(recipients: &[Recipient], allow_mixed: bool) -> Result<(), KeyError> {
    let pq = recipients.iter().filter(|r| r.is_post_quantum()).count();
    let classical = recipients.len() - pq;
    if pq > 0 && classical > 0 && !allow_mixed {
        return Err(KeyError::MixedRecipients { pq, classical });
    }
    Ok(())
}

/// Fills `buf` from the operating system's random generator.
fn random_bytes(buf: &mut [u8]) -> Result<(), KeyError> {
    getrandom::fill(buf).map_err(|e| KeyError::Random(std::io::Error::other(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixing_rule() {
        let (_, x) = keygen(false).unwrap();
        let (_, pq) = keygen(true).unwrap();
        let x: Recipient = x.parse().unwrap();
        let pq: Recipient = pq.parse().unwrap();
        assert!(check_recipient_mix(&[x.clone(), x.clone()], false).is_ok());
        assert!(check_recipient_mix(&[pq.clone(), pq.clone()], false).is_ok());
        assert!(check_recipient_mix(&[], false).is_ok());
        let err = check_recipient_mix(&[pq.clone(), x.clone()], false).unwrap_err();
        assert!(matches!(err, KeyError::MixedRecipients { pq: 1, classical: 1 }), "{err}");
        assert!(err.to_string().contains("cannot be mixed"));
        assert!(check_recipient_mix(&[pq.clone(), x], true).is_ok());
        // A plugin recipient counts as classical-only.
        let plugin: Recipient =
            "age1lockboxtest1gfxq5wltx98rvpxjp2e9qdx9kr6g2e246lgh7esw96sw7wc5da2ql6e8r8".parse().unwrap();
        let err = check_recipient_mix(&[pq, plugin], false).unwrap_err();
        assert!(matches!(err, KeyError::MixedRecipients { pq: 1, classical: 1 }), "{err}");
    }
}
