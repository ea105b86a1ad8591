//! Reading the archive's first bytes: the header prefix (its version
//! named when this library does not read it) and the key-slot table, with
//! each slot's label. The prefix's version is the archive's: every session
//! header and trailer must carry the same.
//!
//! These bytes are also copied at the end of every session of version 4
//! (FORMAT.md §3.11). A reader takes the primary at offset 0; when its
//! prefix or a slot does not decode, or no slot opens with the key given,
//! it takes the last session's copy, found from the trailer alone, before
//! any key is known, and says so ([`Head::damage`]). When the source holds
//! the copy's bytes already (an object store's opening GET of the last
//! bytes brought them, [`ReadAt::at_hand`]), the copy is tried first: it
//! saves the request for the archive's first bytes.

use std::sync::Arc;

use super::tail::{search_back, try_trailer};
use crate::crypto::ContentKey;
use crate::error::{Error, Result};
use crate::format::{
    decode_header_copy, decode_labeled_slot, encode_header_copy, head_of_copy, header_copy_allowed,
    is_readable_version, HeaderPrefix, KeySlot, Trailer, HEADER_PREFIX_LEN, KEY_SLOTS, MIN_DATA_START,
    OLDEST_VERSION, TRAILER_LEN, VERSION,
};
use crate::index::read_sealed;
use crate::keys::Unlock;
use crate::storage::ReadAt;

/// The header prefix and key-slot table an archive is read with.
#[derive(Clone)]
pub(crate) struct Head {
    pub(crate) header: HeaderPrefix,
    pub(crate) slots: Vec<KeySlot>,
    /// The prefix and the table, as at offset 0: what a session's copy
    /// and a rewrite's header are made of.
    pub(crate) bytes: Arc<[u8]>,
    /// Why the primary at offset 0 was not used (one line naming it), when
    /// the copy was.
    pub(crate) damage: Option<String>,
}

impl Head {
    /// The head whose bytes are `bytes` (prefix, then table).
    fn decode(bytes: Vec<u8>) -> Result<Head> {
        let prefix: &[u8; HEADER_PREFIX_LEN] = bytes[..HEADER_PREFIX_LEN].try_into().expect("a prefix");
        let header = HeaderPrefix::decode(prefix)?;
        let slots = decode_table(&bytes[HEADER_PREFIX_LEN..], header.slot_len)?;
        Ok(Head { header, slots, bytes: bytes.into(), damage: None })
    }
}

fn decode_table(table: &[u8], slot_len: usize) -> Result<Vec<KeySlot>> {
    let slots = table.chunks(slot_len).map(|b| decode_labeled_slot(b).map(|(slot, _)| slot));
    Ok(slots.collect::<Result<Vec<_>, _>>()?)
}

/// The primary head at offset 0: prefix (a version not read is named) and
/// every slot decoded.
fn primary_head(src: &dyn ReadAt, file_len: u64) -> Result<Head> {
    let header = read_prefix(src)?;
    if file_len < header.data_start() {
        return Err(Error::tampered("key slots (archive truncated)"));
    }
    let bytes = read_sealed(src, 0, header.data_start() as u32, || "key slots".into())?;
    Head::decode(bytes)
}

/// The last session's header copy: after the last trailer that decodes at
/// its place and carries one whose prefix agrees with it (the last 216
/// bytes, else searched backwards as for a torn tail). Returns its head
/// (damage: none yet) and offset. Nothing in it is trusted yet: each slot
/// proves itself when it opens, and the trailer then authenticates under
/// that key.
fn copy_head(src: &dyn ReadAt, file_len: u64) -> Result<Option<(Head, u64)>> {
    if file_len < MIN_DATA_START + TRAILER_LEN as u64 {
        return Ok(None);
    }
    let at_end = file_len - TRAILER_LEN as u64;
    // A last trailer that decodes says whether its session has a copy: no
    // search behind it (a version 3 archive has none anywhere, and a
    // wrong key must not read an archive backwards, on S3 by ranges).
    let raw = read_sealed(src, at_end, TRAILER_LEN as u32, || "trailer".into())?;
    if Trailer::decode(raw.as_slice().try_into().expect("read exactly"), at_end).is_ok() {
        return copy_before(src, at_end);
    }
    search_back(src, at_end, MIN_DATA_START, &mut |offset| copy_before(src, offset))
}

