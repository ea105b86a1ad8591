//! The content walk's visitor that writes an export: entries in the
//! selection's order, a file's content as its pages open, the entries
//! after it queued until it is written.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::Ordering;

use super::header::{write_header, write_piece, BLOCK_LEN, ZEROS};
use super::{ExportReport, Stream, TAR};
use crate::archive::{Archive, ContentVisitor, Members, Selected, Span, SpanRequest};
use crate::error::{Error, Result};
use crate::format::{Entry, EntryKind, FirstLinks, DIGEST_LEN};
use crate::progress::Progress;
use crate::sparse::{ContentHasher, Expander};
use crate::storage::ReadAt;

/// Writes the stream; returns its report and the most entries other than
/// files on the walk it held queued at once.
pub(super) fn write_stream<W: Write, S: ReadAt>(
    out: &mut Stream<W>,
    archive: &Archive<S>,
    members: &Members,
) -> Result<(ExportReport, usize)> {
    if let Some(p) = archive.progress() {
        p.total_bytes.store(members.content_bytes(archive)?, Ordering::Relaxed);
    }
    let mut selected = members.entries(archive)?;
    let mut writer = StreamWriter {
        out,
        archive,
        selected: &mut selected,
        queue: VecDeque::new(),
        written: FirstLinks::new(),
        report: ExportReport::default(),
        progress: archive.progress(),
        next_token: 0,
        paused: false,
        queued_others: 0,
        most_queued: 0,
    };
    archive.walk_content(&mut writer, false)?;
    // The entries after the last file's content.
    writer.write_ready()?;
    debug_assert!(writer.queue.is_empty(), "every queued entry was written");
    let (report, most_queued) = (writer.report, writer.most_queued);
    selected.all_matched()?;
    Ok((report, most_queued))
}

/// Entries without content of their own in the walk (directories, links,
/// hard links read on their own) queued behind a file whose pages are in
/// flight before the writer pauses the walk ([`ContentVisitor::paused`]): the walk then
/// delivers those files, the queue is written out, and a new pass goes on.
/// A bound on the memory a long run of directories or links after a file
/// would take.
pub(super) const MAX_QUEUED: usize = if cfg!(test) { 16 } else { 16 << 10 };

/// An entry taken from the selection and not yet written: entries go out
/// in the selection's order, and those after a file wait for its content.
/// The queue holds the entries from the first file whose pages are in
/// flight on: the files as many as the walk has spans waiting, the others
/// at most [`MAX_QUEUED`].
enum Queued {
    /// A regular file whose content is span `token`; its header went out
    /// when `started`, and its digest was checked when `ended`.
    File { token: usize, entry: Entry, size: u64, expander: Expander, started: bool, ended: bool },
    /// A hard link written with its content: read on its own when it is
    /// written (its content lies where its target's does, which the walk
    /// could reach only by going back over the data stream).
    Copy { entry: Entry, size: u64 },
    /// A directory, symbolic link or hard link: a header alone.
    Header { entry: Entry, kind: tar::EntryType, link: Option<Vec<u8>> },
}

/// The content walk's visitor that writes the stream.
struct StreamWriter<'a, 's, W: Write, S> {
    out: &'a mut Stream<W>,
    archive: &'a Archive<S>,
    selected: &'a mut Selected<'s>,
    queue: VecDeque<Queued>,
    /// By the stored file's path: the name its content went out under.
    written: FirstLinks<Vec<u8>>,
    report: ExportReport,
    progress: Option<&'a Progress>,
    next_token: usize,
    /// The last `None` handed to the walk was a pause.
    paused: bool,
    /// Queued entries that are not files on the walk, and the most of them
    /// queued at once.
    queued_others: usize,
    most_queued: usize,
}

