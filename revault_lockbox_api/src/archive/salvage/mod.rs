//! [`Salvage`]: reading what can be proven of an archive whose trailer,
//! root or index is damaged or that was cut (FORMAT.md §6.6). The scan
//! (`scan.rs`) authenticates session headers and units without the index;
//! the view (`view.rs`) keeps the entries whose records and content
//! survive; the content walk here reads their pages for extraction,
//! verification and `repair`, checking every file's SHA-256.

mod scan;
mod view;

use std::sync::Arc;

use super::content::{is_page_damage, Part, Pass};
use super::{unlock_head, Archive, ContentSource, ContentVisitor, Damage, OpenOptions, Span, VerifyReport};
use crate::crypto::{open_data_page, ChunkKeys, ContentKey};
use crate::error::{EntryPath, Error, Result};
use crate::format::{decode_chunk_list, ChunkRef, Entry, ARCHIVE_ID_LEN};
use crate::keys::Unlock;
use crate::profile::ReadTuning;
use crate::storage::ReadAt;
use view::{covers, Placed, View};

/// What a scan of a damaged or cut archive proved: the entries whose
/// records and content authenticate, and a line for everything else.
pub struct Salvage<S> {
    src: S,
    archive_id: [u8; ARCHIVE_ID_LEN],
    keys: Vec<Arc<crate::crypto::SessionKeys>>,
    view: View,
    tuning: ReadTuning,
    content_key: ContentKey,
    data_start: u64,
    /// The header prefix and slot table it was unlocked with.
    head: Arc<[u8]>,
    last_number: Option<u32>,
    file_len: u64,
}

impl<S> std::fmt::Debug for Salvage<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Salvage")
            .field("entries", &self.view.entries.len())
            .field("lost", &self.view.lost.len())
            .finish_non_exhaustive()
    }
}

