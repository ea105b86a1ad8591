//! [`Salvage`]: reading what can be proven of an archive whose trailer,
//! root or index is damaged or that was cut (FORMAT.md §6.6). The scan
//! (`scan.rs`) authenticates session headers and units without the index;
//! the view (`view.rs`) keeps the entries whose records and content
//! survive; the content walk here reads their pages for extraction,
//! verification and `repair`, checking every file's SHA-256.

mod scan;
mod view;

use std::sync::Arc;

use super::{
    read_prefix, read_slots, Archive, ContentSource, ContentVisitor, Damage, OpenOptions, VerifyReport,
};
use crate::crypto::{open_data_page, ContentKey};
use crate::error::{Error, Result};
use crate::format::{Entry, ARCHIVE_ID_LEN};
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
    /// Unlocks the archive in `src` with `key` (the header and key slots
    /// must be intact) and scans it from its first session. Reads the
    /// whole file once; memory grows with its index (entries and page
    /// places), not with its content.
    pub fn scan<'k>(src: S, key: impl Into<Unlock<'k>>, options: OpenOptions) -> Result<Salvage<S>> {
        options.tuning.validate()?;
        let file_len = src.len().map_err(Error::stream("finding the archive's length"))?;
        let header = read_prefix(&src)?;
        let slots = read_slots(&src, &header)?;
        let (content_key, _) = key.into().content_key(&header.archive_id, &slots, options.kdf_budget)?;
        // One rule for "committed" (FORMAT.md §6.1, §6.6): the state a
        // normal read opens, or a line saying why none does, so that a
        // salvaged archive never verifies (or extracts) as whole, however
        // much of it the scan proves. Its records, when it opens, name the
        // sessions in the scan's lines as `log` does.
        let committed =
            Archive::reopen(&src, &content_key, OpenOptions::new()).and_then(|a| a.check_index().map(|()| a));
        // Names only: damage to the records shows in the scan's own lines.
        let names = match committed.as_ref().map(|a| a.history()) {
            Ok(Ok(history)) => history.iter().map(|s| (s.number, s.name())).collect(),
            _ => Default::default(),
        };
        let found = scan::scan(&src, file_len, &header, &content_key, names)?;
        let keys = found.sessions.iter().map(|s| Arc::clone(&s.keys)).collect();
        let last_number = found.sessions.iter().filter_map(|s| s.info.as_ref().map(|i| i.number)).max();
        let mut view = view::prove(found)?;
        if let Err(e) = committed {
            if !e.is_authentication() {
                return Err(e);
            }
            view.lost.insert(0, format!("{e}: no committed state opens through its trailer and index"));
        }
        Ok(Salvage {
            src,
            archive_id: header.archive_id,
            keys,
            view,
            tuning: options.tuning,
            content_key,
            data_start: header.data_start(),
            last_number,
            file_len,
        })
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
        let mut visitor =
            super::verify::Checker::new(Box::new(self.view.entries.iter().cloned().map(Ok)), None);
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
    /// spans in stream order read each page once), hashing as it goes.
    fn walk_content(&self, visitor: &mut dyn ContentVisitor, _every_page: bool) -> Result<()> {
        let mut last: Option<(u64, Vec<u8>)> = None;
        while let Some((token, span, mut hasher)) = visitor.next_span()? {
            let end = span.start + span.size;
            if !covers(&self.view.placed, span.start, end) {
                let error = no_page();
                if !visitor.damaged(token, &error) {
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
                            visitor.page(p.number, None);
                            last = Some((p.number, plain));
                        }
                        Err(error) => {
                            visitor.page(p.number, Some(&error));
                            if !visitor.damaged(token, &error) {
                                return Err(error);
                            }
                            failed = true;
                            break;
                        }
                    }
                }
                let plain = &last.as_ref().expect("opened above").1;
                let slice = &plain[(at - p.start) as usize..(end.min(p.end()) - p.start) as usize];
                visitor.bytes(token, slice)?;
                hasher.update(slice);
                at += slice.len() as u64;
            }
            if span.size == 0 {
                visitor.bytes(token, &[])?;
            }
            if !failed {
                visitor.end(token, hasher.finish_entry())?;
            }
        }
        // Each span is delivered before the next is asked for, so a visitor
        // has nothing in flight to pause for.
        debug_assert!(!visitor.paused(), "a salvage walk has no second pass");
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
/// back), read from its pages; at the end its SHA-256 is checked, and a
/// mismatch is the reader's error, so no unproven byte is taken as done.
pub(crate) struct SalvagedContent<'a, S> {
    salvage: &'a Salvage<S>,
    entry: &'a Entry,
    hasher: Option<crate::sparse::ContentHasher>,
    at: u64,
    end: u64,
    page: Option<(Placed, Vec<u8>)>,
}

impl<S: ReadAt> Salvage<S> {
    /// The content of `entry`, one of [`entries`](Self::entries).
    pub(crate) fn content<'a>(&'a self, entry: &'a Entry) -> SalvagedContent<'a, S> {
        let (at, end) = entry.extent.map_or((0, 0), |x| (x.offset, x.end()));
        let hasher = Some(crate::sparse::ContentHasher::for_entry(entry));
        SalvagedContent { salvage: self, entry, hasher, at, end, page: None }
    }
}

impl<S: ReadAt> std::io::Read for SalvagedContent<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.end {
            if let Some(hasher) = self.hasher.take() {
                let expected = self.entry.content().map(|(_, d)| *d);
                if Some(hasher.finish_entry()) != expected {
                    let path = self.entry.path.as_slice().into();
                    return Err(std::io::Error::other(Error::ChecksumMismatch { path }));
                }
            }
            return Ok(0);
        }
        if self.page.as_ref().is_none_or(|(p, _)| p.end() <= self.at) {
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
