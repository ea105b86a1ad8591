//! The signature block a session may carry between its root and its
//! trailer (FORMAT.md §3.10). It signs the trailer's commit hash, which
//! does not depend on it. The bytes are here; making and checking the
//! hybrid signatures is `keys::sign`'s.
//!
//! ```text
//! signature_block = SIGNATURE_MAGIC[8] || count u8 || signature[count]
//! signature       = scheme u16 || key_id var(64) || value var(8192)
//! scheme 1        : key_id = fingerprint[32]
//!                   value  = flags u8 || public_key[1984] || ed25519_sig[64] || ml_dsa_sig[3309]
//! signed message  = "revault-lockbox v3 signature" || archive_id[16] || commit_hash[32] || flags u8
//! ```

use super::codec::{malformed, Decoder, Encoder};
use super::hash::Hash;
use super::{DecodeError, ARCHIVE_ID_LEN, MAX_SIGNATURES, MAX_SIGNATURE_BLOCK_LEN, SIGNATURE_MAGIC};

/// Longest key id of a signature.
pub(crate) const MAX_KEY_ID_LEN: usize = 64;
/// Longest signature value.
pub(crate) const MAX_SIGNATURE_VALUE_LEN: usize = 8192;
/// What every signature of a session signs, before the archive id, the
/// commit hash and the flags.
pub(crate) const SIGNED_PREFIX: &[u8] = b"revault-lockbox v3 signature";
/// Scheme 1: Ed25519 + ML-DSA-65, both over the signed message.
pub(crate) const SCHEME_HYBRID: u16 = 1;
/// A hybrid public key: Ed25519's 32 bytes, then ML-DSA-65's 1952.
pub(crate) const HYBRID_PUBLIC_KEY_LEN: usize = 1984;
/// A hybrid signature: Ed25519's 64 bytes, then ML-DSA-65's 3309.
pub(crate) const HYBRID_SIGNATURE_LEN: usize = 3373;
/// Flags bit 0: the signer also vouches for every earlier session of the
/// chain, signed or not (`--adopt-unsigned`).
pub(crate) const FLAG_ADOPTS: u8 = 1;
/// A hybrid signature's bytes in the block: scheme, key id, value.
const HYBRID_ENTRY_LEN: usize = 2 + 4 + 32 + 4 + 1 + HYBRID_PUBLIC_KEY_LEN + HYBRID_SIGNATURE_LEN;
/// Most hybrid signatures one block holds: 12 (65,536 bytes at most).
pub(crate) const MAX_HYBRID_SIGNATURES: usize = (MAX_SIGNATURE_BLOCK_LEN as usize - 9) / HYBRID_ENTRY_LEN;

/// One signature as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    /// Which scheme made it (0 is reserved).
    pub(crate) scheme: u16,
    pub(crate) key_id: Vec<u8>,
    pub(crate) value: Vec<u8>,
}

/// The value of a scheme-1 signature, split.
pub(crate) struct HybridValue<'a> {
    pub(crate) flags: u8,
    pub(crate) public_key: &'a [u8],
    pub(crate) signature: &'a [u8],
}

impl Signature {
    /// A scheme-1 signature by the key `fingerprint` names.
    pub(crate) fn hybrid(
        fingerprint: &[u8; 32],
        flags: u8,
        public_key: &[u8],
        signature: &[u8],
    ) -> Signature {
        debug_assert_eq!((public_key.len(), signature.len()), (HYBRID_PUBLIC_KEY_LEN, HYBRID_SIGNATURE_LEN));
        let value = [&[flags][..], public_key, signature].concat();
        Signature { scheme: SCHEME_HYBRID, key_id: fingerprint.to_vec(), value }
    }

    /// The parts of a scheme-1 value; `None` for another scheme, a key id
    /// that is no fingerprint, a value of another length or unknown flags.
    pub(crate) fn as_hybrid(&self) -> Option<HybridValue<'_>> {
        let fits = self.scheme == SCHEME_HYBRID
            && self.key_id.len() == 32
            && self.value.len() == 1 + HYBRID_PUBLIC_KEY_LEN + HYBRID_SIGNATURE_LEN
            && self.value[0] & !FLAG_ADOPTS == 0;
        fits.then(|| {
            let (public_key, signature) = self.value[1..].split_at(HYBRID_PUBLIC_KEY_LEN);
            HybridValue { flags: self.value[0], public_key, signature }
        })
    }
}

