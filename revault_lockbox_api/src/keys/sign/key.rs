//! The hybrid signing key, its public key and fingerprint, and the session
//! signature: both halves over one message, valid only when both verify.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::halves::{
    ed25519_public, ed25519_sign, ml_dsa_public, ml_dsa_sign, Ed25519Public, MlDsaPublic, ED25519_PUBLIC_LEN,
    ED25519_SIGNATURE_LEN, ML_DSA_PUBLIC_LEN, ML_DSA_SIGNATURE_LEN, SEED_LEN,
};
use super::{FINGERPRINT_HRP, FINGERPRINT_LABEL};
use crate::crypto::Locked;
use crate::format::{signed_message, HYBRID_PUBLIC_KEY_LEN, HYBRID_SIGNATURE_LEN};
use crate::keys::{random_bytes, KeyError};

/// A public key's length: Ed25519's 32 bytes, then ML-DSA-65's 1952.
pub const PUBLIC_KEY_LEN: usize = ED25519_PUBLIC_LEN + ML_DSA_PUBLIC_LEN;
/// A session signature's length: Ed25519's 64 bytes, then ML-DSA-65's 3309.
pub const SIGNATURE_LEN: usize = ED25519_SIGNATURE_LEN + ML_DSA_SIGNATURE_LEN;
/// A fingerprint's length in bytes (before bech32).
pub const FINGERPRINT_LEN: usize = 32;
// The signature block's layout (format) and the halves agree.
const _: () = assert!(PUBLIC_KEY_LEN == HYBRID_PUBLIC_KEY_LEN && SIGNATURE_LEN == HYBRID_SIGNATURE_LEN);
/// The secret: the Ed25519 secret key, then the ML-DSA-65 seed ξ.
pub(crate) const SECRET_LEN: usize = 2 * SEED_LEN;

/// A hybrid signing key (Ed25519 + ML-DSA-65): two independent 32-byte
/// seeds, in memory locked against swapping where the system allows,
/// wiped on drop. The crates' expanded keys exist only while a signature
/// is made and are wiped by those crates when dropped. `Debug` prints the
/// fingerprint only.
pub struct SigningKey {
    seeds: Locked<Zeroizing<[u8; SECRET_LEN]>>,
    public: VerifyingKey,
}

impl SigningKey {
    /// A new key from the operating system's random generator.
    pub fn generate() -> Result<SigningKey, KeyError> {
        let mut seeds = Locked::new(Zeroizing::new([0u8; SECRET_LEN]));
        random_bytes(seeds.as_mut())?;
        Ok(SigningKey::from_locked(seeds))
    }

    /// The key of the 64 secret bytes `seeds` (Ed25519 secret key ||
    /// ML-DSA-65 seed ξ), as a key file holds them; the caller wipes its copy.
    pub(crate) fn from_seeds(seeds: &[u8; SECRET_LEN]) -> SigningKey {
        let mut locked = Locked::new(Zeroizing::new([0u8; SECRET_LEN]));
        locked.copy_from_slice(seeds);
        SigningKey::from_locked(locked)
    }

    fn from_locked(seeds: Locked<Zeroizing<[u8; SECRET_LEN]>>) -> SigningKey {
        let (ed, ml) = split_seeds(&seeds);
        let public = VerifyingKey::from_halves(ed25519_public(ed), ml_dsa_public(ml));
        SigningKey { seeds, public }
    }

    pub(crate) fn seeds(&self) -> &[u8; SECRET_LEN] {
        &self.seeds
    }

    /// The public key, to give to whoever checks the signatures.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.public
    }

    /// The public key's fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.public.fingerprint()
    }

    /// Signs the session of archive `archive_id` whose commit is the
    /// 32-byte `commit_hash`, with both algorithms (ML-DSA hedged: fresh
    /// randomness from the operating system for each signature); `flags`
    /// are signed with it (FORMAT.md §3.10).
    pub fn sign_commit(
        &self,
        archive_id: &[u8; 16],
        commit_hash: &[u8; 32],
        flags: u8,
    ) -> Result<SessionSignature, KeyError> {
        let message = signed_message(archive_id, commit_hash, flags);
        let (ed, ml) = split_seeds(&self.seeds);
        let mut rnd = Zeroizing::new([0u8; 32]);
        random_bytes(rnd.as_mut())?;
        let ml_dsa = ml_dsa_sign(ml, &message, b"", &rnd).expect("the empty context is valid");
        Ok(SessionSignature { ed25519: ed25519_sign(ed, &message), ml_dsa: ml_dsa.into_boxed_slice() })
    }
}

fn split_seeds(seeds: &[u8; SECRET_LEN]) -> (&[u8; SEED_LEN], &[u8; SEED_LEN]) {
    let (ed, ml) = seeds.split_at(SEED_LEN);
    (ed.try_into().expect("32 bytes"), ml.try_into().expect("32 bytes"))
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({})", self.fingerprint())
    }
}

/// A hybrid public key: Ed25519 and ML-DSA-65, decoded once.
#[derive(Clone)]
pub struct VerifyingKey {
    ed25519: Ed25519Public,
    ml_dsa: MlDsaPublic,
    bytes: Box<[u8]>,
}

