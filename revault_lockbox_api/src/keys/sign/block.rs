//! A session's signatures as the block holds them (FORMAT.md §3.10): the
//! writer's keys sign its commit hash into scheme-1 entries, and a reader
//! checks each entry against the full public key it carries and the
//! fingerprint it names. Which signers to trust is the caller's policy.

use std::fmt;
use std::sync::Arc;

use super::key::{Fingerprint, SessionSignature, SigningKey, VerifyingKey};
use crate::error::KeyError;
use crate::format::{
    encode_signatures, Hash, Signature, ARCHIVE_ID_LEN, FLAG_ADOPTS, MAX_HYBRID_SIGNATURES, SCHEME_HYBRID,
};

/// One signature of a session, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureCheck {
    /// The key it names (its fingerprint); `None` for a scheme this
    /// version does not know, whose key id is no fingerprint.
    pub signer: Option<Fingerprint>,
    /// Whether it verifies: the key it carries has the fingerprint it
    /// names, and both halves verify over this session's commit.
    pub valid: bool,
    /// Whether the signer also vouches for every earlier session
    /// (`--adopt-unsigned`); signed, so only meaningful when `valid`.
    pub adopts: bool,
}

impl fmt::Display for SignatureCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.signer {
            Some(signer) => write!(f, "{signer}"),
            None => f.write_str("a signature of an unknown scheme"),
        }
    }
}

/// The signature block of the session of `archive_id` with `commit`, signed
/// by every key of `keys` (at most 12, what one block holds); `adopts`
/// signs the flag that vouches for the earlier sessions too.
pub(crate) fn sign_block(
    keys: &[Arc<SigningKey>],
    archive_id: &[u8; ARCHIVE_ID_LEN],
    commit: &Hash,
    adopts: bool,
) -> Result<Vec<u8>, KeyError> {
    if keys.is_empty() || keys.len() > MAX_HYBRID_SIGNATURES {
        return Err(KeyError::InvalidSignature("a session takes 1 to 12 signing keys"));
    }
    let flags = if adopts { FLAG_ADOPTS } else { 0 };
    let mut signatures = Vec::with_capacity(keys.len());
    for key in keys {
        let signature = key.sign_commit(archive_id, commit, flags)?;
        let public = key.verifying_key();
        signatures.push(Signature::hybrid(
            &key.fingerprint().0,
            flags,
            public.as_bytes(),
            &signature.to_bytes(),
        ));
    }
    Ok(encode_signatures(&signatures))
}

/// Checks each of a session's `signatures` against its `commit`.
pub(crate) fn check_signatures(
    archive_id: &[u8; ARCHIVE_ID_LEN],
    commit: &Hash,
    signatures: &[Signature],
) -> Vec<SignatureCheck> {
    signatures.iter().map(|s| check_one(archive_id, commit, s)).collect()
}

fn check_one(archive_id: &[u8; ARCHIVE_ID_LEN], commit: &Hash, stored: &Signature) -> SignatureCheck {
    // Only scheme 1 names its key by a fingerprint: another scheme's key
    // id is no fingerprint, whatever its length, and is not shown as one.
    let named = (stored.scheme == SCHEME_HYBRID).then_some(&stored.key_id[..]);
    let signer = named.and_then(|id| <[u8; 32]>::try_from(id).ok()).map(Fingerprint);
    let Some(hybrid) = stored.as_hybrid() else {
        return SignatureCheck { signer, valid: false, adopts: false };
    };
    let valid = VerifyingKey::from_bytes(hybrid.public_key).is_ok_and(|key| {
        Some(key.fingerprint()) == signer
            && SessionSignature::from_bytes(hybrid.signature)
                .is_ok_and(|s| key.verify_commit(archive_id, commit, hybrid.flags, &s))
    });
    SignatureCheck { signer, valid, adopts: hybrid.flags & FLAG_ADOPTS != 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::decode_signatures;

    #[test]
    fn a_block_verifies_for_its_commit_and_names_its_signers() {
        let (a, b) = (Arc::new(SigningKey::generate().unwrap()), Arc::new(SigningKey::generate().unwrap()));
        let block = sign_block(&[a.clone(), b.clone()], &[1; 16], &[2; 32], true).unwrap();
        let sigs = decode_signatures(&block).unwrap();
        let checks = check_signatures(&[1; 16], &[2; 32], &sigs);
        assert_eq!(
            checks.iter().map(|c| c.signer).collect::<Vec<_>>(),
            [Some(a.fingerprint()), Some(b.fingerprint())]
        );
        assert!(checks.iter().all(|c| c.valid && c.adopts));
        assert!(check_signatures(&[1; 16], &[3; 32], &sigs).iter().all(|c| !c.valid), "another commit");
        assert!(check_signatures(&[4; 16], &[2; 32], &sigs).iter().all(|c| !c.valid), "another archive");

        // The flag is signed: clearing it breaks the signature.
        let mut cleared = sigs[0].clone();
        cleared.value[0] = 0;
        assert!(!check_one(&[1; 16], &[2; 32], &cleared).valid);
        // A key id naming another key than the one carried.
        let renamed = Signature { key_id: b.fingerprint().0.to_vec(), ..sigs[0].clone() };
        assert!(!check_one(&[1; 16], &[2; 32], &renamed).valid);
        // Truncated, or of an unknown scheme: not valid, not a panic.
        let short = Signature { value: sigs[0].value[..100].to_vec(), ..sigs[0].clone() };
        assert!(!check_one(&[1; 16], &[2; 32], &short).valid);
        // An unknown scheme's key id is no fingerprint, even of 32 bytes
        // (one was shown as a made-up `lbsig1…`; JSON.md says null).
        for key_id in [vec![1; 3], vec![1; 32]] {
            let other = Signature { scheme: 7, key_id, ..sigs[0].clone() };
            assert_eq!(
                check_one(&[1; 16], &[2; 32], &other),
                SignatureCheck { signer: None, valid: false, adopts: false }
            );
        }
        assert!(sign_block(&[], &[1; 16], &[2; 32], false).is_err());
        assert!(sign_block(&vec![a; 13], &[1; 16], &[2; 32], false).is_err());
    }
}
