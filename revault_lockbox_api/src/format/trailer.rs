//! The fixed-size trailer at the end of every session.
//!
//! ```text
//! trailer_core = TRAILER_MAGIC[8] || version u16 || flags u16 || archive_id[16]
//!                || session_salt[32] || header_hash[32]
//!                || root_offset u64 || root_stored_len u32 || root_plain_len u32 || root_hash[32]
//!                || page_count u64 || entry_count u64
//!                || previous_trailer u64 || previous_hash[32]                  (196 bytes)
//! trailer      = trailer_core || signature_len u32 || tag[16]                  (216 bytes)
//! ```
//! The tag is ChaCha20-Poly1305 over an empty message with everything
//! before it as associated data. The commit hash covers the core: the
//! root's, the session header's and the previous trailer's hashes, so one
//! value commits to the whole state; a signature block before the trailer
//! signs it.
//!
//! `flags` (version 4): bit 0, a header copy (§3.11) lies between the
//! signature block and the trailer; bits 1–3, its slot size as
//! `log2(slot_len / 256)`, so the trailer alone gives the copy's length.
//! Bit 4, a recovery record follows the trailer (§3.12), and bits 5–11 its
//! percentage: with the copy's slot size this gives the record's layout
//! and length, so the trailer alone gives the session's whole extent:
//! `... || header copy || trailer || record || footer || trailer`, the
//! same trailer twice, and it decodes at either place.

use super::codec::{malformed, Decoder, Encoder};
use super::frame::FRAME_LEN;
use super::hash::{commit_hash, Hash};
use super::recovery::{Layout, RecordLayout, FOOTER_LEN, MAX_PERCENT};
use super::{
    header_copy_allowed, header_copy_len, is_readable_version, DecodeError, ARCHIVE_ID_LEN, HASH_LEN,
    MAX_KEY_SLOT_LEN, MAX_ROOT_LEN, MAX_SIGNATURE_BLOCK_LEN, MIN_DATA_START, MIN_KEY_SLOT_LEN,
    SESSION_SALT_LEN, TAG_LEN, TRAILER_MAGIC,
};

/// `flags` bit 0: a header copy precedes the trailer.
const FLAG_HEADER_COPY: u16 = 1;
/// `flags` bits 1–3: the copy's slot size, `log2(slot_len / 256)`.
const SLOT_LEN_SHIFT: u32 = 1;
const SLOT_LEN_MASK: u16 = 0b1110;
/// `flags` bit 4: a recovery record follows the trailer (with a copy only).
const FLAG_RECOVERY: u16 = 1 << 4;
/// `flags` bits 5–11: the recovery record's percentage.
const PERCENT_SHIFT: u32 = 5;
const PERCENT_MASK: u16 = 0x7f << PERCENT_SHIFT;

/// Length of the trailer's core: what its commit hash covers.
pub(crate) const TRAILER_CORE_LEN: usize =
    8 + 2 + 2 + ARCHIVE_ID_LEN + SESSION_SALT_LEN + HASH_LEN + 8 + 4 + 4 + HASH_LEN + 8 * 3 + HASH_LEN;
/// Length of the trailer body, before its tag.
pub(crate) const TRAILER_BODY_LEN: usize = TRAILER_CORE_LEN + 4;
/// Length of the whole trailer.
pub(crate) const TRAILER_LEN: usize = TRAILER_BODY_LEN + TAG_LEN;

/// The decoded trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trailer {
    /// The archive's format version: must match the header's.
    pub(crate) version: u16,
    /// Must match the header's id.
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    /// Salt of the write session that wrote this trailer and its root.
    pub(crate) session_salt: [u8; SESSION_SALT_LEN],
    /// Hash of the session's header.
    pub(crate) header_hash: Hash,
    /// Where the root's frame starts.
    pub(crate) root_offset: u64,
    /// Sealed root length, tag included, frame not.
    pub(crate) root_stored_len: u32,
    pub(crate) root_plain_len: u32,
    pub(crate) root_hash: Hash,
    /// Data pages the root describes.
    pub(crate) page_count: u64,
    /// Entries the root describes.
    pub(crate) entry_count: u64,
    /// Where the previous session's trailer ends (the archive's length
    /// before this session, where its header starts); 0 for the first.
    pub(crate) previous_trailer: u64,
    /// The previous trailer's commit hash; zeros for the first session.
    pub(crate) previous_hash: Hash,
    /// Bytes of the signature block between the root and the trailer.
    pub(crate) signature_len: u32,
    /// The slot size of the header copy before the trailer; 0: no copy
    /// (version 3, or a version 4 session written before copies).
    pub(crate) copy_slot_len: u16,
    /// The percentage of the recovery record after the trailer; 0: none.
    pub(crate) recovery_percent: u8,
    pub(crate) tag: [u8; TAG_LEN],
}