impl<S: ReadAt> Salvage<S> {
    /// Unlocks the archive in `src` with `key` (the header and key slots,
    /// or their copy at the end of the last session, must be intact) and scans it from its first session. Reads the
    /// whole file once; memory grows with its index (entries and page
    /// places), not with its content.
    pub fn scan<'k>(src: S, key: impl Into<Unlock<'k>>, options: OpenOptions) -> Result<Salvage<S>> {
        options.tuning.validate()?;
        let file_len = src.len().map_err(Error::stream("finding the archive's length"))?;
        // The header's copy stands in for a damaged primary (FORMAT.md §3.11).
        let (head, content_key) = unlock_head(&src, file_len, &key.into(), options.kdf_budget)?;
        let header = head.header;
        // One rule for "committed" (FORMAT.md §6.1, §6.6): the state a
        // normal read opens, or a line saying why none does, so that a
        // salvaged archive never verifies (or extracts) as whole, however
        // much of it the scan proves. Its records, when it opens, name the
        // sessions in the scan's lines as `log` does.
        let key = ContentKey::from_bytes(content_key.bytes());
        let committed = Archive::open_unlocked(&src, head.clone(), key, file_len, OpenOptions::new())
            .and_then(|a| a.check_index().map(|()| a));
        // Names only: damage to the records shows in the scan's own lines.
        let names = match committed.as_ref().map(|a| a.history()) {
            Ok(Ok(history)) => history.iter().map(|s| (s.number, s.name())).collect(),
            _ => Default::default(),
        };
        let found = scan::scan(&src, file_len, &header, &content_key, names)?;
        let keys = found.sessions.iter().map(|s| Arc::clone(&s.keys)).collect();
        let last_number = found.sessions.iter().filter_map(|s| s.info.as_ref().map(|i| i.number)).max();
        let mut view = view::prove(found)?;
        if let Some(damage) = &head.damage {
            view.lost.insert(0, damage.clone());
        }
        if let Err(e) = committed {
            if !e.is_authentication() {
                return Err(e);
            }
            view.lost.insert(0, format!("{e}: no committed state opens through its trailer and index"));
        }
        let mut salvage = Salvage {
            src,
            archive_id: header.archive_id,
            keys,
            view,
            tuning: options.tuning,
            content_key,
            data_start: header.data_start(),
            head: head.bytes,
            last_number,
            file_len,
        };
        salvage.prove_chunks()?;
        Ok(salvage)
    }

    /// Keeps a chunked file only when its list authenticates and every
    /// chunk it names lies in pages that do; each other one is lost alone.
    /// Reads each list once, one at a time.
    fn prove_chunks(&mut self) -> Result<()> {
        if !self.view.entries.iter().any(|e| e.extent.is_some_and(|x| x.chunks > 0)) {
            return Ok(());
        }
        let entries = std::mem::take(&mut self.view.entries);
        let ends = std::mem::take(&mut self.view.proof_ends);
        for (entry, end) in entries.into_iter().zip(ends) {
            let lost = match entry.extent.filter(|x| x.chunks > 0) {
                None => None,
                Some(x) => match self.chunk_list(&Span::of(&x)) {
                    Ok(chunks) => chunks
                        .iter()
                        .any(|c| !covers(&self.view.placed, c.offset, c.end()))
                        .then(|| "some of its chunks lie in pages that were lost".to_string()),
                    Err(e) if is_page_damage(&e) => Some(format!("its chunk list: {e}")),
                    Err(e) => return Err(e),
                },
            };
            match lost {
                Some(why) => self.view.lost_entries.push((EntryPath(entry.path), why)),
                None => {
                    self.view.entries.push(entry);
                    // A list ends after every chunk it names: its last unit
                    // is the file's.
                    self.view.proof_ends.push(end);
                }
            }
        }
        Ok(())
    }

    /// `len` bytes of the data stream from `at`, through the pages placed.
    fn read_stream(&self, at: u64, len: u64) -> Result<Vec<u8>> {
        let end = at.checked_add(len).ok_or_else(no_page)?;
        // Bounds the allocation by the pages found, whatever `len` says.
        if !covers(&self.view.placed, at, end) {
            return Err(no_page());
        }
        let mut bytes = Vec::with_capacity(len as usize);
        while (bytes.len() as u64) < len {
            let pos = at + bytes.len() as u64;
            let p = *self.page_at(pos).expect("covered above");
            let plain = self.open(&p)?;
            bytes.extend_from_slice(&plain[(pos - p.start) as usize..(end.min(p.end()) - p.start) as usize]);
        }
        Ok(bytes)
    }

    /// A chunked span's list, with every check of FORMAT.md §3.5c.
    fn chunk_list(&self, span: &Span) -> Result<Vec<ChunkRef>> {
        let (count, len) = span.extent().chunk_list().expect("a chunked span");
        let bytes = self.read_stream(span.start, len)?;
        Ok(decode_chunk_list(&bytes, span.start, count, span.size)?)
    }

    /// The entries proven, in index order: their records authenticate and
    /// their content lies in pages that do (each file's SHA-256 is checked
    /// when its content is read).
    pub fn entries(&self) -> &[Entry] {
        &self.view.entries
    }

    /// For each of [`entries`](Self::entries), the file offset where the
    /// last unit it needs ends (its entries leaf, its content's last page):
    /// the same archive cut at or after it keeps the entry. What the cut
    /// tests count against.
    pub fn proof_ends(&self) -> &[u64] {
        &self.view.proof_ends
    }

    /// What cannot be proven, one line each: damaged or missing units, lost
    /// entries leaves, a cut session, content no surviving record names.
    pub fn lost(&self) -> &[String] {
        &self.view.lost
    }

    /// Entries whose records survive but whose content or link target
    /// does not.
    pub fn lost_entries(&self) -> Vec<Damage> {
        self.view
            .lost_entries
            .iter()
            .map(|(path, reason)| Damage { path: path.clone(), reason: reason.clone() })
            .collect()
    }

    /// The archive's length up to where the scan stopped: what the
    /// implicit-directory limit is measured against.
    pub(crate) fn stored_len(&self) -> u64 {
        self.file_len
    }

    /// The reading knobs in effect.
    pub fn tuning(&self) -> &ReadTuning {
        &self.tuning
    }

    /// Checks every proven file's content against its SHA-256 (every page
    /// was authenticated by the scan); nothing written. Damaged files and
    /// everything lost are in the report, which is never
    /// [`is_ok`](VerifyReport::is_ok) for a salvaged archive.
    pub fn verify(&self) -> Result<VerifyReport> {
        let keys = ChunkKeys::derive(&self.content_key, &self.archive_id);
        let mut visitor =
            super::verify::Checker::new(Box::new(self.view.entries.iter().cloned().map(Ok)), &keys, None);
        self.walk_content(&mut visitor, false)?;
        let mut report = visitor.report;
        // The scan authenticated every placed page, not only those the
        // walk read again.
        report.pages = self.view.placed.len() as u64;
        report.entries = self.view.entries.len() as u64;
        report.damaged.extend(self.lost_entries());
        report.lost = self.view.lost.clone();
        Ok(report)
    }

    /// The archive id, the content key, where the data starts and the
    /// highest session number found: what a `repair` writes from.
    /// The header prefix and slot table the scan was unlocked with (the
    /// primary's, or its copy's), as at offset 0.
    pub(crate) fn head(&self) -> &[u8] {
        &self.head
    }

    pub(crate) fn rewrite_point(&self) -> ([u8; ARCHIVE_ID_LEN], &ContentKey, u64, Option<u32>) {
        (self.archive_id, &self.content_key, self.data_start, self.last_number)
    }

    /// The opened page holding stream offset `at`.
    fn page_at(&self, at: u64) -> Option<&Placed> {
        let placed = &self.view.placed;
        placed.get(placed.partition_point(|p| p.end() <= at)).filter(|p| p.start <= at)
    }

    fn open(&self, p: &Placed) -> Result<Vec<u8>> {
        let what = || format!("page {}", p.number);
        let record = &p.page.record;
        let framed = crate::index::read_sealed(&self.src, record.offset, record.unit_len(), what)?;
        open_data_page(&self.keys[p.page.session], &self.archive_id, p.number, record, framed)
    }
}

