//! The salvage scanner (FORMAT.md §6.6): from `data_start`, session
//! header by session header and frame by frame, without the trailer, the
//! root or any index record. Each session's keys derive from the salt in
//! its header's clear part; each unit opens under the id its frame names,
//! so whatever it yields is authenticated. A unit that does not open (or a
//! frame that does not decode) is damage: the scanner notes it and looks
//! for the next thing that does authenticate, byte by byte.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::crypto::{open_data_page, open_index_node, open_session_body, ContentKey, PageNonce, SessionKeys};
use crate::error::Result;
use crate::format::{
    header_copy_len, unit_hash, Child, EntriesLeaf, Frame, HeaderClear, HeaderPrefix, IndexNodeId, Internal,
    PageRecord, PagesLeaf, Record, SessionInfo, Table, Trailer, UnitKind, FRAME_LEN, MAX_SIGNATURE_BLOCK_LEN,
    SESSION_HEADER_CLEAR_LEN, SESSION_MAGIC, SIGNATURE_MAGIC, TRAILER_LEN, TRAILER_MAGIC,
};
use crate::index::read_sealed;
use crate::quote::SessionName;
use crate::storage::ReadAt;

/// One session as the scan found it.
pub(super) struct ScannedSession {
    /// Where its header starts.
    pub(super) offset: u64,
    pub(super) keys: Arc<SessionKeys>,
    /// Its header's sealed body, when it opened.
    pub(super) info: Option<SessionInfo>,
    /// Whether a trailer of this session authenticates after its units.
    pub(super) committed: bool,
    /// Its entries run's leaves, by seq, each with where its unit ends.
    pub(super) leaves: BTreeMap<u64, (Vec<Record>, u64)>,
    /// The first path of each entries leaf its level-1 nodes name, by seq:
    /// what a lost leaf held is named from it.
    pub(super) leaf_keys: BTreeMap<u64, Vec<u8>>,
    pub(super) pages_leaves: Vec<PagesLeaf>,
}

/// A data page the scan opened.
#[derive(Debug, Clone, Copy)]
pub(super) struct ScannedPage {
    pub(super) session: usize,
    pub(super) record: PageRecord,
}

/// What a scan found: the sessions, the pages that authenticate, and what
/// did not (one line each).
#[derive(Default)]
pub(super) struct Scan {
    pub(super) sessions: Vec<ScannedSession>,
    pub(super) pages: BTreeMap<u64, ScannedPage>,
    pub(super) damage: Vec<String>,
    /// The sessions the records of a committed state name, by number:
    /// how a damage line names them (by state, as `log` does).
    pub(super) names: BTreeMap<u32, SessionName>,
}

/// Bytes read at a time while looking for the next unit after damage.
const RESYNC_CHUNK: usize = 1 << 20;

/// What a trailer follows, checked against where it says that starts.
#[derive(Clone, Copy)]
enum Before {
    /// Nothing checked (a trailer found on its own).
    Nothing,
    /// A signature block at this offset.
    Signatures(u64),
    /// A header copy at this offset (FORMAT.md §3.11).
    HeaderCopy(u64),
}

/// Scans `src` (of `file_len` bytes) from `header`'s `data_start` to its
/// end; `names` are the sessions a committed state's records name.
pub(super) fn scan(
    src: &dyn ReadAt,
    file_len: u64,
    header: &HeaderPrefix,
    content_key: &ContentKey,
    names: BTreeMap<u32, SessionName>,
) -> Result<Scan> {
    let scan = Scan { names, ..Scan::default() };
    let mut s = Scanner {
        src,
        file_len,
        archive_id: header.archive_id,
        version: header.version,
        copy_len: header_copy_len(header.slot_len),
        content_key,
        scan,
    };
    let mut pos = header.data_start();
    while pos < file_len {
        pos = match s.step(pos)? {
            Some(next) => next,
            None => match s.resync(pos + 1)? {
                Some(next) => next,
                None => break,
            },
        };
    }
    Ok(s.scan)
}

struct Scanner<'a> {
    src: &'a dyn ReadAt,
    file_len: u64,
    archive_id: [u8; 16],
    /// The header's format version: a session header or trailer of another
    /// is not one of this archive's.
    version: u16,
    /// Bytes of a header copy before a trailer (FORMAT.md §3.11).
    copy_len: u64,
    content_key: &'a ContentKey,
    scan: Scan,
}

