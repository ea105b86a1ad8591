//! The header at offset 0: magic, version, archive id and the key slots that
//! wrap the content key.
//!
//! ```text
//! header    = MAGIC[8] || version u16 || flags u16 || archive_id[16]
//!             || slots_len u32 || key_slots
//! key_slots = count u16 || (kind u8 || body_len u16 || body)*
//! password  = m_kib u32 || t u32 || p u32 || salt[16] || nonce[12]
//!             || wrapped_key[32] || tag[16]
//! ```

use super::codec::{malformed, Decoder, Encoder};
use super::{
    labels, DecodeError, ARCHIVE_ID_LEN, KDF_SALT_LEN, KEY_LEN, MAGIC, MAX_KEY_SLOTS, MAX_KEY_SLOT_BLOCK_LEN,
    MAX_KEY_SLOT_LEN, NONCE_LEN, TAG_LEN, VERSION,
};

/// Random id of one archive, bound into every page, index and key slot so
/// that nothing can be moved between archives unnoticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveId(pub [u8; ARCHIVE_ID_LEN]);

/// Length of the fixed part of the header, before the key slots.
pub const HEADER_PREFIX_LEN: usize = 8 + 2 + 2 + ARCHIVE_ID_LEN + 4;

const SLOT_KIND_PASSWORD: u8 = 1;
const PASSWORD_SLOT_LEN: usize = 12 + KDF_SALT_LEN + NONCE_LEN + KEY_LEN + TAG_LEN;

/// The decoded header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Format version (always [`VERSION`] once decoded).
    pub version: u16,
    /// Reserved flags; must be zero in version 1.
    pub flags: u16,
    /// This archive's id.
    pub archive_id: ArchiveId,
    /// Key slots, each able to unwrap the content key.
    pub slots: Vec<KeySlot>,
}

/// One way to unwrap the content key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeySlot {
    /// A password through Argon2id.
    Password(PasswordSlot),
    /// A slot kind this version does not know (later key files, public-key
    /// recipients); skipped so that older readers still open the archive
    /// with a password slot.
    Unknown {
        /// The slot kind byte.
        kind: u8,
        /// The slot body, uninterpreted.
        body: Vec<u8>,
    },
}

/// A password slot: Argon2id parameters and salt, and the content key sealed
/// under the derived key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswordSlot {
    /// Argon2id memory cost in KiB.
    pub m_kib: u32,
    /// Argon2id passes.
    pub t: u32,
    /// Argon2id lanes.
    pub p: u32,
    /// Argon2id salt.
    pub salt: [u8; KDF_SALT_LEN],
    /// Nonce used to seal the content key.
    pub nonce: [u8; NONCE_LEN],
    /// The content key sealed with ChaCha20-Poly1305, tag appended.
    pub wrapped_key: [u8; KEY_LEN + TAG_LEN],
}

impl PasswordSlot {
    /// Associated data for sealing the content key: binds the header's
    /// version, flags and archive id and the slot's KDF parameters, so none of
    /// them can be altered without the unwrap failing.
    pub fn aad(&self, header: &Header) -> Vec<u8> {
        let mut e = Encoder::default();
        e.bytes(labels::KEY_SLOT_AAD)
            .bytes(&MAGIC)
            .u16(header.version)
            .u16(header.flags)
            .bytes(&header.archive_id.0)
            .u8(SLOT_KIND_PASSWORD)
            .u32(self.m_kib)
            .u32(self.t)
            .u32(self.p)
            .bytes(&self.salt)
            .bytes(&self.nonce);
        e.buf
    }
}

impl Header {
    /// Encodes the whole header.
    pub fn encode(&self) -> Vec<u8> {
        let slots = encode_key_slots(&self.slots);
        let mut e = Encoder::default();
        e.bytes(&MAGIC)
            .u16(self.version)
            .u16(self.flags)
            .bytes(&self.archive_id.0)
            .u32(slots.len() as u32)
            .bytes(&slots);
        e.buf
    }