impl Trailer {
    /// The core: what the commit hash covers.
    pub(crate) fn core(&self) -> [u8; TRAILER_CORE_LEN] {
        let mut e = Encoder::default();
        e.bytes(&TRAILER_MAGIC)
            .u16(self.version)
            .u16(self.flags())
            .bytes(&self.archive_id)
            .bytes(&self.session_salt)
            .bytes(&self.header_hash)
            .u64(self.root_offset)
            .u32(self.root_stored_len)
            .u32(self.root_plain_len)
            .bytes(&self.root_hash)
            .u64(self.page_count)
            .u64(self.entry_count)
            .u64(self.previous_trailer)
            .bytes(&self.previous_hash);
        e.buf.try_into().expect("fixed layout")
    }

    /// The `flags` field: whether a header copy precedes the trailer, and
    /// its slot size.
    fn flags(&self) -> u16 {
        let copy = match self.copy_slot_len {
            0 => 0,
            len => {
                let code = (u32::from(len) / MIN_KEY_SLOT_LEN as u32).trailing_zeros() as u16;
                FLAG_HEADER_COPY | (code << SLOT_LEN_SHIFT)
            }
        };
        let recovery = match self.recovery_percent {
            0 => 0,
            percent => FLAG_RECOVERY | (u16::from(percent) << PERCENT_SHIFT),
        };
        copy | recovery
    }

    /// Where the bytes the recovery record protects start: the session's
    /// first byte (for the first session `data_start`, which equals the
    /// header copy's length, since a record comes only with a copy).
    pub(crate) fn protected_start(&self) -> u64 {
        self.session_start(self.header_copy_len())
    }

    /// The layout of the recovery record after the trailer, if any: over
    /// the session's bytes from its first to the header copy's first.
    pub(crate) fn record_layout(&self) -> Option<RecordLayout> {
        if self.recovery_percent == 0 {
            return None;
        }
        let len = self.header_copy_offset().checked_sub(self.protected_start())?;
        Some(RecordLayout { layout: Layout::new(len, self.recovery_percent).ok()? })
    }

    /// Where the trailer's first (or only) copy lies: right after the
    /// header copy.
    pub(crate) fn first_offset(&self) -> u64 {
        self.header_copy_offset() + self.header_copy_len()
    }

    /// Where the record after the first trailer starts.
    pub(crate) fn record_offset(&self) -> u64 {
        self.first_offset() + TRAILER_LEN as u64
    }

    /// Where the session ends: after its trailer, or with a recovery
    /// record after the trailer's second copy; the next session starts
    /// here.
    /// Saturates where hostile fields would overflow; decoding refuses
    /// such a trailer ([`checked_session_end`](Self::checked_session_end)).
    pub(crate) fn session_end(&self) -> u64 {
        self.checked_session_end().unwrap_or(u64::MAX)
    }

    /// [`session_end`](Self::session_end), `None` where it overflows.
    fn checked_session_end(&self) -> Option<u64> {
        let record = match self.record_layout() {
            None => 0,
            Some(r) => r.record_len().checked_add(FOOTER_LEN as u64 + TRAILER_LEN as u64)?,
        };
        self.first_offset().checked_add(TRAILER_LEN as u64)?.checked_add(record)
    }

    /// Bytes of the header copy before the trailer (0: none).
    pub(crate) fn header_copy_len(&self) -> u64 {
        match self.copy_slot_len {
            0 => 0,
            len => header_copy_len(usize::from(len)),
        }
    }

    /// Where the header copy starts: after the signature block.
    pub(crate) fn header_copy_offset(&self) -> u64 {
        self.signature_offset() + u64::from(self.signature_len)
    }

    /// The body: everything but the tag; the tag's associated data.
    pub(crate) fn body(&self) -> [u8; TRAILER_BODY_LEN] {
        let mut out = [0u8; TRAILER_BODY_LEN];
        out[..TRAILER_CORE_LEN].copy_from_slice(&self.core());
        out[TRAILER_CORE_LEN..].copy_from_slice(&self.signature_len.to_le_bytes());
        out
    }

