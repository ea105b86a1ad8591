//! What opening checks of the committed session beyond its root: its
//! header (hash, salt, sealed body), the link to the previous trailer (its
//! commit hash), and the signature block's framing (FORMAT.md §6.1).

use crate::crypto::{open_session_body, ContentKey, SessionKeys};
use crate::error::{Error, Result};
use crate::format::{
    decode_signatures, session_header_hash, Hash, HeaderClear, HeaderPrefix, SessionInfo, SessionRecord,
    Signature, Summary, Trailer, SESSION_HEADER_CLEAR_LEN, TRAILER_LEN,
};
use crate::index::read_sealed;
use crate::storage::ReadAt;

use super::other_version;

/// The committed session as opening found it.
pub(crate) struct SessionState {
    /// Its header's sealed body; for a damaged header, what its record in
    /// the root repeats (set once the root is read).
    pub(crate) info: SessionInfo,
    /// Why its header could not be read, when it could not (FORMAT.md §6.1
    /// step 6): the session is then read through its trailer, which
    /// carries its salt, and its record.
    pub(crate) header_damage: Option<String>,
    /// Its trailer's commit hash: what the next session chains to.
    pub(crate) commit: Hash,
    /// Its signatures, framing checked, not verified.
    pub(crate) signatures: Vec<Signature>,
    /// Bytes of its header, signature block and header copy.
    pub(crate) overhead: u64,
    /// Its trailer, where `verify` starts the walk back along the chain.
    pub(crate) trailer: Trailer,
    /// Why its recovery record cannot be used, if it has one that cannot.
    pub(crate) record_damage: Option<String>,
}

/// Checks the session that `trailer` (authenticated under `keys`) commits.
pub(crate) fn check_session(
    src: &dyn ReadAt,
    header: &HeaderPrefix,
    trailer: &Trailer,
    content_key: &ContentKey,
    keys: &SessionKeys,
) -> Result<SessionState> {
    let start = trailer.session_start(header.data_start());
    let (info, header_len, header_damage) = match committed_header(src, start, trailer)? {
        Ok((clear, sealed)) => {
            let (info, len) = open_header(&clear, sealed, trailer, keys)?;
            (info, len, None)
        }
        Err(why) => (SessionInfo::default(), 0, Some(header_damage(start, &why))),
    };
    if trailer.previous_trailer != 0 {
        check_previous(src, header, content_key, trailer)?;
    }
    let signatures = read_signatures(src, trailer)?;
    let overhead = header_len + u64::from(trailer.signature_len) + trailer.header_copy_len();
    let commit = trailer.commit_hash();
    let record_damage = super::records::record_damage(src, trailer)?;
    Ok(SessionState {
        info,
        header_damage,
        commit,
        signatures,
        overhead,
        trailer: trailer.clone(),
        record_damage,
    })
}

/// The signature block before `trailer`, framing checked (none: empty).
pub(super) fn read_signatures(src: &dyn ReadAt, trailer: &Trailer) -> Result<Vec<Signature>> {
    Ok(match trailer.signature_len {
        0 => Vec::new(),
        len => decode_signatures(&read_sealed(src, trailer.signature_offset(), len, || {
            "signature block".into()
        })?)?,
    })
}

/// A session header's clear part and sealed body.
type CommittedHeader = ([u8; SESSION_HEADER_CLEAR_LEN], Vec<u8>);

/// The session header at `offset` as its trailer commits to it: its clear
/// part and sealed body, or (inner `Err`) why its bytes are not the ones
/// the trailer's `header_hash` names: damage, whatever they decode to.
fn committed_header(
    src: &dyn ReadAt,
    offset: u64,
    trailer: &Trailer,
) -> Result<std::result::Result<CommittedHeader, String>> {
    let clear_bytes = read_sealed(src, offset, SESSION_HEADER_CLEAR_LEN as u32, || "session header".into())?;
    let clear_bytes: [u8; SESSION_HEADER_CLEAR_LEN] = clear_bytes.try_into().expect("read exactly");
    let clear = match HeaderClear::decode(&clear_bytes) {
        Ok(clear) => clear,
        Err(e) => return Ok(Err(format!("its clear part does not decode: {e}"))),
    };
    if clear.archive_id != trailer.archive_id || clear.salt != trailer.session_salt {
        return Ok(Err("not the trailer's session".into()));
    }
    let body_at = offset + SESSION_HEADER_CLEAR_LEN as u64;
    let sealed = read_sealed(src, body_at, clear.body_stored_len, || "session header".into())?;
    if session_header_hash(&[&clear_bytes[..], &sealed].concat()) != trailer.header_hash {
        return Ok(Err("hash differs from the trailer's".into()));
    }
    Ok(Ok((clear_bytes, sealed)))
}

