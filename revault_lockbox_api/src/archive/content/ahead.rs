//! One file read through from its start, its pages opened ahead: the
//! sequential path of an [`EntryReader`](crate::archive::EntryReader).
//! From the first read of a file whose bytes go on past their first page,
//! its pages are read here and opened and hashed on the page workers, as a
//! content walk does, while the reader copies out the page before: the
//! reading thread keeps only the I/O and the copy.

use super::records::PageRecords;
use crate::archive::Archive;
use crate::error::Result;
use crate::format::DIGEST_LEN;
use crate::pipeline::{HashedSpan, PageOpener};
use crate::sparse::ContentHasher;
use crate::storage::ReadAt;

/// A file's remaining pages, opened ahead on the archive's page workers.
pub(crate) struct ReadAhead<'a, S> {
    archive: &'a Archive<S>,
    records: PageRecords<'a, S>,
    pool: PageOpener,
    /// Data-stream end of the file's stored bytes: no page starting here
    /// or later is read.
    end: u64,
    /// The file's hash, given to the workers with the first page.
    span: Option<HashedSpan>,
    submitted_all: bool,
    /// The page being read: its first byte's data-stream offset and its
    /// plaintext.
    current: Option<(u64, Vec<u8>)>,
    /// The file's digest, from the page its bytes end in.
    digest: Option<[u8; DIGEST_LEN]>,
}

impl<S> ReadAhead<'_, S> {
    /// The file's digest, known once the page holding its last byte was
    /// read.
    pub(crate) fn digest(&self) -> Option<[u8; DIGEST_LEN]> {
        self.digest
    }
}

impl<'a, S: ReadAt> ReadAhead<'a, S> {
    /// Reads the stored bytes `at..end` of a file whose bytes before `at`
    /// `hasher` has hashed. Takes the hasher only once nothing can fail:
    /// on an error the caller still has it, and still checks the file.
    pub(crate) fn new(
        archive: &'a Archive<S>,
        at: u64,
        end: u64,
        hasher: &mut Option<ContentHasher>,
    ) -> Result<Self> {
        let tuning = &archive.tuning;
        let records = archive.page_records_from(at)?;
        // The caller takes the bytes: no spare opener (see
        // `PageOpener::new`).
        let pool = PageOpener::new(tuning.threads, tuning.pages_in_flight, false)?;
        let hasher = hasher.take().expect("a reader reading in order from its start has its hasher");
        Ok(ReadAhead {
            archive,
            records,
            pool,
            end,
            span: Some(HashedSpan::whole(0, at, end - at, hasher)),
            submitted_all: false,
            current: None,
            digest: None,
        })
    }

    /// The page holding data-stream offset `at` (at or after the last one
    /// asked for, before `end`), with its first byte's offset.
    pub(crate) fn page_at(&mut self, at: u64) -> Result<(u64, &[u8])> {
        while !self
            .current
            .as_ref()
            .is_some_and(|(start, page)| (*start..*start + page.len() as u64).contains(&at))
        {
            self.fill()?;
            let archive = self.archive;
            let reread = |number, record: &_| archive.reread_page(number, record);
            let Some(opened) = self.pool.pop(&reread) else { return Err(super::no_page()) };
            if let Some((_, done)) = self.current.take() {
                self.pool.recycle(done);
            }
            if let Some(&(_, digest)) = opened.digests.first() {
                self.digest = digest;
            }
            self.pool.recycle_digests(opened.digests);
            self.current = Some((opened.start, opened.plain?));
        }
        let (start, page) = self.current.as_ref().expect("found above");
        Ok((*start, page))
    }

    /// Submits the file's next pages while the workers have room.
    fn fill(&mut self) -> Result<()> {
        while !self.submitted_all && self.pool.has_room() {
            let Some((number, record, start)) = self.records.next()? else {
                self.submitted_all = true;
                break;
            };
            let page_end = start + u64::from(record.plain_len);
            let first = self.span.as_ref().map_or(0, |span| span.start);
            if page_end <= first {
                // The leaf's pages before the one the file goes on in.
                continue;
            }
            if start >= self.end {
                self.submitted_all = true;
                break;
            }
            let mut spans = self.pool.spans();
            spans.extend(self.span.take());
            self.archive.submit_page(&mut self.pool, (number, record, start), spans)?;
        }
        Ok(())
    }
}
