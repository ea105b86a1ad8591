//! The signature block a session may carry between its root and its
//! trailer (FORMAT.md §3.10). It signs the trailer's commit hash, which
//! does not depend on it. This version checks the block's framing; the
//! schemes and their checks belong to the signing work.
//!
//! ```text
//! signature_block = SIGNATURE_MAGIC[8] || count u8 || signature[count]
//! signature       = scheme u16 || key_id var(64) || value var(8192)
//! signed message  = "revault-lockbox v3 signature" || archive_id[16] || commit_hash[32]
//! ```

#[cfg(test)]
use super::codec::Encoder;
use super::codec::{malformed, Decoder};
#[cfg(test)]
use super::hash::Hash;
#[cfg(test)]
use super::ARCHIVE_ID_LEN;
use super::{DecodeError, MAX_SIGNATURES, SIGNATURE_MAGIC};

/// Longest key id of a signature.
pub(crate) const MAX_KEY_ID_LEN: usize = 64;
/// Longest signature value.
pub(crate) const MAX_SIGNATURE_VALUE_LEN: usize = 8192;
/// What every signature of a session signs, before the archive id and the
/// commit hash. (The writer side, this and the two functions after it,
/// is compiled for the tests until the signing work calls it.)
#[cfg(test)]
const SIGNED_PREFIX: &[u8] = b"revault-lockbox v3 signature";

/// One signature as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    /// Which scheme made it (0 is reserved).
    pub(crate) scheme: u16,
    pub(crate) key_id: Vec<u8>,
    pub(crate) value: Vec<u8>,
}

/// The message a session's signatures sign.
#[cfg(test)]
pub(crate) fn signed_message(archive_id: &[u8; ARCHIVE_ID_LEN], commit: &Hash) -> Vec<u8> {
    [SIGNED_PREFIX, archive_id, commit].concat()
}

/// Encodes a signature block (1 to `MAX_SIGNATURES` signatures).
#[cfg(test)]
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
        assert_eq!(signed_message(&[1; 16], &[2; 32]).len(), 28 + 16 + 32);
    }
}
