//! The header at offset 0 and the key-slot table after it.
//!
//! ```text
//! header_prefix = MAGIC[8] || version u16 || flags u16 || archive_id[16]
//!                 || slot_count u16 || slot_len u16                       (32 bytes)
//! slot_table    = slot[16]                                           (16 × slot_len bytes)
//! slot          = kind u8 || body_len u16 || body || [label_len u8 || label] || zero padding
//!                                                                   (slot_len: 256 to 4096)
//! password body = m_kib u32 || t u32 || p u32 || salt[16] || nonce[12]
//!                 || wrapped_key[32] || tag[16]                          (88 bytes)
//! ```
//! Slots have one size per archive so that one can be rewritten in place (a
//! new password, a revoked recipient) without moving a data page; a key too
//! large for them makes `key add` rewrite the archive with larger slots.

use super::codec::{malformed, Decoder, Encoder};
use super::{
    is_readable_version, labels, DecodeError, ARCHIVE_ID_LEN, HEADER_PREFIX_LEN, KDF_SALT_LEN, KEY_LEN,
    KEY_SLOTS, MAGIC, MAX_KEY_SLOT_BODY_LEN, MAX_KEY_SLOT_LEN, MAX_SLOT_LABEL_LEN, MIN_KEY_SLOT_LEN,
    NONCE_LEN, SLOT_AAD_VERSION, TAG_LEN, VERSION,
};

/// The fixed prefix: what the file is, which archive, and the size of its
/// key slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeaderPrefix {
    /// The archive's format version: every session header and trailer
    /// carries the same.
    pub(crate) version: u16,
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    /// Bytes of each key slot: a power of two from 256 to 4096.
    pub(crate) slot_len: usize,
}

const SLOT_EMPTY: u8 = 0;
const SLOT_PASSWORD: u8 = 1;
const SLOT_RECIPIENT: u8 = 2;
const SLOT_KEY_FILE: u8 = 3;
const KEY_FILE_BODY_LEN: usize = KDF_SALT_LEN + NONCE_LEN + KEY_LEN + TAG_LEN;
const PASSWORD_BODY_LEN: usize = 12 + KDF_SALT_LEN + NONCE_LEN + KEY_LEN + TAG_LEN;

impl HeaderPrefix {
    /// The prefix of a new archive (of this library's [`VERSION`]) whose
    /// table holds `slots`: the smallest slot size that fits the largest of
    /// them.
    #[cfg(test)]
    pub(crate) fn fitting(archive_id: [u8; ARCHIVE_ID_LEN], slots: &[KeySlot]) -> HeaderPrefix {
        HeaderPrefix::fitting_labeled(archive_id, slots, &[])
    }

    /// [`fitting`](Self::fitting) `slots` with `labels` (by position; a
    /// missing one is empty).
    pub(crate) fn fitting_labeled(
        archive_id: [u8; ARCHIVE_ID_LEN],
        slots: &[KeySlot],
        labels: &[String],
    ) -> HeaderPrefix {
        let label = |i: usize| labels.get(i).map_or("", String::as_str);
        let largest = slots.iter().enumerate().map(|(i, s)| labeled_len(s, label(i))).max().unwrap_or(0);
        HeaderPrefix {
            version: VERSION,
            archive_id,
            slot_len: largest.next_power_of_two().max(MIN_KEY_SLOT_LEN),
        }
    }

    /// [`fitting`](Self::fitting) `slots` (labelled by `labels`) and
    /// password slots still to be wrapped (whose size is fixed), labelled
    /// by `password_labels`.
    pub(crate) fn fitting_with_passwords(
        archive_id: [u8; ARCHIVE_ID_LEN],
        slots: &[KeySlot],
        labels: &[String],
        password_labels: &[String],
    ) -> HeaderPrefix {
        let prefix = HeaderPrefix::fitting_labeled(archive_id, slots, labels);
        let longest = password_labels.iter().map(|l| if l.is_empty() { 0 } else { 1 + l.len() }).max();
        let password = 3 + PASSWORD_BODY_LEN + longest.unwrap_or(0);
        let slot_len = prefix.slot_len.max(password.next_power_of_two());
        HeaderPrefix { slot_len, ..prefix }
    }