impl<S: ReadAt> ContentSource for Salvage<S> {
    /// Reads each span's pages in turn (the last page opened is kept, so
    /// spans in stream order read each page once), hashing as it goes; a
    /// chunked file's chunks one after another in list order.
    fn walk_content(&self, visitor: &mut dyn ContentVisitor, _every_page: bool) -> Result<()> {
        let lists = |span: &Span| self.chunk_list(span);
        let mut pass = Pass::new(visitor, &lists);
        let mut last: Option<(u64, Vec<u8>)> = None;
        let mut hasher = None;
        while let Some(Part { token, span, hasher: first, last: ends, chunk }) = pass.pull()? {
            if first.is_some() {
                hasher = first;
            }
            let end = span.start + span.size;
            if !covers(&self.view.placed, span.start, end) {
                let error = no_page();
                if !pass.damaged(token, ends, &error) {
                    return Err(error);
                }
                continue;
            }
            let mut at = span.start;
            let mut failed = false;
            while at < end {
                let p = *self.page_at(at).expect("covered above");
                if last.as_ref().is_none_or(|(n, _)| *n != p.number) {
                    match self.open(&p) {
                        Ok(plain) => {
                            pass.page(p.number, None);
                            last = Some((p.number, plain));
                        }
                        Err(error) => {
                            pass.page(p.number, Some(&error));
                            if !pass.damaged(token, ends, &error) {
                                return Err(error);
                            }
                            failed = true;
                            break;
                        }
                    }
                }
                let plain = &last.as_ref().expect("opened above").1;
                let slice = &plain[(at - p.start) as usize..(end.min(p.end()) - p.start) as usize];
                pass.bytes(token, chunk.as_ref().filter(|_| at == span.start), slice)?;
                if let Some(h) = hasher.as_mut() {
                    h.update(slice);
                }
                at += slice.len() as u64;
            }
            if span.size == 0 {
                pass.bytes(token, None, &[])?;
            }
            if !failed && ends {
                let digest = hasher.take().expect("a file's first part has its hasher").finish_entry();
                pass.end(token, digest)?;
            }
        }
        // Each span is delivered before the next is asked for, so a visitor
        // has nothing in flight to pause for.
        debug_assert!(!pass.paused(), "a salvage walk has no second pass");
        Ok(())
    }
}