    /// The one value that commits to this state (FORMAT.md §3.8).
    pub(crate) fn commit_hash(&self) -> Hash {
        commit_hash(&self.core())
    }

    /// The commit hash of a trailer's raw bytes, before anything in them
    /// is trusted: equal to [`commit_hash`](Self::commit_hash) of what
    /// they decode to.
    pub(crate) fn commit_hash_of(bytes: &[u8; TRAILER_LEN]) -> Hash {
        commit_hash(&bytes[..TRAILER_CORE_LEN])
    }

    pub(crate) fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut out = [0u8; TRAILER_LEN];
        out[..TRAILER_BODY_LEN].copy_from_slice(&self.body());
        out[TRAILER_BODY_LEN..].copy_from_slice(&self.tag);
        out
    }

    /// Where the signature block starts (the root's end).
    pub(crate) fn signature_offset(&self) -> u64 {
        self.root_offset + (FRAME_LEN as u64) + u64::from(self.root_stored_len)
    }

    /// Where this session starts: its header's offset, given the first
    /// session's (`data_start`).
    pub(crate) fn session_start(&self, data_start: u64) -> u64 {
        if self.previous_trailer == 0 {
            data_start
        } else {
            self.previous_trailer
        }
    }

    /// Decodes a trailer found at `trailer_offset` and checks its lengths
    /// against the limits and the file.
    pub(crate) fn decode(bytes: &[u8; TRAILER_LEN], trailer_offset: u64) -> Result<Trailer, DecodeError> {
        let t = Trailer::parse(bytes)?;
        t.check_fits(trailer_offset)?;
        Ok(t)
    }

    /// Reads the fields (magic, version and flags checked), nothing else:
    /// a reader that authenticates the bytes first checks the rest after.
    pub(crate) fn parse(bytes: &[u8; TRAILER_LEN]) -> Result<Trailer, DecodeError> {
        let mut d = Decoder::new(bytes, "trailer");
        if d.array::<8>()? != TRAILER_MAGIC {
            return Err(malformed("trailer", "missing (file truncated or not an archive)"));
        }
        let version = d.u16()?;
        if !is_readable_version(version) {
            return Err(malformed("trailer", "unsupported format version"));
        }
        let flags = d.u16()?;
        let copy_slot_len = copy_slot_len(version, flags & !(FLAG_RECOVERY | PERCENT_MASK))?;
        let recovery_percent = recovery_percent(copy_slot_len, flags)?;
        let t = Trailer {
            version,
            archive_id: d.array()?,
            session_salt: d.array()?,
            header_hash: d.array()?,
            root_offset: d.u64()?,
            root_stored_len: d.u32()?,
            root_plain_len: d.u32()?,
            root_hash: d.array()?,
            page_count: d.u64()?,
            entry_count: d.u64()?,
            previous_trailer: d.u64()?,
            previous_hash: d.array()?,
            signature_len: d.u32()?,
            copy_slot_len,
            recovery_percent,
            tag: d.array()?,
        };
        d.finish()?;
        Ok(t)
    }

    /// The limits on its lengths, the previous trailer's range and its
    /// offsets against where it was found (`trailer_offset`).
    pub(crate) fn check_fits(&self, trailer_offset: u64) -> Result<(), DecodeError> {
        let t = self;
        if t.root_plain_len > MAX_ROOT_LEN || t.root_stored_len > MAX_ROOT_LEN + TAG_LEN as u32 {
            return Err(malformed("trailer", "root length over its limit"));
        }
        if t.signature_len > MAX_SIGNATURE_BLOCK_LEN {
            return Err(malformed("trailer", "signature block over its limit"));
        }
        let first = t.previous_trailer == 0;
        let previous_fits = if first {
            t.previous_hash == [0; HASH_LEN]
        } else {
            t.previous_trailer >= MIN_DATA_START + TRAILER_LEN as u64 && t.previous_trailer <= t.root_offset
        };
        if !previous_fits {
            return Err(malformed("trailer", "previous trailer out of range"));
        }
        let end = t.root_offset.checked_add(
            FRAME_LEN as u64
                + u64::from(t.root_stored_len)
                + u64::from(t.signature_len)
                + t.header_copy_len(),
        );
        if end.is_none() || t.root_offset < MIN_DATA_START {
            return Err(malformed("trailer", "offsets do not fit the file"));
        }
        if t.recovery_percent != 0 && t.record_layout().is_none() {
            return Err(malformed("trailer", "a recovery record over no bytes"));
        }
        if t.checked_session_end().is_none() {
            return Err(malformed("trailer", "offsets do not fit the file"));
        }
        // The first copy right after the header copy, or the second after
        // the recovery record.
        let second = t.recovery_percent != 0
            && trailer_offset.checked_add(TRAILER_LEN as u64) == Some(t.session_end());
        if end != Some(trailer_offset) && !second {
            return Err(malformed("trailer", "offsets do not fit the file"));
        }
        Ok(())
    }
}

