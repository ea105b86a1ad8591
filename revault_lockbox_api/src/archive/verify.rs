//! [`Archive::verify`]: authenticate everything, write nothing.

use std::sync::atomic::Ordering;

use super::head::{copy_differs, primary_differs};
use super::{is_salvageable, ContentVisitor, Members, Span, SpanRequest};
use crate::archive::Archive;
use crate::chunk::{ChunkIdHasher, ChunkKeys};
use crate::error::{EntryPath, Error, Result};
use crate::format::{ChunkRef, DIGEST_LEN};
use crate::progress::Progress;
use crate::sparse::ContentHasher;
use crate::storage::ReadAt;

/// One entry that did not verify or could not be restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The entry's path.
    pub path: EntryPath,
    /// What was wrong, naming the page where a page failed.
    pub reason: String,
}

/// What [`Archive::verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Entries whose index records were checked.
    pub entries: u64,
    /// Data pages authenticated (including damaged ones), each counted
    /// once however often the walk read it: for a whole archive, the
    /// page count `info` gives.
    pub pages: u64,
    /// Data pages that failed authentication, with the reason.
    pub damaged_pages: Vec<String>,
    /// Files whose content was checked.
    pub files: u64,
    /// Bytes of file content checked.
    pub bytes: u64,
    /// Entries that did not verify.
    pub damaged: Vec<Damage>,
    /// Bytes after the last committed trailer: an interrupted append (or
    /// bytes appended by someone else). Readers ignore them, so they do not
    /// count against [`is_ok`](Self::is_ok); `repair` cuts them off.
    pub torn_tail_bytes: u64,
    /// What a salvage scan could not prove (FORMAT.md §6.6), one line
    /// each; for an archive read through its trailer and index, an
    /// earlier trailer of the hash chain that is damaged.
    pub lost: Vec<String>,
}

impl VerifyReport {
    /// Whether the committed state verified.
    pub fn is_ok(&self) -> bool {
        self.damaged.is_empty() && self.damaged_pages.is_empty() && self.lost.is_empty()
    }
}

/// Checks each file's digest (the walk hashes its bytes) as it ends; a
/// few files at most are open at once, since spans arrive in order. A
/// chunked file's chunks are checked against their keyed ids as their
/// bytes pass, each reference on its own (a chunk two files share is
/// hashed twice): the walk delivers them anyway, and a set of the chunks
/// already checked would grow with the archive.
pub(super) struct Checker<'a> {
    entries: Box<dyn Iterator<Item = Result<crate::format::Entry>> + 'a>,
    /// Files handed out and not yet ended.
    open: std::collections::VecDeque<OpenFile>,
    next_token: usize,
    ids: ChunkIdHasher,
    /// The chunk whose bytes are passing: its file, its record, the bytes
    /// seen so far.
    chunk: Option<(usize, ChunkRef, u64)>,
    /// The highest page counted: a walk reads pages in increasing order,
    /// and one read again (a second pass, a page two files share) is
    /// not counted again.
    highest_page: Option<u64>,
    pub(super) report: VerifyReport,
    progress: Option<&'a Progress>,
}

/// A file handed out and not yet ended.
struct OpenFile {
    token: usize,
    path: Vec<u8>,
    sha256: [u8; DIGEST_LEN],
    /// The data-stream offset of its first chunk whose id was wrong.
    wrong_chunk: Option<u64>,
}