impl VerifyingKey {
    fn from_halves(ed25519: Ed25519Public, ml_dsa: MlDsaPublic) -> VerifyingKey {
        let mut bytes = Vec::with_capacity(PUBLIC_KEY_LEN);
        bytes.extend_from_slice(&ed25519.to_bytes());
        bytes.extend_from_slice(&ml_dsa.to_bytes());
        VerifyingKey { ed25519, ml_dsa, bytes: bytes.into_boxed_slice() }
    }

    /// Decodes the 1984 bytes of a public key (Ed25519's 32, then
    /// ML-DSA-65's 1952).
    pub fn from_bytes(bytes: &[u8]) -> Result<VerifyingKey, KeyError> {
        if bytes.len() != PUBLIC_KEY_LEN {
            return Err(KeyError::InvalidSigningPublicKey("not 1984 bytes"));
        }
        let (ed, ml) = bytes.split_at(ED25519_PUBLIC_LEN);
        let ed25519 = Ed25519Public::parse(ed)
            .ok_or(KeyError::InvalidSigningPublicKey("the Ed25519 key is no curve point"))?;
        let ml_dsa = MlDsaPublic::parse(ml).expect("1952 bytes decode");
        Ok(VerifyingKey { ed25519, ml_dsa, bytes: bytes.into() })
    }

    /// The Ed25519 half (the Wycheproof vectors check it alone).
    #[cfg(test)]
    pub(crate) fn ed25519(&self) -> &Ed25519Public {
        &self.ed25519
    }

    /// The ML-DSA-65 half (the Wycheproof vectors check it alone).
    #[cfg(test)]
    pub(crate) fn ml_dsa(&self) -> &MlDsaPublic {
        &self.ml_dsa
    }

    /// The 1984 bytes of the public key.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// SHA-256 of a label and the whole public key, shown in bech32.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut hash = Sha256::new();
        hash.update(FINGERPRINT_LABEL);
        hash.update(&self.bytes);
        Fingerprint(hash.finalize().into())
    }

    /// Whether `signature` is this key's signature of the session of
    /// archive `archive_id` with commit `commit_hash` and `flags`: true
    /// only when both the Ed25519 and the ML-DSA-65 halves verify.
    #[must_use]
    pub fn verify_commit(
        &self,
        archive_id: &[u8; 16],
        commit_hash: &[u8; 32],
        flags: u8,
        signature: &SessionSignature,
    ) -> bool {
        let message = signed_message(archive_id, commit_hash, flags);
        self.ed25519.verify(&message, &signature.ed25519)
            && self.ml_dsa.verify(&message, b"", &signature.ml_dsa)
    }
}

impl PartialEq for VerifyingKey {
    fn eq(&self, other: &VerifyingKey) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for VerifyingKey {}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VerifyingKey({})", self.fingerprint())
    }
}

/// A public key's fingerprint: SHA-256 of [`FINGERPRINT_LABEL`] and the
/// 1984-byte key, written in bech32 under `lbsig` (`lbsig1…`, 64
/// characters). It names a signer (`--signer`); the signature itself
/// carries the full key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub [u8; FINGERPRINT_LEN]);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = bech32::encode::<bech32::Bech32>(FINGERPRINT_HRP, &self.0).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

impl FromStr for Fingerprint {
    type Err = KeyError;

    /// Parses `lbsig1…` (bech32, one case throughout).
    fn from_str(s: &str) -> Result<Fingerprint, KeyError> {
        let bad = |reason: &str| KeyError::InvalidFingerprint {
            shown: s.chars().take(24).collect(),
            reason: reason.to_owned(),
        };
        let checked = bech32::primitives::decode::CheckedHrpstring::new::<bech32::Bech32>(s)
            .map_err(|e| bad(&format!("not bech32 ({e})")))?;
        if checked.hrp() != FINGERPRINT_HRP {
            return Err(bad("it does not start with lbsig1"));
        }
        let bytes: Vec<u8> = checked.byte_iter().collect();
        let bytes: [u8; FINGERPRINT_LEN] = bytes.try_into().map_err(|_| bad("not 32 bytes"))?;
        Ok(Fingerprint(bytes))
    }
}

/// A session signature: Ed25519's 64 bytes, then ML-DSA-65's 3309.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionSignature {
    ed25519: [u8; ED25519_SIGNATURE_LEN],
    ml_dsa: Box<[u8]>,
}

impl SessionSignature {
    /// Splits the 3373 bytes of a signature; any other length is refused.
    /// Whether each half is well formed is the verification's to say.
    pub fn from_bytes(bytes: &[u8]) -> Result<SessionSignature, KeyError> {
        if bytes.len() != SIGNATURE_LEN {
            return Err(KeyError::InvalidSignature("not 3373 bytes"));
        }
        let (ed, ml) = bytes.split_at(ED25519_SIGNATURE_LEN);
        Ok(SessionSignature { ed25519: ed.try_into().expect("64 bytes"), ml_dsa: ml.into() })
    }

    /// The 3373 bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        [&self.ed25519[..], &self.ml_dsa].concat()
    }
}

impl fmt::Debug for SessionSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionSignature({} bytes)", SIGNATURE_LEN)
    }
}