/// Opens the body of a session header whose bytes its trailer commits to;
/// returns it and the header's length.
fn open_header(
    clear_bytes: &[u8; SESSION_HEADER_CLEAR_LEN],
    sealed: Vec<u8>,
    trailer: &Trailer,
    keys: &SessionKeys,
) -> Result<(SessionInfo, u64)> {
    let clear = HeaderClear::decode(clear_bytes)?;
    // The trailer's version is the header's (checked when it was read).
    if clear.version != trailer.version {
        return Err(other_version("session header"));
    }
    let len = (SESSION_HEADER_CLEAR_LEN + sealed.len()) as u64;
    Ok((SessionInfo::decode(&open_session_body(keys, clear_bytes, sealed)?)?, len))
}

/// The previous trailer: its core's commit hash must be the one this
/// trailer records, its tag must check under its session's trailer key
/// (which binds `signature_len`, outside the core), and it must fit where
/// this one says it ended and name this archive. Returns it. Damage to any
/// of its bytes is tampering (what a salvage may get round); a trailer
/// that authenticates and breaks the rules is malformed.
pub(super) fn check_previous(
    src: &dyn ReadAt,
    header: &HeaderPrefix,
    content_key: &ContentKey,
    trailer: &Trailer,
) -> Result<Trailer> {
    let at = trailer.previous_trailer - TRAILER_LEN as u64;
    let raw = read_sealed(src, at, TRAILER_LEN as u32, || "previous trailer".into())?;
    let raw: &[u8; TRAILER_LEN] = raw.as_slice().try_into().expect("read exactly");
    let damaged = |why: &str| Error::tampered(format!("the trailer at byte {at} ({why})"));
    if Trailer::commit_hash_of(raw) != trailer.previous_hash {
        return Err(damaged("its commit hash is not the one the session after it records"));
    }
    let previous = Trailer::parse(raw)?;
    let keys = SessionKeys::derive(content_key, &previous.session_salt);
    if keys.check_trailer_tag(&previous.body(), &previous.tag).is_err() {
        return Err(damaged("its signature length or tag"));
    }
    previous.check_fits(at)?;
    if previous.archive_id != header.archive_id {
        return Err(Error::malformed("trailer", "names another archive"));
    }
    if previous.version != header.version {
        return Err(other_version("trailer"));
    }
    Ok(previous)
}

/// Where every session's header copy (FORMAT.md §3.11) starts, newest
/// first: along the hash chain from `trailer` (committed, authenticated)
/// back to the first session, each earlier trailer checked as opening
/// checks it. A slot written in place is written into each of them. The
/// walk stops at the first trailer that does not check (damage further
/// back): the copies before it cannot be found, nor can any reader find
/// them through that chain.
pub(crate) fn header_copies(
    src: &dyn ReadAt,
    header: &HeaderPrefix,
    content_key: &ContentKey,
    trailer: &Trailer,
) -> Vec<u64> {
    let mut copies = Vec::new();
    let mut at = trailer.clone();
    loop {
        if usize::from(at.copy_slot_len) == header.slot_len {
            copies.push(at.header_copy_offset());
        }
        if at.previous_trailer == 0 {
            break;
        }
        match check_previous(src, header, content_key, &at) {
            Ok(previous) => at = previous,
            Err(_) => break,
        }
    }
    copies
}

