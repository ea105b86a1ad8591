//! The visitor that receives each selected file's bytes from the reader,
//! in page order, and writes them: small files to a buffer for the placing
//! threads, large ones to an unplaced file as they arrive.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::Extraction;
use crate::archive::{ContentVisitor, Damage, Span, SpanRequest};
use crate::error::{EntryPath, Error, Result};
use crate::extract::place::Sink;
use crate::format::{Entry, EntryKind, DIGEST_LEN};
use crate::sparse::{ContentHasher, Expander, Piece};

/// A file being written (the walk hashes its content).
pub(super) struct OpenFile {
    pub(super) entry: Entry,
    pub(super) sink: Sink,
    /// Turns stored bytes into the logical content (a sparse file's holes).
    pub(super) expander: Expander,
}

impl OpenFile {
    /// Writes a piece of the logical content: a sparse file's holes are
    /// left unwritten in a file, zeros in a buffer.
    fn take(sink: &mut Sink, sparse: bool, piece: Piece<'_>) -> std::io::Result<()> {
        match (sink, &piece) {
            (Sink::Buffer(buf), Piece::Zeros(n)) => buf.resize(buf.len() + *n as usize, 0),
            (Sink::Buffer(buf), Piece::Data(_, bytes)) => buf.extend_from_slice(bytes),
            (Sink::File(_), Piece::Zeros(_)) => {}
            (Sink::File(file), Piece::Data(at, bytes)) if sparse => file.write_all_at(bytes, *at)?,
            (Sink::File(file), Piece::Data(_, bytes)) => file.write_all(bytes)?,
        }
        Ok(())
    }

    /// The trailing hole, and a sparse file's length.
    pub(super) fn finish(&mut self) -> std::io::Result<()> {
        let size = self.entry.content().map_or(0, |c| c.0);
        let sparse = self.entry.sparse_map().is_some();
        let sink = &mut self.sink;
        self.expander.finish(size, &mut |piece| OpenFile::take(sink, sparse, piece))?;
        match &mut self.sink {
            Sink::File(file) if sparse => file.set_len(size),
            _ => Ok(()),
        }
    }
}

/// Hands the walk the spans of the selected files, making directories as
/// their entries come, and writes each file as its bytes arrive.
pub(super) struct FileWriter<'x, 'a, 'e> {
    pub(super) x: &'x mut Extraction<'a>,
    pub(super) selected: Box<dyn Iterator<Item = Result<Entry>> + 'e>,
    pub(super) open: HashMap<usize, OpenFile>,
    /// Files handed out, until their bytes start. Boxed: the table keeps
    /// the size the most spans ever waiting gave it (16,384 at most, see
    /// `MAX_WAITING_SPANS`), 16 bytes a place instead of an `Entry`'s size.
    pub(super) files: HashMap<usize, Box<Entry>>,
    pub(super) next_token: usize,
    /// Hard links whose target is not extracted: written as copies later.
    pub(super) copies: Vec<Entry>,
    /// Tells the options' log of each entry (not again for those copies).
    pub(super) logs: bool,
}

impl ContentVisitor for FileWriter<'_, '_, '_> {
    fn next_span(&mut self) -> Result<Option<SpanRequest>> {
        for entry in self.selected.by_ref() {
            let entry = entry?;
            if let Some(log) = self.x.options.log.as_ref().filter(|_| self.logs) {
                log.0.entry(&entry);
            }
            let extent = match &entry.kind {
                EntryKind::Dir => {
                    self.x.make_dir(&entry)?;
                    continue;
                }
                EntryKind::Symlink { .. } => {
                    self.x.symlinks.push(entry);
                    continue;
                }
                EntryKind::Hardlink { target, .. } => {
                    if self.x.extracted_files.contains(target) || self.x.lost.contains(target) {
                        self.x.links.push(entry);
                    } else {
                        self.copies.push(entry);
                    }
                    continue;
                }
                EntryKind::File { .. } => entry.extent.expect("files have an extent"),
            };
            if extent.linked {
                self.x.extracted_files.insert(entry.path.clone());
            }
            let token = self.next_token;
            self.next_token += 1;
            let hasher = ContentHasher::for_entry(&entry);
            self.files.insert(token, Box::new(entry));
            return Ok(Some((token, Span::of(&extent), hasher)));
        }
        Ok(None)
    }

    fn bytes(&mut self, token: usize, bytes: &[u8]) -> Result<()> {
        if !self.open.contains_key(&token) {
            let entry = self.files.remove(&token).expect("span handed out");
            let f = self.x.open_file(*entry)?;
            self.open.insert(token, f);
        }
        let f = self.open.get_mut(&token).expect("opened above");
        let sparse = f.entry.sparse_map().is_some();
        let sink = &mut f.sink;
        f.expander
            .feed(bytes, &mut |piece| OpenFile::take(sink, sparse, piece))
            .map_err(|e| Error::io("writing", self.x.walker.display(&f.entry.path))(e))?;
        if let Some(p) = &self.x.options.progress {
            p.bytes_in.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    fn end(&mut self, token: usize, digest: [u8; DIGEST_LEN]) -> Result<()> {
        let mut f = self.open.remove(&token).expect("bytes came first");
        f.finish().map_err(|e| Error::io("writing", self.x.walker.display(&f.entry.path))(e))?;
        self.x.finish_file(f, digest)
    }

    fn writes_bytes_out(&self) -> bool {
        true
    }

    fn damaged(&mut self, token: usize, error: &Error) -> bool {
        let path = match (self.open.remove(&token), self.files.remove(&token)) {
            (Some(f), _) => f.entry.path,
            (None, Some(e)) => e.path,
            (None, None) => return self.x.options.keep_going,
        };
        self.x.extracted_files.remove(&path);
        if self.x.options.keep_going {
            self.x.report.damaged.push(Damage { path: EntryPath(path.clone()), reason: error.to_string() });
        }
        self.x.lost.insert(path);
        self.x.options.keep_going
    }
}