    /// Offset of slot `index`.
    pub(crate) fn slot_offset(&self, index: usize) -> u64 {
        (HEADER_PREFIX_LEN + index * self.slot_len) as u64
    }

    /// Offset of the first data page: the prefix and the slot table before it.
    pub(crate) fn data_start(&self) -> u64 {
        self.slot_offset(KEY_SLOTS)
    }

    /// Whether `slot` with `label` fits this archive's slots.
    pub(crate) fn fits(&self, slot: &KeySlot, label: &str) -> bool {
        labeled_len(slot, label) <= self.slot_len
    }

    /// The prefix and the encoded slot table: the archive's first
    /// [`data_start`](Self::data_start) bytes.
    pub(crate) fn encode_with(&self, slots: &[KeySlot]) -> Vec<u8> {
        self.encode_labeled(slots, &[])
    }

    /// [`encode_with`](Self::encode_with), each slot with its label in
    /// `labels` (by position; a missing one is empty).
    pub(crate) fn encode_labeled(&self, slots: &[KeySlot], labels: &[String]) -> Vec<u8> {
        debug_assert_eq!(slots.len(), KEY_SLOTS);
        let mut head = self.encode().to_vec();
        for (i, slot) in slots.iter().enumerate() {
            let label = labels.get(i).map_or("", String::as_str);
            head.extend_from_slice(&encode_labeled_slot(slot, label, self.slot_len));
        }
        head
    }

    pub(crate) fn encode(&self) -> [u8; HEADER_PREFIX_LEN] {
        let mut e = Encoder::default();
        e.bytes(&MAGIC)
            .u16(self.version)
            .u16(0)
            .bytes(&self.archive_id)
            .u16(KEY_SLOTS as u16)
            .u16(self.slot_len as u16);
        e.buf.try_into().expect("fixed layout")
    }

    /// Decodes the prefix. Refuses anything that is not an archive, versions
    /// this library does not read (see [`peek_version`](Self::peek_version))
    /// and other slot table shapes.
    pub(crate) fn decode(bytes: &[u8; HEADER_PREFIX_LEN]) -> Result<HeaderPrefix, DecodeError> {
        let mut d = Decoder::new(bytes, "header");
        if d.array::<8>()? != MAGIC {
            return Err(malformed("header", "not a lockbox archive (bad magic)"));
        }
        let version = d.u16()?;
        if !is_readable_version(version) {
            return Err(malformed("header", "unsupported format version"));
        }
        if d.u16()? != 0 {
            return Err(malformed("header", "unknown flags"));
        }
        let archive_id = d.array()?;
        let slot_count = usize::from(d.u16()?);
        let slot_len = usize::from(d.u16()?);
        if slot_count != KEY_SLOTS || !is_slot_len(slot_len) {
            return Err(malformed("header", "unknown key-slot table shape"));
        }
        d.finish()?;
        Ok(HeaderPrefix { version, archive_id, slot_len })
    }

    /// The version field, if the magic matches, so that a reader can name
    /// the unsupported version it met.
    pub(crate) fn peek_version(bytes: &[u8]) -> Option<u16> {
        let mut d = Decoder::new(bytes, "header");
        (d.array::<8>().ok()? == MAGIC).then(|| d.u16().ok()).flatten()
    }
}

/// One slot of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeySlot {
    /// Nothing here.
    Empty,
    /// A password through Argon2id.
    Password(PasswordSlot),
    /// A public-key recipient: an age stanza and the content key sealed
    /// under the file key it wraps (docs/KEYS.md). The body is not empty.
    Recipient(Vec<u8>),
    /// A key file: the content key sealed under a key derived (HKDF, no
    /// password KDF) from a random 256-bit key kept in a file.
    KeyFile(KeyFileSlot),
}

/// A key-file slot's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyFileSlot {
    /// HKDF salt, random per slot.
    pub(crate) salt: [u8; KDF_SALT_LEN],
    pub(crate) nonce: [u8; NONCE_LEN],
    /// The content key sealed with ChaCha20-Poly1305, tag appended.
    pub(crate) wrapped_key: [u8; KEY_LEN + TAG_LEN],
}

