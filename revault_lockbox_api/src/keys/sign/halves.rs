//! The two halves of the hybrid signature, each one well-kept crate's:
//! Ed25519 (RFC 8032, `ed25519-dalek`) and ML-DSA-65 (FIPS 204, RustCrypto's
//! `ml-dsa`). Everything the archive signs or checks goes through these
//! few functions, and the Wycheproof vectors run through the same ones
//! (`wycheproof_tests`), so what they accept is what the archive accepts.

use ed25519_dalek::Signer as _;
use ml_dsa::{EncodedSignature, EncodedVerifyingKey, ExpandedSigningKey, MlDsa65, B32};
use zeroize::Zeroizing;

/// Ed25519 public key length.
pub(crate) const ED25519_PUBLIC_LEN: usize = 32;
/// Ed25519 signature length.
pub(crate) const ED25519_SIGNATURE_LEN: usize = 64;
/// ML-DSA-65 public (verifying) key length, FIPS 204 table 2.
pub(crate) const ML_DSA_PUBLIC_LEN: usize = 1952;
/// ML-DSA-65 signature length, FIPS 204 table 2.
pub(crate) const ML_DSA_SIGNATURE_LEN: usize = 3309;
/// Length of each half's secret seed: Ed25519's secret key, ML-DSA's ξ.
pub(crate) const SEED_LEN: usize = 32;
/// Longest FIPS 204 context string.
const MAX_CONTEXT_LEN: usize = 255;

/// An Ed25519 public key, decoded (a point on the curve).
#[derive(Clone)]
pub(crate) struct Ed25519Public(ed25519_dalek::VerifyingKey);

impl Ed25519Public {
    /// Decodes a 32-byte public key; `None` for a wrong length or a string
    /// that is no point.
    pub(crate) fn parse(bytes: &[u8]) -> Option<Ed25519Public> {
        let bytes: &[u8; ED25519_PUBLIC_LEN] = bytes.try_into().ok()?;
        ed25519_dalek::VerifyingKey::from_bytes(bytes).ok().map(Ed25519Public)
    }

    pub(crate) fn to_bytes(&self) -> [u8; ED25519_PUBLIC_LEN] {
        self.0.to_bytes()
    }

    /// RFC 8032 verification, strict: `S` must be reduced, and a key or `R`
    /// of small order is refused (so that no signature verifies for every
    /// message under a weak key).
    pub(crate) fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(signature) = ed25519_dalek::Signature::from_slice(signature) else {
            return false;
        };
        self.0.verify_strict(message, &signature).is_ok()
    }
}

/// Signs with the Ed25519 key of `seed` (deterministic, RFC 8032).
pub(crate) fn ed25519_sign(seed: &[u8; SEED_LEN], message: &[u8]) -> [u8; ED25519_SIGNATURE_LEN] {
    ed25519_dalek::SigningKey::from_bytes(seed).sign(message).to_bytes()
}

/// The Ed25519 public key of `seed`.
pub(crate) fn ed25519_public(seed: &[u8; SEED_LEN]) -> Ed25519Public {
    Ed25519Public(ed25519_dalek::SigningKey::from_bytes(seed).verifying_key())
}

/// An ML-DSA-65 public key, decoded (FIPS 204 pkDecode takes any bytes of
/// the right length).
#[derive(Clone)]
pub(crate) struct MlDsaPublic(Box<ml_dsa::VerifyingKey<MlDsa65>>);

impl MlDsaPublic {
    /// Decodes a 1952-byte public key; `None` for a wrong length.
    pub(crate) fn parse(bytes: &[u8]) -> Option<MlDsaPublic> {
        let encoded = EncodedVerifyingKey::<MlDsa65>::try_from(bytes).ok()?;
        Some(MlDsaPublic(Box::new(ml_dsa::VerifyingKey::decode(&encoded))))
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        self.0.encode().to_vec()
    }

    /// FIPS 204 ML-DSA.Verify (Algorithm 3) with context `ctx`: `false` for
    /// a signature of the wrong length, a malformed hint, a norm out of
    /// bounds, a context over 255 bytes, or one that does not verify.
    pub(crate) fn verify(&self, message: &[u8], ctx: &[u8], signature: &[u8]) -> bool {
        let Ok(encoded) = EncodedSignature::<MlDsa65>::try_from(signature) else {
            return false;
        };
        let Some(signature) = ml_dsa::Signature::<MlDsa65>::decode(&encoded) else {
            return false;
        };
        self.0.verify_with_context(message, ctx, &signature)
    }
}

/// The ML-DSA-65 public key of seed ξ (FIPS 204 ML-DSA.KeyGen_internal).
pub(crate) fn ml_dsa_public(seed: &[u8; SEED_LEN]) -> MlDsaPublic {
    let key = ExpandedSigningKey::<MlDsa65>::from_seed(&B32::from(*seed));
    MlDsaPublic(Box::new(key.verifying_key()))
}

/// FIPS 204 ML-DSA.Sign (Algorithm 2) with the key of seed ξ, context
/// `ctx` and the 32 bytes `rnd` (random for the hedged signing the archive
/// does, zero for the deterministic variant): `None` when `ctx` is longer
/// than 255 bytes.
///
/// The crate's `sign_randomized` would draw `rnd` itself through a
/// `rand_core` generator; taking `rnd` as an argument instead lets the
/// known-answer vectors run through this very function. So this builds
/// Algorithm 2's `M' = 0 || len(ctx) || ctx || M` and calls the crate's
/// Algorithm 7 (`sign_internal`); the Wycheproof vectors with a context
/// and a non-zero `rnd` pin that down.
pub(crate) fn ml_dsa_sign(
    seed: &[u8; SEED_LEN],
    message: &[u8],
    ctx: &[u8],
    rnd: &[u8; 32],
) -> Option<Vec<u8>> {
    if ctx.len() > MAX_CONTEXT_LEN {
        return None;
    }
    let key = ExpandedSigningKey::<MlDsa65>::from_seed(&B32::from(*seed));
    let rnd = Zeroizing::new(B32::from(*rnd));
    let domain = [0u8, ctx.len() as u8];
    Some(key.sign_internal(&[&domain, ctx, message], &rnd).encode().to_vec())
}