/// The last session's header copy when `src` holds its bytes and those of
/// the last 216 bytes already, and those decode as a trailer that
/// announces it (no search: a torn tail reads the primary first).
fn copy_at_hand(src: &dyn ReadAt, file_len: u64) -> Result<Option<(Head, u64)>> {
    if file_len < MIN_DATA_START + TRAILER_LEN as u64 {
        return Ok(None);
    }
    let at_end = file_len - TRAILER_LEN as u64;
    if !src.at_hand(at_end, TRAILER_LEN as u64) {
        return Ok(None);
    }
    let raw = read_sealed(src, at_end, TRAILER_LEN as u32, || "trailer".into())?;
    let Ok(trailer) = Trailer::decode(raw.as_slice().try_into().expect("read exactly"), at_end) else {
        return Ok(None);
    };
    if trailer.copy_slot_len == 0 || !src.at_hand(trailer.header_copy_offset(), trailer.header_copy_len()) {
        return Ok(None);
    }
    copy_before(src, at_end)
}

/// The header copy before a trailer at `offset`, if there is one that
/// decodes and agrees with it.
fn copy_before(src: &dyn ReadAt, offset: u64) -> Result<Option<(Head, u64)>> {
    let raw = read_sealed(src, offset, TRAILER_LEN as u32, || "trailer".into())?;
    let Ok(trailer) = Trailer::decode(raw.as_slice().try_into().expect("read exactly"), offset) else {
        return Ok(None);
    };
    if trailer.copy_slot_len == 0 {
        return Ok(None);
    }
    let at = trailer.header_copy_offset();
    let copy = read_sealed(src, at, trailer.header_copy_len() as u32, || "header copy".into())?;
    if decode_header_copy(&copy, &trailer).is_err() {
        return Ok(None);
    }
    Ok(Head::decode(head_of_copy(&copy)).ok().map(|head| (head, at)))
}

/// The head that opens with `key`, and the content key: the primary, else
/// the last session's copy (FORMAT.md §6.1 step 4). The copy is tried when
/// the primary does not decode, or when no slot of it opens (then only its
/// slots that differ from the primary's, so a wrong key costs no second
/// derivation). When neither opens, the primary's error is the answer.
///
/// A copy at hand ([`copy_at_hand`]) is tried before the primary, under
/// the same check (a slot opens and the trailer right after it
/// authenticates under that key); when no slot of it opens, the primary's
/// slots that differ from it are tried, so either order accepts the same
/// keys and a wrong key still costs one derivation.
pub(crate) fn unlock_head(
    src: &dyn ReadAt,
    file_len: u64,
    key: &Unlock<'_>,
    kdf_budget: u64,
) -> Result<(Head, ContentKey)> {
    let mut tried = None;
    if let Some((copy, at)) = copy_at_hand(src, file_len)? {
        match key.content_key(&copy.header.archive_id, &copy.slots, kdf_budget) {
            Ok((content_key, _)) => {
                if authenticates_after(src, &copy, at, &content_key)? {
                    return Ok((copy, content_key));
                }
                // The trailer after it does not authenticate (a torn or
                // damaged end): the primary, then the search, as without it.
            }
            Err(e) if is_no_slot_opened(&e) => tried = Some(copy),
            // Anything else (a budget, a plugin): the primary as without it.
            Err(_) => {}
        }
    }
    let (primary, primary_error) = match primary_head(src, file_len) {
        Ok(head) => {
            let slots = match &tried {
                Some(copy) => untried_slots(copy, &head),
                None => head.slots.clone(),
            };
            match key.content_key(&head.header.archive_id, &slots, kdf_budget) {
                Ok((content_key, _)) => return Ok((head, content_key)),
                Err(e) if is_no_slot_opened(&e) => (Some(head), e),
                Err(e) => return Err(e),
            }
        }
        Err(e) if is_head_damage(&e) => (None, e),
        Err(e) => return Err(e),
    };
    // A version 3 archive has no copies, and a copy tried first has no
    // slot left to try: the primary's error is the answer.
    if tried.is_some() || primary.as_ref().is_some_and(|head| !header_copy_allowed(head.header.version)) {
        return Err(primary_error);
    }
    let Some((mut copy, at)) = copy_head(src, file_len)? else { return Err(primary_error) };
    let untried = match &primary {
        Some(head) => untried_slots(head, &copy),
        None => copy.slots.clone(),
    };
    let Ok((content_key, _)) = key.content_key(&copy.header.archive_id, &untried, kdf_budget) else {
        return Err(primary_error);
    };
    if !authenticates_after(src, &copy, at, &content_key)? {
        return Err(primary_error);
    }
    let why = match primary {
        Some(_) => "no key slot opens with the key given".to_string(),
        None => damage_of(&primary_error),
    };
    copy.damage = Some(format!(
        "the header and key-slot table at byte 0 are damaged ({why}); read from their copy at byte {at}"
    ));
    Ok((copy, content_key))
}