impl KeyFileSlot {
    /// Associated data: binds the slot layout's version, the archive id, the slot kind,
    /// its salt and nonce.
    pub(crate) fn aad(&self, archive_id: &[u8; ARCHIVE_ID_LEN]) -> Vec<u8> {
        let mut e = Encoder::default();
        e.bytes(labels::KEY_FILE_SLOT_AAD)
            .bytes(&MAGIC)
            .u16(SLOT_AAD_VERSION)
            .bytes(archive_id)
            .u8(SLOT_KEY_FILE)
            .bytes(&self.salt)
            .bytes(&self.nonce);
        e.buf
    }
}

/// Associated data of a recipient slot: binds the slot layout's version
/// and the archive id (the body's own seal binds the rest).
pub(crate) fn recipient_slot_aad(archive_id: &[u8; ARCHIVE_ID_LEN]) -> Vec<u8> {
    let mut e = Encoder::default();
    e.bytes(labels::RECIPIENT_SLOT_AAD)
        .bytes(&MAGIC)
        .u16(SLOT_AAD_VERSION)
        .bytes(archive_id)
        .u8(SLOT_RECIPIENT);
    e.buf
}

/// Argon2id parameters and salt, and the content key sealed under the key
/// they derive from the password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PasswordSlot {
    pub(crate) m_kib: u32,
    pub(crate) t: u32,
    pub(crate) p: u32,
    pub(crate) salt: [u8; KDF_SALT_LEN],
    pub(crate) nonce: [u8; NONCE_LEN],
    /// The content key sealed with ChaCha20-Poly1305, tag appended.
    pub(crate) wrapped_key: [u8; KEY_LEN + TAG_LEN],
}

impl PasswordSlot {
    /// Associated data for sealing the content key: binds the slot layout's
    /// version, the archive id and the slot's KDF parameters.
    pub(crate) fn aad(&self, archive_id: &[u8; ARCHIVE_ID_LEN]) -> Vec<u8> {
        let mut e = Encoder::default();
        e.bytes(labels::KEY_SLOT_AAD)
            .bytes(&MAGIC)
            .u16(SLOT_AAD_VERSION)
            .bytes(archive_id)
            .u8(SLOT_PASSWORD)
            .u32(self.m_kib)
            .u32(self.t)
            .u32(self.p)
            .bytes(&self.salt)
            .bytes(&self.nonce);
        e.buf
    }
}

fn is_slot_len(len: usize) -> bool {
    len.is_power_of_two() && (MIN_KEY_SLOT_LEN..=MAX_KEY_SLOT_LEN).contains(&len)
}

/// Bytes of `slot` before its padding: kind, length and body.
fn encoded_slot_len(slot: &KeySlot) -> usize {
    3 + match slot {
        KeySlot::Empty => 0,
        KeySlot::Password(_) => PASSWORD_BODY_LEN,
        KeySlot::KeyFile(_) => KEY_FILE_BODY_LEN,
        KeySlot::Recipient(body) => body.len(),
    }
}

/// Bytes of `slot` with `label` before the padding.
fn labeled_len(slot: &KeySlot, label: &str) -> usize {
    encoded_slot_len(slot) + if label.is_empty() { 0 } else { 1 + label.len() }
}

/// Whether `label` may name a key slot (FORMAT.md §3.2): UTF-8 (it is a
/// `str`), no control characters, at most [`MAX_SLOT_LABEL_LEN`] bytes.
/// Whether it fits beside the slot's body is checked when it is written.
pub fn check_slot_label(label: &str) -> Result<(), &'static str> {
    if label.len() > MAX_SLOT_LABEL_LEN {
        return Err("a key slot's label is at most 255 bytes");
    }
    if label.chars().any(char::is_control) {
        return Err("a key slot's label holds no control characters");
    }
    Ok(())
}

/// Encodes one slot, padded to `slot_len` bytes (which it must fit), with
/// no label (the tests' and fuzz seeds' slots).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn encode_slot(slot: &KeySlot, slot_len: usize) -> Vec<u8> {
    encode_labeled_slot(slot, "", slot_len)
}