impl Scanner<'_> {
    /// Reads what starts at `pos` and returns where the next thing starts;
    /// `None` (with the damage noted) when nothing valid starts there.
    fn step(&mut self, pos: u64) -> Result<Option<u64>> {
        let rest = self.file_len - pos;
        let Some(magic) = self.read(pos, 8.min(rest) as usize)? else { return Ok(None) };
        let found = match magic.as_slice() {
            m if m == SESSION_MAGIC => self.session_header(pos)?,
            m if m == TRAILER_MAGIC && !self.scan.sessions.is_empty() => {
                self.trailer(pos, Before::Nothing)?
            }
            m if m == SIGNATURE_MAGIC && !self.scan.sessions.is_empty() => self.signed_trailer(pos)?,
            _ if !self.scan.sessions.is_empty() => match self.copied_trailer(pos)? {
                Some(next) => Some(next),
                None => self.unit(pos)?,
            },
            _ => None,
        };
        if found.is_none() {
            let why = if rest < 8 || self.unit_overruns(pos)? {
                "the archive ends inside it (cut)"
            } else {
                "does not authenticate"
            };
            self.scan.damage.push(format!("byte {pos}: {}: {why}", self.what_at(pos, &magic)));
        }
        Ok(found)
    }

    /// Looks for the first offset from `from` on where a session header, a
    /// trailer or a unit of the current session authenticates. Only offsets
    /// whose bytes decode as one are tried.
    fn resync(&mut self, from: u64) -> Result<Option<u64>> {
        let mut start = from;
        while start < self.file_len {
            let len = (self.file_len - start).min(RESYNC_CHUNK as u64) as usize;
            let chunk = read_sealed(self.src, start, len as u32, || "archive".into())?;
            for i in 0..chunk.len() {
                let at = start + i as u64;
                let bytes = &chunk[i..];
                let candidate = bytes.starts_with(&SESSION_MAGIC)
                    || bytes.starts_with(&TRAILER_MAGIC)
                    || bytes.get(..FRAME_LEN).is_some_and(|f| decode_frame(f).is_some());
                if candidate && !bytes.starts_with(&SIGNATURE_MAGIC) {
                    let found = if bytes.starts_with(&SESSION_MAGIC) {
                        self.session_header(at)?
                    } else if bytes.starts_with(&TRAILER_MAGIC) {
                        self.trailer(at, Before::Nothing)?
                    } else if !self.scan.sessions.is_empty() {
                        self.unit(at)?
                    } else {
                        None
                    };
                    if found.is_some() {
                        self.scan
                            .damage
                            .push(format!("bytes {from}..{at}: skipped (nothing there authenticates)"));
                        return Ok(found);
                    }
                }
            }
            start += len as u64;
        }
        Ok(None)
    }

    /// `len` bytes at `pos`, or `None` past the end.
    fn read(&self, pos: u64, len: usize) -> Result<Option<Vec<u8>>> {
        if pos + len as u64 > self.file_len {
            return Ok(None);
        }
        read_sealed(self.src, pos, len as u32, || "archive".into()).map(Some)
    }

    /// Whether a frame at `pos` decodes and names a unit that runs past
    /// the end of the file.
    fn unit_overruns(&self, pos: u64) -> Result<bool> {
        let Some(bytes) = self.read(pos, FRAME_LEN)? else { return Ok(true) };
        Ok(decode_frame(&bytes)
            .is_some_and(|f| pos + (FRAME_LEN as u64) + u64::from(f.stored_len) > self.file_len))
    }

    /// How the thing at `pos` presents itself, for a damage line.
    fn what_at(&self, pos: u64, magic: &[u8]) -> String {
        let session = self.scan.sessions.len().checked_sub(1).map(|s| self.session_name(s));
        let of = |what: &str| match &session {
            Some(s) => format!("{what} of {s}"),
            None => what.to_string(),
        };
        if magic == SESSION_MAGIC {
            return "a session header".into();
        }
        if magic == TRAILER_MAGIC {
            return of("the trailer");
        }
        let frame = self.read(pos, FRAME_LEN).ok().flatten().and_then(|f| decode_frame(&f));
        match frame {
            Some(f) if f.kind == UnitKind::Page => of(&format!("data page {}", f.number)),
            Some(f) if f.kind == UnitKind::Root => of("the index root"),
            Some(f) if f.table == Table::Entries as u8 && f.level == 0 => {
                of(&format!("entries leaf #{}", f.number))
            }
            Some(f) => of(&format!("index node (table {}, level {}, #{})", f.table, f.level, f.number)),
            None => of("a unit"),
        }
    }

    /// How a damage line names session `s` ([`session_name`]).
    pub(super) fn session_name(&self, s: usize) -> String {
        session_name(&self.scan, s)
    }

    /// A session header at `pos`: its clear part names this archive; its
    /// keys derive from its salt. A body that does not open is noted, and
    /// the units after it still tried (the salt may be intact).
    fn session_header(&mut self, pos: u64) -> Result<Option<u64>> {
        let Some(clear_bytes) = self.read(pos, SESSION_HEADER_CLEAR_LEN)? else { return Ok(None) };
        let clear_bytes: [u8; SESSION_HEADER_CLEAR_LEN] = clear_bytes.try_into().expect("read exactly");
        let Ok(clear) = HeaderClear::decode(&clear_bytes) else { return Ok(None) };
        if clear.archive_id != self.archive_id || clear.version != self.version {
            return Ok(None);
        }
        let body_at = pos + SESSION_HEADER_CLEAR_LEN as u64;
        let Some(sealed) = self.read(body_at, clear.body_stored_len as usize)? else { return Ok(None) };
        let keys = Arc::new(SessionKeys::derive(self.content_key, &clear.salt));
        let info =
            open_session_body(&keys, &clear_bytes, sealed).ok().and_then(|b| SessionInfo::decode(&b).ok());
        if info.is_none() {
            self.scan
                .damage
                .push(format!("byte {pos}: a session header's sealed body does not authenticate"));
        }
        self.scan.sessions.push(ScannedSession {
            offset: pos,
            keys,
            info,
            committed: false,
            leaves: BTreeMap::new(),
            leaf_keys: BTreeMap::new(),
            pages_leaves: Vec::new(),
        });
        Ok(Some(body_at + u64::from(clear.body_stored_len)))
    }

    /// A trailer of the current session at `pos` that authenticates and
    /// says that what it follows (`before`) starts where it does.
    fn trailer(&mut self, pos: u64, before: Before) -> Result<Option<u64>> {
        let Some(session) = self.scan.sessions.last_mut() else { return Ok(None) };
        if pos + TRAILER_LEN as u64 > self.file_len {
            return Ok(None);
        }
        let raw = read_sealed(self.src, pos, TRAILER_LEN as u32, || "trailer".into())?;
        let Ok(trailer) = Trailer::decode(raw.as_slice().try_into().expect("read exactly"), pos) else {
            return Ok(None);
        };
        let authentic = trailer.archive_id == self.archive_id
            && trailer.version == self.version
            && session.keys.check_trailer_tag(&trailer.body(), &trailer.tag).is_ok()
            && match before {
                Before::Nothing => true,
                Before::Signatures(at) => trailer.signature_offset() == at,
                Before::HeaderCopy(at) => trailer.copy_slot_len != 0 && trailer.header_copy_offset() == at,
            };
        if !authentic {
            return Ok(None);
        }
        session.committed = true;
        // A recovery record and the trailer's second copy follow it
        // (FORMAT.md §3.12): the next session starts after them.
        let end = trailer.session_end();
        Ok(Some(if end <= self.file_len { end } else { pos + TRAILER_LEN as u64 }))
    }

    /// A signature block at `pos`: the trailer after it, which authenticates
    /// and says where the block starts, vouches for its length.
    fn signed_trailer(&mut self, pos: u64) -> Result<Option<u64>> {
        let most = u64::from(MAX_SIGNATURE_BLOCK_LEN) + self.copy_len + TRAILER_LEN as u64;
        let window = (self.file_len - pos).min(most);
        let bytes = read_sealed(self.src, pos, window as u32, || "signature block".into())?;
        for i in (SIGNATURE_MAGIC.len()..bytes.len()).filter(|&i| bytes[i..].starts_with(&TRAILER_MAGIC)) {
            if let Some(next) = self.trailer(pos + i as u64, Before::Signatures(pos))? {
                return Ok(Some(next));
            }
        }
        Ok(None)
    }

    /// A header copy at `pos`: the trailer right after it, which
    /// authenticates and says the copy starts there, vouches for it.
    fn copied_trailer(&mut self, pos: u64) -> Result<Option<u64>> {
        let at = pos + self.copy_len;
        match self.read(at, TRAILER_MAGIC.len())? {
            Some(magic) if magic == TRAILER_MAGIC => self.trailer(at, Before::HeaderCopy(pos)),
            _ => Ok(None),
        }
    }

    /// A unit of the current session at `pos`, opened under its frame's id.
    fn unit(&mut self, pos: u64) -> Result<Option<u64>> {
        let Some(frame_bytes) = self.read(pos, FRAME_LEN)? else { return Ok(None) };
        let Some(frame) = decode_frame(&frame_bytes) else { return Ok(None) };
        let Some(framed) = self.read(pos, FRAME_LEN + frame.stored_len as usize)? else { return Ok(None) };
        let s = self.scan.sessions.len() - 1;
        let keys = Arc::clone(&self.scan.sessions[s].keys);
        let hash = unit_hash(&framed[..FRAME_LEN], &framed[FRAME_LEN..]);
        let end = pos + framed.len() as u64;
        let (stored_len, plain_len, codec) = (frame.stored_len, frame.plain_len, frame.codec);
        match frame.kind {
            // Its content is not needed (the leaves and pages say all a
            // scan relies on), but damage to it is damage.
            UnitKind::Root => {
                let mut sealed = framed;
                sealed.drain(..FRAME_LEN);
                let aad = frame.aad(&self.archive_id);
                if keys.open_index(PageNonce::single(), &aad, &mut sealed).is_err() {
                    return Ok(None);
                }
            }
            UnitKind::Page => {
                let record = PageRecord { offset: pos, stored_len, plain_len, codec, hash };
                if open_data_page(&keys, &self.archive_id, frame.number, &record, framed).is_err() {
                    return Ok(None);
                }
                self.scan.pages.entry(frame.number).or_insert(ScannedPage { session: s, record });
            }
            UnitKind::Node => {
                let table = match frame.table {
                    1 => Table::Entries,
                    2 => Table::Pages,
                    3 => Table::Sessions,
                    _ => Table::Chunks,
                };
                let id = IndexNodeId { table, level: frame.level, seq: frame.number };
                let child = Child { first_key: Vec::new(), offset: pos, stored_len, plain_len, codec, hash };
                let Ok(plain) = open_index_node(&keys, &self.archive_id, &id, &child, framed) else {
                    return Ok(None);
                };
                let session = &mut self.scan.sessions[s];
                match (table, frame.level) {
                    (Table::Entries, 0) => {
                        session.leaves.insert(id.seq, (EntriesLeaf::decode(&plain)?.entries, end));
                    }
                    (Table::Pages, 0) => session.pages_leaves.push(PagesLeaf::decode(&plain)?),
                    (Table::Entries, 1) => {
                        let node = Internal::decode(&plain)?;
                        for (i, c) in node.children.into_iter().enumerate() {
                            session.leaf_keys.insert(node.first_child_seq + i as u64, c.first_key);
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(Some(end))
    }
}

/// Session `s` as a damage line names it: by the state it holds where a
/// committed state's records name it (as `log` does), else "session N"
/// (its number when its header opened), else by its place.
pub(super) fn session_name(scan: &Scan, s: usize) -> String {
    let session = &scan.sessions[s];
    match session.info.as_ref() {
        Some(info) => match scan.names.get(&info.number) {
            Some(name) => name.to_string(),
            None => format!("session {}", info.number),
        },
        None => format!("the session at byte {}", session.offset),
    }
}

/// A frame that decodes and whose lengths are within the format's limits.
fn decode_frame(bytes: &[u8]) -> Option<Frame> {
    let frame = Frame::decode(bytes.get(..FRAME_LEN)?.try_into().ok()?).ok()?;
    frame.within_limits().then_some(frame)
}