/// Whether the trailer right after the copy at `at` authenticates under
/// the key a slot of it gave: only then does the copy count. A copy before
/// a damaged last trailer may hold a slot `key remove` took out of every
/// copy it could reach.
fn authenticates_after(src: &dyn ReadAt, copy: &Head, at: u64, content_key: &ContentKey) -> Result<bool> {
    let trailer_at = at + copy.header.data_start();
    Ok(try_trailer(src, trailer_at, &copy.header, content_key)?.is_some())
}

/// The head when the content key is known (a writer reading back what it
/// committed, a salvage's first open): the primary if it decodes, else the
/// last session's copy.
pub(crate) fn known_head(src: &dyn ReadAt, file_len: u64) -> Result<Head> {
    match primary_head(src, file_len) {
        Err(e) if is_head_damage(&e) => match copy_head(src, file_len)? {
            Some((mut copy, at)) => {
                copy.damage = Some(format!(
                    "the header at byte 0 is damaged ({}); read from its copy at byte {at}",
                    damage_of(&e)
                ));
                Ok(copy)
            }
            None => Err(e),
        },
        other => other,
    }
}

/// The head for showing the slot table without a key (`key list`): the
/// last session's copy when it is at hand, else as [`known_head`]. Without
/// a key neither is authenticated; both are what a reader with a key
/// would try first.
pub(crate) fn listed_head(src: &dyn ReadAt, file_len: u64) -> Result<Head> {
    match copy_at_hand(src, file_len)? {
        Some((copy, _)) => Ok(copy),
        None => known_head(src, file_len),
    }
}

/// When the header and slot table at offset 0 are not `head` (the header
/// in use, read from the last session's copy when it was at hand) byte
/// for byte, one line saying so. `verify` reports it.
pub(crate) fn primary_differs(src: &dyn ReadAt, head: &[u8], copy_at: u64) -> Result<Option<String>> {
    let primary = read_sealed(src, 0, head.len() as u32, || "key slots".into())?;
    Ok((primary != head).then(|| {
        format!(
            "the header and key-slot table at byte 0 differ from their copy at byte {copy_at} (damaged, or a key change was cut short: run it again)"
        )
    }))
}