    /// Decodes the fixed prefix; returns the header without slots and the
    /// length of the key-slot block that follows it.
    ///
    /// Refuses anything that is not an archive, and versions it cannot read.
    pub fn decode_prefix(bytes: &[u8]) -> Result<(Header, usize), DecodeError> {
        let mut d = Decoder::new(bytes, "header");
        if d.array::<8>()? != MAGIC {
            return Err(malformed("header", "not a lockbox archive (bad magic)"));
        }
        let version = d.u16()?;
        if version != VERSION {
            return Err(malformed("header", "unsupported format version"));
        }
        let flags = d.u16()?;
        if flags != 0 {
            return Err(malformed("header", "unknown flags"));
        }
        let archive_id = ArchiveId(d.array()?);
        let slots_len = d.u32()? as usize;
        if slots_len > MAX_KEY_SLOT_BLOCK_LEN {
            return Err(malformed("key slots", "length over its limit"));
        }
        let header = Header { version, flags, archive_id, slots: Vec::new() };
        Ok((header, slots_len))
    }

    /// The version field of a prefix, if the magic matches, so that callers
    /// can say which unsupported version they met.
    pub fn peek_version(bytes: &[u8]) -> Option<u16> {
        let mut d = Decoder::new(bytes, "header");
        (d.array::<8>().ok()? == MAGIC).then(|| d.u16().ok()).flatten()
    }
}

/// Encodes a key-slot block.
pub fn encode_key_slots(slots: &[KeySlot]) -> Vec<u8> {
    let mut e = Encoder::default();
    e.u16(slots.len() as u16);
    for slot in slots {
        match slot {
            KeySlot::Password(p) => {
                e.u8(SLOT_KIND_PASSWORD)
                    .u16(PASSWORD_SLOT_LEN as u16)
                    .u32(p.m_kib)
                    .u32(p.t)
                    .u32(p.p)
                    .bytes(&p.salt)
                    .bytes(&p.nonce)
                    .bytes(&p.wrapped_key);
            }
            KeySlot::Unknown { kind, body } => {
                e.u8(*kind).u16(body.len() as u16).bytes(body);
            }
        }
    }
    e.buf
}

/// Decodes a key-slot block; every byte must belong to a slot.
pub fn decode_key_slots(bytes: &[u8]) -> Result<Vec<KeySlot>, DecodeError> {
    let mut d = Decoder::new(bytes, "key slots");
    let count = d.u16()? as usize;
    if count == 0 || count > MAX_KEY_SLOTS {
        return Err(malformed("key slots", "slot count out of range"));
    }
    let mut slots = Vec::with_capacity(count);
    for _ in 0..count {
        let kind = d.u8()?;
        let len = d.u16()? as usize;
        if len > MAX_KEY_SLOT_LEN {
            return Err(malformed("key slot", "length over its limit"));
        }
        let body = d.bytes(len)?;
        slots.push(match kind {
            SLOT_KIND_PASSWORD => {
                let mut b = Decoder::new(body, "password slot");
                let slot = PasswordSlot {
                    m_kib: b.u32()?,
                    t: b.u32()?,
                    p: b.u32()?,
                    salt: b.array()?,
                    nonce: b.array()?,
                    wrapped_key: b.array()?,
                };
                b.finish()?;
                KeySlot::Password(slot)
            }
            kind => KeySlot::Unknown { kind, body: body.to_vec() },
        });
    }
    d.finish()?;
    Ok(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            version: VERSION,
            flags: 0,
            archive_id: ArchiveId([9; ARCHIVE_ID_LEN]),
            slots: vec![
                KeySlot::Password(PasswordSlot {
                    m_kib: 65536,
                    t: 3,
                    p: 4,
                    salt: [1; KDF_SALT_LEN],
                    nonce: [2; NONCE_LEN],
                    wrapped_key: [3; KEY_LEN + TAG_LEN],
                }),
                KeySlot::Unknown { kind: 200, body: vec![5; 7] },
            ],
        }
    }

    #[test]
    fn header_round_trips() {
        let h = sample();
        let bytes = h.encode();
        let (mut decoded, slots_len) = Header::decode_prefix(&bytes).unwrap();
        assert_eq!(slots_len, bytes.len() - HEADER_PREFIX_LEN);
        decoded.slots = decode_key_slots(&bytes[HEADER_PREFIX_LEN..]).unwrap();
        assert_eq!(decoded, h);
    }

    #[test]
    fn refuses_other_files_and_versions() {
        let mut bytes = sample().encode();
        bytes[8] = 2;
        assert_eq!(Header::peek_version(&bytes), Some(2));
        assert!(Header::decode_prefix(&bytes).is_err());
        assert!(Header::decode_prefix(b"PK\x03\x04 not an archive at all.....").is_err());
    }
}