/// The message a session's signatures sign.
pub(crate) fn signed_message(archive_id: &[u8; ARCHIVE_ID_LEN], commit: &Hash, flags: u8) -> Vec<u8> {
    [SIGNED_PREFIX, archive_id, commit, &[flags]].concat()
}

/// Encodes a signature block (1 to `MAX_SIGNATURES` signatures).
pub(crate) fn encode_signatures(signatures: &[Signature]) -> Vec<u8> {
    let mut e = Encoder::default();
    e.bytes(&SIGNATURE_MAGIC).u8(signatures.len() as u8);
    for s in signatures {
        e.u16(s.scheme).var_bytes(&s.key_id).var_bytes(&s.value);
    }
    e.buf
}

/// Decodes a signature block, checking its framing.
pub(crate) fn decode_signatures(bytes: &[u8]) -> Result<Vec<Signature>, DecodeError> {
    let bad = |why| malformed("signature block", why);
    let mut d = Decoder::new(bytes, "signature block");
    if d.array::<8>()? != SIGNATURE_MAGIC {
        return Err(bad("missing"));
    }
    let count = d.u8()? as usize;
    if count == 0 || count > MAX_SIGNATURES {
        return Err(bad("signature count out of range"));
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let scheme = d.u16()?;
        if scheme == 0 {
            return Err(bad("reserved scheme"));
        }
        let key_id = d.var_bytes(MAX_KEY_ID_LEN)?.to_vec();
        out.push(Signature { scheme, key_id, value: d.var_bytes(MAX_SIGNATURE_VALUE_LEN)?.to_vec() });
    }
    d.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_blocks_round_trip_and_refuse_bad_framing() {
        let sigs = vec![Signature { scheme: 1, key_id: vec![5; 8], value: vec![6; 64] }];
        let block = encode_signatures(&sigs);
        assert_eq!(decode_signatures(&block).unwrap(), sigs);
        for len in 0..block.len() {
            assert!(decode_signatures(&block[..len]).is_err(), "len {len}");
        }
        assert!(decode_signatures(&encode_signatures(&[])).is_err());
        let reserved = vec![Signature { scheme: 0, ..sigs[0].clone() }];
        assert!(decode_signatures(&encode_signatures(&reserved)).is_err());
        assert_eq!(signed_message(&[1; 16], &[2; 32], 0).len(), 28 + 16 + 32 + 1);
    }

    #[test]
    fn hybrid_values_split_and_twelve_fill_a_block() {
        let (public, sig) = (vec![7; HYBRID_PUBLIC_KEY_LEN], vec![8; HYBRID_SIGNATURE_LEN]);
        let s = Signature::hybrid(&[9; 32], FLAG_ADOPTS, &public, &sig);
        let v = s.as_hybrid().unwrap();
        assert_eq!((v.flags, v.public_key, v.signature), (1, &public[..], &sig[..]));
        let unknown_flag = Signature { value: [&[2u8][..], &s.value[1..]].concat(), ..s.clone() };
        assert!(unknown_flag.as_hybrid().is_none());
        assert!(Signature { scheme: 2, ..s.clone() }.as_hybrid().is_none());
        assert!(Signature { key_id: vec![9; 31], ..s.clone() }.as_hybrid().is_none());
        assert_eq!(MAX_HYBRID_SIGNATURES, 12);
        let full = encode_signatures(&vec![s.clone(); MAX_HYBRID_SIGNATURES]);
        assert!(full.len() <= MAX_SIGNATURE_BLOCK_LEN as usize);
        assert!(
            encode_signatures(&vec![s; MAX_HYBRID_SIGNATURES + 1]).len() > MAX_SIGNATURE_BLOCK_LEN as usize
        );
    }
}