/// Whether `error`, met opening or walking an archive, is damage that a
/// salvage scan may get round: a trailer, root, session header or index
/// node that does not authenticate (or an archive cut with no commit
/// left). Not a wrong key, an unreadable file, another version, nor
/// content that authenticates but breaks the format's rules (a key
/// holder's lie, which the scan would refuse just the same).
pub fn is_salvageable(error: &Error) -> bool {
    matches!(error, Error::Tampered { .. })
}

/// The stored bytes of one proven file (a sparse file's segments back to
/// back, a chunked file's chunks in list order), read from its pages; at
/// the end its SHA-256 is checked, and a mismatch is the reader's error,
/// so no unproven byte is taken as done.
pub(crate) struct SalvagedContent<'a, S> {
    salvage: &'a Salvage<S>,
    entry: &'a Entry,
    hasher: Option<crate::sparse::ContentHasher>,
    /// The stream ranges of its content still to read, last first (a
    /// chunked file's list is read at the first read).
    ranges: Option<Vec<(u64, u64)>>,
    at: u64,
    end: u64,
    page: Option<(Placed, Vec<u8>)>,
}

impl<S: ReadAt> Salvage<S> {
    /// The content of `entry`, one of [`entries`](Self::entries).
    pub(crate) fn content<'a>(&'a self, entry: &'a Entry) -> SalvagedContent<'a, S> {
        let extent = entry.extent.filter(|x| x.size > 0);
        let ranges = match extent {
            Some(x) if x.chunks > 0 => None,
            Some(x) => Some(vec![(x.offset, x.end())]),
            None => Some(Vec::new()),
        };
        let hasher = Some(crate::sparse::ContentHasher::for_entry(entry));
        SalvagedContent { salvage: self, entry, hasher, ranges, at: 0, end: 0, page: None }
    }
}

impl<S: ReadAt> SalvagedContent<'_, S> {
    /// Moves on to the next range when the current one is read; `false`
    /// when there is none.
    fn next_range(&mut self) -> Result<bool> {
        if self.at < self.end {
            return Ok(true);
        }
        let ranges = match &mut self.ranges {
            Some(ranges) => ranges,
            None => {
                let extent = self.entry.extent.expect("a chunked file has an extent");
                let chunks = self.salvage.chunk_list(&Span::of(&extent))?;
                self.ranges.insert(chunks.iter().rev().map(|c| (c.offset, c.end())).collect())
            }
        };
        match ranges.pop() {
            Some((at, end)) => {
                (self.at, self.end) = (at, end);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

impl<S: ReadAt> std::io::Read for SalvagedContent<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.next_range().map_err(std::io::Error::other)? {
            if let Some(hasher) = self.hasher.take() {
                let expected = self.entry.content().map(|(_, d)| *d);
                if Some(hasher.finish_entry()) != expected {
                    let path = self.entry.path.as_slice().into();
                    return Err(std::io::Error::other(Error::ChecksumMismatch { path }));
                }
            }
            return Ok(0);
        }
        if self.page.as_ref().is_none_or(|(p, _)| !(p.start..p.end()).contains(&self.at)) {
            let p = *self.salvage.page_at(self.at).ok_or_else(|| std::io::Error::other(no_page()))?;
            let plain = self.salvage.open(&p).map_err(std::io::Error::other)?;
            self.page = Some((p, plain));
        }
        let (p, plain) = self.page.as_ref().expect("set above");
        let from = (self.at - p.start) as usize;
        let to = (self.end.min(p.end()) - p.start) as usize;
        let n = buf.len().min(to - from);
        buf[..n].copy_from_slice(&plain[from..from + n]);
        self.hasher.as_mut().expect("until the end").update(&buf[..n]);
        self.at += n as u64;
        Ok(n)
    }
}

fn no_page() -> Error {
    Error::malformed("index entry", "content lies outside the pages that authenticate")
}