/// When the header copy before `trailer` (committed) is not `head` (the
/// header in use) byte for byte, one line saying so: damage to the copy,
/// or a key change cut short (FORMAT.md §3.11). `verify` reports it.
pub(crate) fn copy_differs(src: &dyn ReadAt, trailer: &Trailer, head: &[u8]) -> Result<Option<String>> {
    if trailer.copy_slot_len == 0 {
        return Ok(None);
    }
    let at = trailer.header_copy_offset();
    let copy = read_sealed(src, at, trailer.header_copy_len() as u32, || "header copy".into())?;
    Ok((copy != encode_header_copy(head)).then(|| {
        format!(
            "the header copy at byte {at} differs from the header at byte 0 (damaged, or a key change was cut short: run it again)"
        )
    }))
}

/// The copy's slots that the primary did not already try: a slot whose
/// bytes (and prefix) are the same failed there.
fn untried_slots(primary: &Head, copy: &Head) -> Vec<KeySlot> {
    let table = |head: &Head| head.bytes[HEADER_PREFIX_LEN..].to_vec();
    let (mine, theirs) = (table(primary), table(copy));
    let len = copy.header.slot_len;
    // A slot's AAD binds the prefix's archive id: under another prefix,
    // the same bytes are another try.
    let same_prefix = primary.bytes[..HEADER_PREFIX_LEN] == copy.bytes[..HEADER_PREFIX_LEN];
    let same =
        |i: usize| same_prefix && mine.get(i * len..(i + 1) * len) == theirs.get(i * len..(i + 1) * len);
    (0..KEY_SLOTS).map(|i| if same(i) { KeySlot::Empty } else { copy.slots[i].clone() }).collect()
}

/// What a primary header's `error` says of it, without the words meant for
/// a file that is no archive at all.
fn damage_of(error: &Error) -> String {
    match error {
        Error::Malformed(what) => what.to_string(),
        other => other.to_string(),
    }
}

/// Whether `error` says no slot opened (a wrong key, or a damaged slot).
fn is_no_slot_opened(error: &Error) -> bool {
    matches!(error, Error::WrongPassword | Error::WrongKeyFile | Error::NoIdentityMatched)
}

/// Whether a primary head that failed with `error` may be damage the copy
/// gets round: anything it decodes or reads short, not an I/O error.
fn is_head_damage(error: &Error) -> bool {
    matches!(error, Error::Malformed(_) | Error::Tampered { .. } | Error::UnsupportedVersion { .. })
}

/// Reads and decodes the header prefix; a version this library does not
/// read is named.
pub(crate) fn read_prefix(src: &dyn ReadAt) -> Result<HeaderPrefix> {
    let mut prefix = [0u8; HEADER_PREFIX_LEN];
    read_exact(src, &mut prefix, 0, "header")?;
    HeaderPrefix::decode(&prefix).map_err(|e| match HeaderPrefix::peek_version(&prefix) {
        Some(found) if !is_readable_version(found) => {
            Error::UnsupportedVersion { found, oldest: OLDEST_VERSION, newest: VERSION }
        }
        _ => Error::from(e),
    })
}

/// A session header or trailer (`what`) whose version is not the
/// header's: malformed, even when it authenticates (a writer never mixes
/// versions in one archive).
pub(super) fn other_version(what: &'static str) -> Error {
    Error::malformed(what, "format version differs from the archive header's")
}

/// Every slot of the key-slot table `header` describes, at offset 0,
/// each with its label.
pub(crate) fn read_labeled_slots(src: &dyn ReadAt, header: &HeaderPrefix) -> Result<Vec<(KeySlot, String)>> {
    let mut table = vec![0u8; KEY_SLOTS * header.slot_len];
    read_exact(src, &mut table, HEADER_PREFIX_LEN as u64, "key slots")?;
    Ok(table.chunks(header.slot_len).map(decode_labeled_slot).collect::<Result<Vec<_>, _>>()?)
}

fn read_exact(src: &dyn ReadAt, buf: &mut [u8], offset: u64, what: &str) -> Result<()> {
    let bytes = read_sealed(src, offset, buf.len() as u32, || what.to_string())?;
    buf.copy_from_slice(&bytes);
    Ok(())
}