impl<'a> Checker<'a> {
    /// A checker of the files among `entries`, whose chunk ids are keyed
    /// by `keys`.
    pub(super) fn new(
        entries: Box<dyn Iterator<Item = Result<crate::format::Entry>> + 'a>,
        keys: &ChunkKeys,
        progress: Option<&'a Progress>,
    ) -> Checker<'a> {
        Checker {
            entries,
            open: Default::default(),
            next_token: 0,
            ids: ChunkIdHasher::new(keys),
            chunk: None,
            highest_page: None,
            report: VerifyReport::default(),
            progress,
        }
    }

    fn take(&mut self, token: usize) -> OpenFile {
        let i = self.open.iter().position(|f| f.token == token).expect("span handed out");
        self.open.remove(i).expect("position is valid")
    }

    /// Hashes the passing chunk's `bytes`; at its end, compares its id.
    fn check_chunk(&mut self, token: usize, bytes: &[u8]) {
        let Some((_, chunk, seen)) = self.chunk.as_mut().filter(|c| c.0 == token) else { return };
        self.ids.update(bytes);
        *seen += bytes.len() as u64;
        if *seen < u64::from(chunk.len) {
            return;
        }
        let chunk = *chunk;
        self.chunk = None;
        if self.ids.finish_chunk().as_bytes() != &chunk.id {
            let file = self.open.iter_mut().find(|f| f.token == token).expect("span handed out");
            file.wrong_chunk.get_or_insert(chunk.offset);
        }
    }
}