/// The header copy's slot size that `flags` give (0: no copy); bits a
/// version does not define are refused.
fn copy_slot_len(version: u16, flags: u16) -> Result<u16, DecodeError> {
    let unknown = || malformed("trailer", "unknown flags");
    if flags == 0 {
        return Ok(0);
    }
    if !header_copy_allowed(version)
        || flags & FLAG_HEADER_COPY == 0
        || flags & !(FLAG_HEADER_COPY | SLOT_LEN_MASK) != 0
    {
        return Err(unknown());
    }
    let len = MIN_KEY_SLOT_LEN << ((flags & SLOT_LEN_MASK) >> SLOT_LEN_SHIFT);
    if len > MAX_KEY_SLOT_LEN {
        return Err(unknown());
    }
    Ok(len as u16)
}

/// The recovery record's percentage that `flags` give (0: none): only with
/// a header copy, and within the format's range.
fn recovery_percent(copy_slot_len: u16, flags: u16) -> Result<u8, DecodeError> {
    let percent = (flags & PERCENT_MASK) >> PERCENT_SHIFT;
    if flags & FLAG_RECOVERY == 0 {
        return match percent {
            0 => Ok(0),
            _ => Err(malformed("trailer", "unknown flags")),
        };
    }
    if copy_slot_len == 0 || percent == 0 || percent > u16::from(MAX_PERCENT) {
        return Err(malformed("trailer", "unknown flags"));
    }
    Ok(percent as u8)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::VERSION;

    pub(crate) fn sample() -> Trailer {
        Trailer {
            version: VERSION,
            archive_id: [1; ARCHIVE_ID_LEN],
            session_salt: [2; SESSION_SALT_LEN],
            header_hash: [3; HASH_LEN],
            root_offset: MIN_DATA_START + 1000,
            root_stored_len: 200,
            root_plain_len: 900,
            root_hash: [4; HASH_LEN],
            page_count: 3,
            entry_count: 7,
            previous_trailer: 0,
            previous_hash: [0; HASH_LEN],
            signature_len: 0,
            copy_slot_len: 0,
            recovery_percent: 0,
            tag: [7; TAG_LEN],
        }
    }

    #[test]
    fn trailer_round_trips_and_checks_offsets() {
        let t = sample();
        let at = MIN_DATA_START + 1220;
        assert_eq!(Trailer::decode(&t.encode(), at).unwrap(), t);
        assert!(Trailer::decode(&t.encode(), at + 1).is_err());
        for (version, readable) in [(2, false), (3, true), (4, true), (5, false)] {
            let other = Trailer { version, ..t.clone() };
            assert_eq!(Trailer::decode(&other.encode(), at).is_ok(), readable, "version {version}");
        }
        let appended = Trailer {
            previous_trailer: MIN_DATA_START + TRAILER_LEN as u64,
            previous_hash: [9; 32],
            ..t.clone()
        };
        assert_eq!(Trailer::decode(&appended.encode(), at).unwrap(), appended);
        for bad in [1, MIN_DATA_START + 1001] {
            let t = Trailer { previous_trailer: bad, ..t.clone() };
            assert!(Trailer::decode(&t.encode(), at).is_err());
        }
        let no_chain = Trailer { previous_hash: [9; 32], ..t.clone() };
        assert!(Trailer::decode(&no_chain.encode(), at).is_err(), "a first session with a previous hash");
        let signed = Trailer { signature_len: 100, ..t.clone() };
        assert_eq!(Trailer::decode(&signed.encode(), at + 100).unwrap(), signed);
        assert!(Trailer::decode(&signed.encode(), at).is_err());
        let huge = Trailer { signature_len: MAX_SIGNATURE_BLOCK_LEN + 1, ..t };
        assert!(Trailer::decode(&huge.encode(), at + u64::from(MAX_SIGNATURE_BLOCK_LEN) + 1).is_err());
    }

    #[test]
    fn a_header_copy_is_flagged_with_its_slot_size_and_fits_before_the_trailer() {
        let t = sample();
        let at = MIN_DATA_START + 1220;
        for slot_len in [256u16, 512, 1024, 2048, 4096] {
            let copy = Trailer { copy_slot_len: slot_len, ..t.clone() };
            let copy_at = at + copy.header_copy_len();
            assert_eq!(copy.header_copy_len(), 32 + 16 * u64::from(slot_len));
            assert_eq!(Trailer::decode(&copy.encode(), copy_at).unwrap(), copy);
            assert!(Trailer::decode(&copy.encode(), at).is_err(), "a copy's length past the root");
            assert_ne!(copy.commit_hash(), t.commit_hash(), "the flags are committed");
            assert_eq!(copy.header_copy_offset(), at);
        }
        let flags_at =
            |bytes: &mut [u8; TRAILER_LEN], flags: u16| bytes[10..12].copy_from_slice(&flags.to_le_bytes());
        for flags in [0b1010, 0b1011, 0x11, 0x8001] {
            let mut bytes = t.encode();
            flags_at(&mut bytes, flags);
            assert!(Trailer::parse(&bytes).is_err(), "flags {flags:#x}");
        }
        let mut v3 = Trailer { version: 3, ..t.clone() }.encode();
        flags_at(&mut v3, 1);
        assert!(Trailer::parse(&v3).is_err(), "a version 3 trailer has no copy");
    }

    #[test]
    fn a_recovery_record_is_flagged_with_its_percentage_and_its_trailer_decodes_at_both_places() {
        let t = Trailer { copy_slot_len: 256, recovery_percent: 5, ..sample() };
        assert_eq!(t.protected_start(), 4128, "the first session's: data_start");
        let layout = t.record_layout().unwrap();
        assert_eq!(layout.layout, Layout::new(t.header_copy_offset() - 4128, 5).unwrap());
        let first = t.first_offset();
        assert_eq!(first, t.header_copy_offset() + 4128);
        assert_eq!(t.record_offset(), first + TRAILER_LEN as u64);
        let second = t.record_offset() + layout.record_len() + FOOTER_LEN as u64;
        assert_eq!(t.session_end(), second + TRAILER_LEN as u64);
        for at in [first, second] {
            assert_eq!(Trailer::decode(&t.encode(), at).unwrap(), t, "at {at}");
        }
        for at in [first + 1, second - 1, t.session_end()] {
            assert!(Trailer::decode(&t.encode(), at).is_err(), "at {at}");
        }
        let plain = Trailer { recovery_percent: 0, ..t.clone() };
        assert_ne!(plain.commit_hash(), t.commit_hash(), "the percentage is committed");
        assert_eq!(plain.session_end(), first + TRAILER_LEN as u64);
        assert_eq!(&t.encode()[10..12], &(0x01 | 0x10 | (5 << 5) as u16).to_le_bytes());
        let flags_at =
            |bytes: &mut [u8; TRAILER_LEN], flags: u16| bytes[10..12].copy_from_slice(&flags.to_le_bytes());
        // A record without a copy, a record of 0 % or over the maximum,
        // a percentage without the record's bit.
        for flags in [0x10 | 5 << 5, 0x11, 0x11 | 51 << 5, 0x01 | 5 << 5, 0x11 | 0x1000 | 5 << 5] {
            let mut bytes = t.encode();
            flags_at(&mut bytes, flags);
            assert!(Trailer::parse(&bytes).is_err(), "flags {flags:#x}");
        }
        // Offsets whose session end would pass u64::MAX (a record of 50 %
        // over 20 bytes at the top of the range): refused, no overflow.
        let root_offset = u64::MAX - 20 - 4128;
        let top = Trailer {
            recovery_percent: 50,
            root_offset,
            root_stored_len: 0,
            signature_len: 0,
            previous_trailer: root_offset,
            ..t.clone()
        };
        for at in [top.first_offset(), u64::MAX - TRAILER_LEN as u64] {
            assert!(Trailer::decode(&top.encode(), at).is_err(), "at {at}");
        }
        // A root that leaves no protected bytes.
        let empty = Trailer { root_offset: 4128 - 220, ..t.clone() };
        assert!(empty.record_layout().is_none());
    }

    #[test]
    fn the_commit_hash_ignores_only_the_signature_length_and_tag() {
        let t = sample();
        let signed = Trailer { signature_len: 64, tag: [0; TAG_LEN], ..t.clone() };
        assert_eq!(t.commit_hash(), signed.commit_hash());
        assert_ne!(t.commit_hash(), Trailer { entry_count: 8, ..t }.commit_hash());
    }
}