/// Follows the hash chain from `trailer` back to the first session
/// (`verify`): one trailer and one session header read per session, each
/// header checked against its trailer's `header_hash` and opened as
/// `--session` would open it (FORMAT.md §6.1 step 7), so that a chain
/// `verify` passes is one whose every state opens. Each previous trailer
/// lies strictly before the one that names it, so the walk ends. Returns
/// one line per session header whose bytes are not the ones its trailer
/// commits to: damage, which loses no state (each opens through its
/// trailer and record, §6.1 step 6).
pub(crate) fn check_chain<'a>(
    src: &dyn ReadAt,
    header: &HeaderPrefix,
    content_key: &ContentKey,
    trailer: &Trailer,
    record: impl Fn(u32) -> Option<&'a SessionRecord>,
) -> Result<Vec<String>> {
    let mut damaged = Vec::new();
    let mut at = trailer.clone();
    while at.previous_trailer != 0 {
        at = check_previous(src, header, content_key, &at)?;
        let start = at.session_start(header.data_start());
        let keys = SessionKeys::derive(content_key, &at.session_salt);
        let (clear, sealed) = match committed_header(src, start, &at)? {
            Ok(committed) => committed,
            Err(why) => {
                damaged.push(header_damage(start, &why));
                continue;
            }
        };
        // Its bytes are committed to by the trailer's hash: whatever else
        // is wrong with them is damage too.
        let (info, _) = open_header(&clear, sealed, &at, &keys).map_err(|e| match e {
            Error::Tampered { .. } => e,
            other => Error::tampered(format!("the session header at byte {start} ({other})")),
        })?;
        let Some(record) = record(info.number) else {
            return Err(Error::malformed("sessions tree", "a session header has no record"));
        };
        check_summary(&record.summary, &info)?;
    }
    Ok(damaged)
}

/// The line that reports a damaged session header at `start`.
fn header_damage(start: u64, why: &str) -> String {
    format!("the session header at byte {start} failed authentication ({why}); its state opens through its trailer and record")
}

/// A session's record repeats its header's time, kind and label (FORMAT.md
/// §3.7): `log` reads the record, `info` and `--session` the header.
pub(crate) fn check_summary(summary: &Summary, info: &SessionInfo) -> Result<()> {
    if (summary.created_ns, summary.kind, &summary.label) != (info.created_ns, info.kind, &info.label) {
        return Err(Error::malformed("sessions tree", "a record differs from its session header"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::*;
    use crate::archive::{read_prefix, Archive};
    use crate::crypto::{KdfParams, Password};
    use crate::file::{ArchiveUpdater, UpdateOptions};
    use crate::session::{ArchiveWriter, CreateOptions, Metadata};

    #[test]
    fn the_chain_walk_compares_each_earlier_record_with_its_session_header() {
        // Defect 13: opening compares the last record with its header; the
        // walk of `verify`, `repair` and appends compares every earlier one.
        let password = Password::from("chain");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.lbox");
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
        let mut w = ArchiveWriter::new(File::create(&path).unwrap(), &password, options).unwrap();
        w.add_file("a", &Metadata::new(0o644, 0, 0, 1_700_000_000, 0), 1, &b"a"[..]).unwrap();
        w.finish().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir(&src).unwrap();
        std::fs::write(src.join("b"), "b").unwrap();
        ArchiveUpdater::open(&path, &password, UpdateOptions::new())
            .unwrap()
            .add(&src, &["b".into()])
            .unwrap();

        let archive = Archive::open(File::open(&path).unwrap(), &password).unwrap();
        archive.check_chain().unwrap();
        let table = archive.sessions_table().unwrap();
        let mut first = table.record(0).unwrap().clone();
        first.summary.created_ns += 1;
        let header = read_prefix(&archive.src).unwrap();
        let lying = |number: u32| if number == 0 { Some(&first) } else { table.record(number) };
        let err = check_chain(&archive.src, &header, &archive.content_key, &archive.last.trailer, lying)
            .unwrap_err();
        assert!(matches!(err, Error::Malformed(_)), "{err}");
        assert!(err.to_string().contains("differs from its session header"), "{err}");
        let none = |_| None;
        let err = check_chain(&archive.src, &header, &archive.content_key, &archive.last.trailer, none)
            .unwrap_err();
        assert!(err.to_string().contains("has no record"), "{err}");
    }
}