impl ContentVisitor for Checker<'_> {
    fn next_span(&mut self) -> Result<Option<SpanRequest>> {
        for entry in self.entries.by_ref() {
            let entry = entry?;
            self.report.entries += 1;
            if let Some(p) = self.progress {
                p.entries.fetch_add(1, Ordering::Relaxed);
            }
            let (Some(extent), Some((_, sha256)), crate::format::EntryKind::File { .. }) =
                (entry.extent, entry.content(), &entry.kind)
            else {
                continue;
            };
            let token = self.next_token;
            self.next_token += 1;
            self.open.push_back(OpenFile {
                token,
                path: entry.path.clone(),
                sha256: *sha256,
                wrong_chunk: None,
            });
            let span = Span::of(&extent);
            return Ok(Some((token, span, ContentHasher::for_entry(&entry))));
        }
        Ok(None)
    }

    fn chunk(&mut self, token: usize, chunk: &ChunkRef) {
        if self.chunk.take().is_some() {
            // The last chunk was cut short (its file damaged): start afresh.
            self.ids.finish_chunk();
        }
        self.chunk = Some((token, *chunk, 0));
    }

    fn bytes(&mut self, token: usize, bytes: &[u8]) -> Result<()> {
        self.check_chunk(token, bytes);
        self.report.bytes += bytes.len() as u64;
        if let Some(p) = self.progress {
            p.bytes_in.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    fn end(&mut self, token: usize, digest: [u8; DIGEST_LEN]) -> Result<()> {
        let file = self.take(token);
        self.report.files += 1;
        let path = EntryPath(file.path);
        let reason = match file.wrong_chunk {
            Some(offset) => format!(
                "chunk id mismatch for {path}: the chunk at data-stream offset {offset} differs from what was \
                 archived"
            ),
            None if digest != file.sha256 => Error::ChecksumMismatch { path: path.clone() }.to_string(),
            None => return Ok(()),
        };
        self.report.damaged.push(Damage { path, reason });
        Ok(())
    }

    fn damaged(&mut self, token: usize, error: &Error) -> bool {
        let file = self.take(token);
        self.report.damaged.push(Damage { path: EntryPath(file.path), reason: error.to_string() });
        true
    }

    fn page(&mut self, number: u64, error: Option<&Error>) {
        if self.highest_page.is_some_and(|h| number <= h) {
            return;
        }
        self.highest_page = Some(number);
        self.report.pages += 1;
        if let Some(e) = error {
            self.report.damaged_pages.push(e.to_string());
        }
    }
}

impl<S: ReadAt> Archive<S> {
    /// Authenticates every index node and data page, checks the index the
    /// way extraction does (paths, order, links, contents in range), and
    /// recomputes every file's SHA-256. Damaged pages and files are
    /// reported, not returned as an error; I/O errors and a damaged index
    /// are.
    ///
    /// ```
    /// use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, KdfParams, Password};
    /// use revault_lockbox_api::create::Metadata;
    /// # fn main() -> Result<(), revault_lockbox_api::Error> {
    /// # let pw = Password::from("pw");
    /// # let mut w = ArchiveWriter::new(Vec::new(), &pw, CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS))?;
    /// # w.add_file("a", &Metadata::new(0o644, 0, 0, 0, 0), 3, &b"abc"[..])?;
    /// # let bytes = w.finish()?;
    /// let report = Archive::open(std::io::Cursor::new(bytes), &pw)?.verify()?;
    /// assert!(report.is_ok());
    /// assert_eq!(report.files, 1);
    /// # Ok(()) }
    /// ```
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_members(&Members::all())
    }

    /// [`verify`](Self::verify) of the entries `members` selects: their
    /// index records and contents, and only the pages their contents lie
    /// in (every page when every entry is selected). A name that matches
    /// no entry is [`Error::NotFound`].
    pub fn verify_members(&self, members: &Members) -> Result<VerifyReport> {
        // A damaged earlier trailer loses the earlier states that need it,
        // not this one (its trailer and root prove it): reported, and the
        // walk goes on.
        let history = match self.check_chain() {
            Ok(headers) => headers,
            Err(e) if is_salvageable(&e) => vec![format!(
                "{e}: earlier states (`--session`) that need it no longer open; the last state is proven"
            )],
            Err(e) => return Err(e),
        };
        if let Some(missing) = members.first_missing_name(self)? {
            return Err(Error::NotFound { path: missing.into() });
        }
        if let Some(p) = self.progress() {
            p.total_bytes.store(members.content_bytes(self)?, Ordering::Relaxed);
        }
        let mut selected = members.entries(self)?;
        let report = {
            let mut checker = Checker::new(Box::new(selected.by_ref()), &self.chunk_keys(), self.progress());
            checker.report.torn_tail_bytes = self.torn_tail_bytes();
            checker.report.lost.extend(self.header_damage().map(str::to_owned));
            checker.report.lost.extend(self.session_header_damage().map(str::to_owned));
            if self.header_damage().is_none() {
                // One of the two is the header in use (the copy when it
                // was at hand), so at most one of them reports.
                let (trailer, head) = (&self.last.trailer, self.head());
                checker.report.lost.extend(copy_differs(&self.src, trailer, head)?);
                checker.report.lost.extend(primary_differs(&self.src, head, trailer.header_copy_offset())?);
            }
            checker.report.lost.extend(history);
            checker.report.lost.extend(self.check_records()?);
            if members.is_everything() {
                checker.report.lost.extend(self.check_chunk_indexes());
            }
            self.walk_content(&mut checker, members.is_everything())?;
            checker.report
        };
        selected.all_matched()?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use crate::archive::{Archive, OpenOptions, Salvage};
    use crate::crypto::{KdfParams, Password};
    use crate::session::{ArchiveWriter, CreateOptions, Metadata};

    #[test]
    fn verify_counts_pages_not_reads() {
        // Small files share pages. A salvage's count gave 5 where the
        // archive has 3 pages.
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096);
        let mut w = ArchiveWriter::new(Vec::new(), &Password::from("p"), options).unwrap();
        let meta = Metadata::new(0o644, 0, 0, 0, 0);
        for (i, len) in [3000usize, 3000, 3000, 200].into_iter().enumerate() {
            let data: Vec<u8> = (0..len).map(|j| (j * 7 + i * 13) as u8 ^ (j >> 5) as u8).collect();
            w.add_file(format!("f{i}"), &meta, len as u64, &data[..]).unwrap();
        }
        let bytes = w.finish().unwrap();
        let archive = Archive::open(Cursor::new(bytes.clone()), &Password::from("p")).unwrap();
        let pages = archive.root().page_count;
        assert!(pages >= 2, "{pages} pages: files must share them for the test to mean anything");
        assert_eq!(archive.verify().unwrap().pages, pages);
        // A salvage's report counted the scan's pages, then each read again.
        let salvage = Salvage::scan(Cursor::new(bytes), &Password::from("p"), OpenOptions::new()).unwrap();
        assert_eq!(salvage.verify().unwrap().pages, pages);
    }
}