/// One slot, padded to `slot_len` bytes (which it must fit), with `label`
/// after the body (`label_len u8 || label`;
/// nothing for an empty label), which must pass [`check_slot_label`].
pub(crate) fn encode_labeled_slot(slot: &KeySlot, label: &str, slot_len: usize) -> Vec<u8> {
    debug_assert!(check_slot_label(label).is_ok());
    let mut e = Encoder::default();
    match slot {
        KeySlot::Empty => {}
        KeySlot::Password(p) => {
            e.u8(SLOT_PASSWORD)
                .u16(PASSWORD_BODY_LEN as u16)
                .u32(p.m_kib)
                .u32(p.t)
                .u32(p.p)
                .bytes(&p.salt)
                .bytes(&p.nonce)
                .bytes(&p.wrapped_key);
        }
        KeySlot::KeyFile(k) => {
            e.u8(SLOT_KEY_FILE)
                .u16(KEY_FILE_BODY_LEN as u16)
                .bytes(&k.salt)
                .bytes(&k.nonce)
                .bytes(&k.wrapped_key);
        }
        KeySlot::Recipient(body) => {
            assert!(
                !body.is_empty() && body.len() <= MAX_KEY_SLOT_BODY_LEN,
                "slot body checked by its writer"
            );
            e.u8(SLOT_RECIPIENT).u16(body.len() as u16).bytes(body);
        }
    }
    if !label.is_empty() && !matches!(slot, KeySlot::Empty) {
        e.u8(label.len() as u8).bytes(label.as_bytes());
    }
    assert!(e.buf.len() <= slot_len, "slot size chosen to fit");
    e.buf.resize(slot_len, 0);
    e.buf
}

/// Decodes one slot; padding must be zero and an empty slot all zero.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn decode_slot(bytes: &[u8]) -> Result<KeySlot, DecodeError> {
    decode_labeled_slot(bytes).map(|(slot, _)| slot)
}

/// Decodes one slot and its label (empty when it has none); padding must
/// be zero and an empty slot all zero.
pub(crate) fn decode_labeled_slot(bytes: &[u8]) -> Result<(KeySlot, String), DecodeError> {
    if !is_slot_len(bytes.len()) {
        return Err(malformed("key slot", "wrong length"));
    }
    let mut d = Decoder::new(bytes, "key slot");
    let kind = d.u8()?;
    let len = usize::from(d.u16()?);
    if len > bytes.len() - 3 {
        return Err(malformed("key slot", "length over its limit"));
    }
    let body = d.bytes(len)?;
    let label = slot_label(d.rest())?;
    if kind == SLOT_EMPTY && !label.is_empty() {
        return Err(malformed("key slot", "empty slot with a label"));
    }
    let label = label.to_owned();
    Ok((
        match kind {
            SLOT_EMPTY if len == 0 => KeySlot::Empty,
            SLOT_EMPTY => return Err(malformed("key slot", "empty slot with a body")),
            SLOT_PASSWORD => {
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
            SLOT_RECIPIENT if len > 0 => KeySlot::Recipient(body.to_vec()),
            SLOT_KEY_FILE => {
                let mut b = Decoder::new(body, "key-file slot");
                let slot = KeyFileSlot { salt: b.array()?, nonce: b.array()?, wrapped_key: b.array()? };
                b.finish()?;
                KeySlot::KeyFile(slot)
            }
            // The table is not sealed as a whole (a slot is rewritten in place),
            // so a kind this version does not know is refused rather than
            // skipped: a changed byte anywhere in the table is noticed.
            _ => return Err(malformed("key slot", "unknown kind (written by a newer lockbox?)")),
        },
        label,
    ))
}

/// The label after a slot's body (FORMAT.md §3.2): `label_len u8 ||
/// label`, then zeros; empty when the body fills the slot or the padding
/// is all zero. `create` and `key add --key-label` write one; `key list`
/// shows it.
pub(crate) fn slot_label(after_body: &[u8]) -> Result<&str, DecodeError> {
    let Some((&len, rest)) = after_body.split_first() else { return Ok("") };
    let len = usize::from(len);
    if len > rest.len() {
        return Err(malformed("key slot", "label longer than the slot"));
    }
    let (label, padding) = rest.split_at(len);
    if padding.iter().any(|&b| b != 0) {
        return Err(malformed("key slot", "padding is not zero"));
    }
    let label = std::str::from_utf8(label).map_err(|_| malformed("key slot", "label not UTF-8"))?;
    if label.chars().any(char::is_control) {
        return Err(malformed("key slot", "label holds a control character"));
    }
    Ok(label)
}

#[cfg(test)]
#[path = "header_tests.rs"]
mod tests;