impl<W: Write, S: ReadAt> StreamWriter<'_, '_, W, S> {
    /// Writes the queued entries up to the first file whose content has
    /// not all come, and that file's header.
    fn write_ready(&mut self) -> Result<()> {
        while let Some(front) = self.queue.front_mut() {
            let size = match front {
                Queued::File { entry, size, started, ended, .. } if !*ended => {
                    // Its header now: a failure in its content then leaves
                    // a member cut short, which tar refuses.
                    if let (Stream::Tar(tar), false) = (&mut *self.out, *started) {
                        write_header(tar, entry, tar::EntryType::Regular, *size, None)?;
                    }
                    *started = true;
                    return Ok(());
                }
                Queued::File { entry, size, expander, started, .. } => {
                    if let (Stream::Tar(tar), false) = (&mut *self.out, *started) {
                        write_header(tar, entry, tar::EntryType::Regular, *size, None)?;
                    }
                    let (error, progress) = (self.out.error(), self.progress);
                    let out = self.out.content();
                    expander.finish(*size, &mut |piece| write_piece(out, piece, progress)).map_err(error)?;
                    *size
                }
                Queued::Copy { entry, size } => {
                    if let Stream::Tar(tar) = &mut *self.out {
                        write_header(tar, entry, tar::EntryType::Regular, *size, None)?;
                    }
                    let reader = self.archive.content_reader(entry, None)?.reading_ahead();
                    copy_file(reader, self.out, &entry.path, *size)?;
                    *size
                }
                Queued::Header { entry, kind, link } => {
                    if let Stream::Tar(tar) = &mut *self.out {
                        write_header(tar, entry, *kind, 0, link.as_deref())?;
                    }
                    0
                }
            };
            if let Stream::Tar(tar) = &mut *self.out {
                let padding = (BLOCK_LEN - size % BLOCK_LEN) % BLOCK_LEN;
                tar.get_mut().write_all(&ZEROS[..padding as usize]).map_err(Error::stream(TAR))?;
            }
            self.report.content_bytes += size;
            if !matches!(self.queue.pop_front(), Some(Queued::File { .. })) {
                self.queued_others -= 1;
            }
            self.report.entries += 1;
            if let Some(p) = self.progress {
                p.entries.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

/// The queued file of span `token`: the front, whose bytes come, or an
/// empty one at the back, ended as soon as it is handed out.
fn queued_file(queue: &mut VecDeque<Queued>, token: usize) -> &mut Queued {
    let is = |q: &Queued| matches!(q, Queued::File { token: t, .. } if *t == token);
    let at = match queue.front() {
        Some(front) if is(front) => 0,
        _ => queue.iter().rposition(is).expect("a span the walk delivers was handed out and is queued"),
    };
    &mut queue[at]
}

/// Copies a hard link's content (its logical bytes, holes as zeros) from
/// `reader` into the stream, and checks it was `size` bytes. Not counted
/// on the progress bar, whose total is the selected files' bytes.
fn copy_file<W: Write>(mut reader: impl io::Read, out: &mut Stream<W>, path: &[u8], size: u64) -> Result<()> {
    let error = out.error();
    let out = out.content();
    let mut buf = vec![0u8; 256 << 10];
    let mut copied = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::from_reader(Error::READING_CONTENT)(e)),
        };
        if let Err(e) = out.write_all(&buf[..n]) {
            return Err(error(e));
        }
        copied += n as u64;
    }
    if copied != size {
        return Err(Error::ChecksumMismatch { path: path.into() });
    }
    Ok(())
}

impl<W: Write, S: ReadAt> ContentVisitor for StreamWriter<'_, '_, W, S> {
    fn next_span(&mut self) -> Result<Option<SpanRequest>> {
        let tar = matches!(self.out, Stream::Tar(_));
        self.paused = self.queued_others >= MAX_QUEUED;
        if self.paused {
            return Ok(None);
        }
        while let Some(entry) = self.selected.next() {
            let entry = entry?;
            let queued = match &entry.kind {
                // Contents alone: only files' and hard links' content.
                EntryKind::Dir | EntryKind::Symlink { .. } if !tar => continue,
                EntryKind::Dir => Queued::Header { entry, kind: tar::EntryType::Directory, link: None },
                EntryKind::Symlink { target } => {
                    let link = Some(target.clone());
                    Queued::Header { entry, kind: tar::EntryType::Symlink, link }
                }
                EntryKind::Hardlink { target, size, .. } => match self.written.first(target) {
                    Some(first) if tar => {
                        let link = Some(first.to_vec());
                        Queued::Header { entry, kind: tar::EntryType::Link, link }
                    }
                    _ => {
                        if tar {
                            self.written.written(target.clone(), entry.path.clone());
                        }
                        let size = *size;
                        Queued::Copy { entry, size }
                    }
                },
                EntryKind::File { size, .. } => {
                    self.written.written(entry.path.clone(), entry.path.clone());
                    let (Some(extent), size) = (entry.extent, *size) else {
                        return Err(Error::NotAFile { path: entry.path.as_slice().into() });
                    };
                    let token = self.next_token;
                    self.next_token += 1;
                    let hasher = ContentHasher::for_entry(&entry);
                    let expander = Expander::new(entry.sparse_map());
                    let file = Queued::File { token, entry, size, expander, started: false, ended: false };
                    self.queue.push_back(file);
                    // Its header goes out now if nothing waits before it.
                    self.write_ready()?;
                    return Ok(Some((token, Span::of(&extent), hasher)));
                }
            };
            self.queue.push_back(queued);
            self.queued_others += 1;
            self.most_queued = self.most_queued.max(self.queued_others);
            // Written now when no file's content is waiting before it.
            self.write_ready()?;
            if self.queued_others >= MAX_QUEUED {
                self.paused = true;
                return Ok(None);
            }
        }
        Ok(None)
    }

    fn bytes(&mut self, token: usize, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            // An empty span's one call: its header goes out in its turn.
            return Ok(());
        }
        let Queued::File { expander, started, .. } = queued_file(&mut self.queue, token) else {
            unreachable!("spans are files")
        };
        // Spans' bytes come in the order they were handed out, each after
        // every entry before it was written: this file is the queue's
        // front, its header out.
        debug_assert!(*started, "bytes of a file whose header is not out");
        let (error, progress) = (self.out.error(), self.progress);
        let out = self.out.content();
        expander.feed(bytes, &mut |piece| write_piece(out, piece, progress)).map_err(error)
    }

    fn end(&mut self, token: usize, digest: [u8; DIGEST_LEN]) -> Result<()> {
        let Queued::File { entry, ended, .. } = queued_file(&mut self.queue, token) else {
            unreachable!("spans are files")
        };
        if entry.content().map(|(_, sha256)| *sha256) != Some(digest) {
            return Err(Error::ChecksumMismatch { path: entry.path.as_slice().into() });
        }
        *ended = true;
        self.write_ready()
    }

    fn damaged(&mut self, _token: usize, _error: &Error) -> bool {
        // The stream cannot skip a file whose header may be out: stop.
        false
    }

    /// The stream's writes are work of their own: a spare opener helps
    /// when they go to a file or a pipe (docs/BENCHMARKS.md, "export on
    /// the content walk").
    fn writes_bytes_out(&self) -> bool {
        true
    }

    fn paused(&self) -> bool {
        self.paused
    }
}
