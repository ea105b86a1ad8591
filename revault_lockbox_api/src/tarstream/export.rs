//! `export`: an archive's entries as a pax tar stream; and their contents
//! alone, one after another (`extract -O`).

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::Ordering;

use super::import::PAX_XATTR;
use crate::archive::{Archive, ContentVisitor, Members, Selected, Span, SpanRequest};
use crate::error::{Error, Result};
use crate::format::{Entry, EntryKind, FirstLinks, DIGEST_LEN};
use crate::progress::Progress;
use crate::sparse::{ContentHasher, Expander, Piece};
use crate::storage::ReadAt;

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportReport {
    /// Entries written.
    pub entries: u64,
    /// Bytes of file content written.
    pub content_bytes: u64,
}

/// The longest owner or group name a ustar header holds (the field has
/// room for a NUL after it).
const USTAR_OWNER_NAME_LEN: usize = 31;

/// The largest size a ustar header holds in octal; larger ones go in a pax
/// `size` record.
const USTAR_MAX_SIZE: u64 = 0o77_777_777_777;
/// The length of a ustar name or link-name field.
const USTAR_NAME_LEN: usize = 100;

/// Writes the entries of `archive` that `members` selects as a pax tar
/// stream to `out` ([`Members::all`]: every one). A name (no wildcards)
/// that matches no entry is [`Error::NotFound`] before anything is
/// written; a pattern that matched none is that error after the last
/// entry, before the end-of-archive blocks. Names, link targets and
/// nanosecond mtimes that a ustar header cannot hold go in pax records
/// (`hdrcharset=BINARY` for names that are not UTF-8), modes and owner ids
/// in the header. A hard link whose target is not exported is written as
/// a file. Each file's content is authenticated and its SHA-256 checked as
/// it is copied; a damaged one stops the export with the error, the stream
/// then incomplete: the file's header written, its content cut short, and
/// no end-of-archive blocks.
///
/// The content comes from one walk over the data pages, opened on the
/// archive's page workers, as an extraction reads them.
pub fn export<W: Write, S: ReadAt>(
    out: W,
    archive: &Archive<S>,
    members: &Members,
) -> Result<(W, ExportReport)> {
    check_names(archive, members)?;
    let mut stream = Stream::Tar(tar::Builder::new(Gate { inner: out, open: true }));
    let written = write_stream(&mut stream, archive, members);
    let Stream::Tar(mut tar) = stream else { unreachable!("the stream stays a tar stream") };
    if written.is_err() {
        // No end-of-archive blocks after a failure: the builder writes
        // them when dropped.
        tar.get_mut().open = false;
    }
    let (report, _) = written?;
    let out = tar.into_inner().map_err(Error::stream(TAR))?;
    Ok((out.inner, report))
}

/// Writes the contents of the files and hard links of `archive` that
/// `members` selects to `out`, one after another in index order, as
/// `tar -xO` does (a sparse file's holes as zeros); `entries` in the
/// report counts them. Names, content checks and failures as for
/// [`export`]: a damaged file stops the copy with the error, after the
/// bytes before the damage.
pub fn write_contents<W: Write, S: ReadAt>(
    out: W,
    archive: &Archive<S>,
    members: &Members,
) -> Result<(W, ExportReport)> {
    check_names(archive, members)?;
    let mut stream = Stream::Contents(Gate { inner: out, open: true });
    let (report, _) = write_stream(&mut stream, archive, members)?;
    let Stream::Contents(out) = stream else { unreachable!("the stream stays contents alone") };
    Ok((out.inner, report))
}

/// [`Error::NotFound`] for a name that matches no entry, before anything
/// is written.
fn check_names<S: ReadAt>(archive: &Archive<S>, members: &Members) -> Result<()> {
    match members.first_missing_name(archive)? {
        Some(missing) => Err(Error::NotFound { path: missing.into() }),
        None => Ok(()),
    }
}

/// Entries without content of their own in the walk (directories, links,
/// hard links read on their own) queued behind a file whose pages are in
/// flight before the writer pauses the walk ([`ContentVisitor::paused`]): the walk then
/// delivers those files, the queue is written out, and a new pass goes on.
/// A bound on the memory a long run of directories or links after a file
/// would take.
const MAX_QUEUED: usize = if cfg!(test) { 16 } else { 16 << 10 };

/// The action of a failed write of a tar stream, and of contents alone.
const TAR: &str = "writing the tar stream";
const CONTENTS: &str = "writing the contents";

/// The output, which a failed export closes before the tar builder's
/// drop would end the stream with end-of-archive blocks.
struct Gate<W> {
    inner: W,
    open: bool,
}

impl<W: Write> Write for Gate<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.open {
            self.inner.write(buf)
        } else {
            Ok(buf.len())
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.open {
            self.inner.flush()
        } else {
            Ok(())
        }
    }
}

/// Where the walk's bytes go: a tar stream, headers and all, or the files'
/// contents alone.
enum Stream<W: Write> {
    Tar(tar::Builder<Gate<W>>),
    Contents(Gate<W>),
}

impl<W: Write> Stream<W> {
    /// Where content bytes go.
    fn content(&mut self) -> &mut Gate<W> {
        match self {
            Stream::Tar(tar) => tar.get_mut(),
            Stream::Contents(out) => out,
        }
    }

    /// A failed write of the stream.
    fn error(&self) -> impl FnOnce(io::Error) -> Error {
        Error::stream(match self {
            Stream::Tar(_) => TAR,
            Stream::Contents(_) => CONTENTS,
        })
    }
}

/// Writes the stream; returns its report and the most entries other than
/// files on the walk it held queued at once.
fn write_stream<W: Write, S: ReadAt>(
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
                    return Ok(Some((token, Span { start: extent.offset, size: extent.size }, hasher)));
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

/// Writes the pax records `entry` needs and its ustar header; a regular
/// file's `size` bytes of content and their padding follow.
fn write_header<W: Write>(
    tar: &mut tar::Builder<W>,
    entry: &Entry,
    kind: tar::EntryType,
    size: u64,
    link: Option<&[u8]>,
) -> Result<()> {
    let mut pax: Vec<(String, Vec<u8>)> = Vec::new();
    pax.push(("mtime".into(), pax_time(entry.meta.mtime_secs, entry.meta.mtime_nanos).into_bytes()));
    let mut binary = false;
    if entry.path.len() > USTAR_NAME_LEN {
        binary |= std::str::from_utf8(&entry.path).is_err();
        pax.push(("path".into(), entry.path.clone()));
    }
    if let Some(target) = link.filter(|t| t.len() > USTAR_NAME_LEN) {
        binary |= std::str::from_utf8(target).is_err();
        pax.push(("linkpath".into(), target.to_vec()));
    }
    if size > USTAR_MAX_SIZE {
        pax.push(("size".into(), size.to_string().into_bytes()));
    }
    // Names a ustar field cannot hold whole go in pax records as well.
    for (key, name) in [("uname", entry.meta.user.as_deref()), ("gname", entry.meta.group.as_deref())] {
        if let Some(name) = name.filter(|n| n.len() > USTAR_OWNER_NAME_LEN) {
            binary |= std::str::from_utf8(name).is_err();
            pax.push((key.into(), name.to_vec()));
        }
    }
    // GNU tar's and star's records; a name that is not UTF-8 cannot be a
    // pax key, and is left out.
    for x in &entry.meta.xattrs {
        if let Ok(name) = std::str::from_utf8(&x.name) {
            pax.push((format!("{}{name}", std::str::from_utf8(PAX_XATTR).expect("ASCII")), x.value.clone()));
        }
    }
    if binary {
        pax.insert(0, ("hdrcharset".into(), b"BINARY".to_vec()));
    }
    tar.append_pax_extensions(pax.iter().map(|(k, v)| (k.as_str(), v.as_slice())))
        .map_err(Error::stream("writing the tar stream"))?;
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_mode(entry.meta.mode);
    h.set_uid(entry.meta.uid.into());
    h.set_gid(entry.meta.gid.into());
    h.set_mtime(entry.meta.mtime_secs.max(0) as u64);
    h.set_size(size.min(USTAR_MAX_SIZE));
    let old = h.as_old_mut();
    copy_truncated(&mut old.name, &entry.path);
    if let Some(target) = link {
        copy_truncated(&mut old.linkname, target);
    }
    if let Some(ustar) = h.as_ustar_mut() {
        copy_truncated(
            &mut ustar.uname[..USTAR_OWNER_NAME_LEN],
            entry.meta.user.as_deref().unwrap_or_default(),
        );
        copy_truncated(
            &mut ustar.gname[..USTAR_OWNER_NAME_LEN],
            entry.meta.group.as_deref().unwrap_or_default(),
        );
    }
    h.set_cksum();
    tar.get_mut().write_all(h.as_bytes()).map_err(Error::stream(TAR))
}

/// A tar block: headers and content padding come in these.
const BLOCK_LEN: u64 = 512;
/// Zeros to write holes and padding from.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// Writes a piece of a file's logical content: its bytes, or a hole's
/// zeros; counted on `progress` (logical bytes, as its total counts them).
fn write_piece(out: &mut impl Write, piece: Piece<'_>, progress: Option<&Progress>) -> io::Result<()> {
    let n = match piece {
        Piece::Data(_, bytes) => {
            out.write_all(bytes)?;
            bytes.len() as u64
        }
        Piece::Zeros(n) => {
            let mut left = n;
            while left > 0 {
                let chunk = left.min(ZEROS.len() as u64) as usize;
                out.write_all(&ZEROS[..chunk])?;
                left -= chunk as u64;
            }
            n
        }
    };
    if let Some(p) = progress {
        p.bytes_in.fetch_add(n, Ordering::Relaxed);
    }
    Ok(())
}

/// Copies what fits of `bytes` into a header field (a pax record holds the
/// whole value when it does not fit).
fn copy_truncated(field: &mut [u8], bytes: &[u8]) {
    let n = field.len().min(bytes.len());
    field[..n].copy_from_slice(&bytes[..n]);
}

/// A pax time: seconds, and nanoseconds when there are any.
fn pax_time(secs: i64, nanos: u32) -> String {
    match (nanos, secs < 0) {
        (0, _) => secs.to_string(),
        (n, false) => format!("{secs}.{n:09}"),
        // -1.25 s is secs = -2, nanos = 750_000_000.
        (n, true) => format!("-{}.{:09}", -(secs + 1), 1_000_000_000 - n),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Read};

    use super::*;
    use crate::crypto::{KdfParams, Password};
    use crate::format::SparseMap;
    use crate::session::{ArchiveWriter, CreateOptions, Metadata};
    use crate::test_data::content;

    const PAGE: usize = 4096;

    fn password() -> Password {
        Password::from("export")
    }

    /// An archive (4 KiB pages) whose entries interleave, in path order,
    /// files of many pages, small and empty files, a sparse file, links
    /// and directories: each entry after a file waits for its content.
    fn archive() -> Vec<u8> {
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(PAGE).threads(2);
        let mut w = ArchiveWriter::new(Vec::new(), &password(), options).unwrap();
        let meta = Metadata::new(0o644, 0, 0, 0, 0);
        let big = content(40 * PAGE + 123, 2);
        w.add_linked_file("a-big", &meta, big.len() as u64, &big[..]).unwrap();
        w.add_file("b-empty", &meta, 0, &b""[..]).unwrap();
        w.add_dir("c-dir", &meta).unwrap();
        w.add_file("c-dir/small", &meta, 100, &content(100, 1)[..]).unwrap();
        w.add_hardlink("d-link", &meta, "a-big").unwrap();
        let size = 30 * PAGE as u64;
        let map =
            SparseMap::new(vec![(PAGE as u64, 3 * PAGE as u64), (20 * PAGE as u64, 5 * PAGE as u64)], size)
                .unwrap();
        w.add_sparse_file("e-sparse", &meta, map, size, false, &content(8 * PAGE, 3)[..]).unwrap();
        w.add_file("f-empty", &meta, 0, &b""[..]).unwrap();
        w.add_symlink("g-symlink", &meta, "a-big").unwrap();
        w.add_file("h-two-pages", &meta, 6000, &content(6000, 4)[..]).unwrap();
        w.finish().unwrap()
    }

    /// Each tar entry: its path, type, link target and content.
    fn read_tar(stream: &[u8]) -> Vec<(String, tar::EntryType, Option<String>, Vec<u8>)> {
        let mut tar = tar::Archive::new(stream);
        let mut got = Vec::new();
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let kind = entry.header().entry_type();
            let link = entry.link_name().unwrap().map(|l| l.to_string_lossy().into_owned());
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            got.push((path, kind, link, bytes));
        }
        got
    }

    #[test]
    fn every_entry_goes_out_in_order_with_its_content() {
        let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
        let (stream, report) = export(Vec::new(), &a, &Members::all()).unwrap();
        assert!(stream.ends_with(&[0; 1024]), "the end-of-archive blocks");
        let got = read_tar(&stream);
        let names: Vec<&str> = got.iter().map(|(p, ..)| p.as_str()).collect();
        let want = ["a-big", "b-empty", "c-dir", "c-dir/small", "d-link", "e-sparse", "f-empty", "g-symlink"];
        assert_eq!(names, [&want[..], &["h-two-pages"]].concat());
        for (path, kind, link, bytes) in &got {
            match kind {
                tar::EntryType::Regular => {
                    // The file read through the archive's own reader.
                    let mut want = Vec::new();
                    a.open_file(path).unwrap().read_to_end(&mut want).unwrap();
                    assert!(bytes == &want, "{path}: {} bytes, {} wanted", bytes.len(), want.len());
                }
                tar::EntryType::Link => {
                    assert_eq!((path.as_str(), link.as_deref()), ("d-link", Some("a-big")))
                }
                tar::EntryType::Symlink => assert_eq!(link.as_deref(), Some("a-big")),
                tar::EntryType::Directory => assert_eq!(path, "c-dir"),
                other => panic!("{path}: {other:?}"),
            }
        }
        let sparse = &got[5].3;
        assert_eq!(sparse.len(), 30 * PAGE, "the sparse file's holes go out as zeros");
        assert!(
            sparse[..PAGE].iter().all(|&b| b == 0)
                && sparse[PAGE..4 * PAGE] == content(8 * PAGE, 3)[..3 * PAGE]
        );
        let sizes = [40 * PAGE + 123, 0, 100, 30 * PAGE, 0, 6000];
        assert_eq!(report, ExportReport { entries: 9, content_bytes: sizes.iter().sum::<usize>() as u64 });
    }

    #[test]
    fn contents_alone_are_the_files_and_hard_links_one_after_another() {
        let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
        let (out, report) = write_contents(Vec::new(), &a, &Members::all()).unwrap();
        let mut want = Vec::new();
        for path in ["a-big", "b-empty", "c-dir/small", "d-link", "e-sparse", "f-empty", "h-two-pages"] {
            a.open_file(path).unwrap().read_to_end(&mut want).unwrap();
        }
        assert!(out == want, "{} bytes, {} wanted", out.len(), want.len());
        assert_eq!(report, ExportReport { entries: 7, content_bytes: want.len() as u64 });
    }

    #[test]
    fn a_damaged_page_stops_the_stream_before_its_file_ends() {
        let bytes = archive();
        let a = Archive::open(Cursor::new(bytes.clone()), &password()).unwrap();
        let big = a.find(b"a-big").unwrap().unwrap();
        let start = big.extent.unwrap().offset;
        // A page well inside `a-big`, whose header is then out already.
        let leaf = a.pages_leaf_at(start).unwrap();
        let (number, record, _) = crate::archive::page_in(&leaf, start + 10 * PAGE as u64).unwrap();
        let mut damaged = bytes;
        damaged[record.offset as usize + 40] ^= 0x04;
        let a = Archive::open(Cursor::new(damaged), &password()).unwrap();
        let mut stream = Vec::new();
        let err = export(&mut stream, &a, &Members::all()).unwrap_err();
        assert!(matches!(err, Error::DamagedPage { number: n } if n == number), "{err:?}");
        // `a-big`'s header and the bytes before the damage, then nothing:
        // no end-of-archive blocks, so a reader of the stream fails too.
        assert!(!stream.ends_with(&[0; 1024]), "no end-of-archive blocks");
        let mut tar = tar::Archive::new(&stream[..]);
        let mut first = tar.entries().unwrap().next().unwrap().unwrap();
        assert_eq!(first.path().unwrap().to_str(), Some("a-big"));
        let mut got = Vec::new();
        let _ = first.read_to_end(&mut got);
        assert!(got.len() < 40 * PAGE + 123, "its content is cut short: {} bytes", got.len());
        let err = write_contents(Vec::new(), &a, &Members::all()).unwrap_err();
        assert!(matches!(err, Error::DamagedPage { number: n } if n == number), "{err:?}");
    }

    #[test]
    fn a_long_run_of_entries_after_a_file_pauses_the_walk_and_keeps_its_order() {
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(PAGE).threads(2);
        let mut w = ArchiveWriter::new(Vec::new(), &password(), options).unwrap();
        let meta = Metadata::new(0o755, 0, 0, 0, 0);
        let big = content(40 * PAGE, 6);
        let mut want = vec!["a".to_string()];
        w.add_file("a", &meta, big.len() as u64, &big[..]).unwrap();
        for i in 0..10 * MAX_QUEUED {
            let name = format!("d{i:04}");
            w.add_dir(&name, &meta).unwrap();
            want.push(name);
        }
        w.add_file("z", &meta, 3 * PAGE as u64, &content(3 * PAGE, 7)[..]).unwrap();
        want.push("z".into());
        let a = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
        let mut stream = Stream::Tar(tar::Builder::new(Gate { inner: Vec::new(), open: true }));
        let (report, most_queued) = write_stream(&mut stream, &a, &Members::all()).unwrap();
        assert!(most_queued <= MAX_QUEUED, "{most_queued} directories queued at once");
        let Stream::Tar(tar) = stream else { unreachable!() };
        let got = read_tar(&tar.into_inner().unwrap().inner);
        assert_eq!(got.iter().map(|(p, ..)| p.trim_end_matches('/')).collect::<Vec<_>>(), want);
        assert!(got[0].3 == big && got.last().unwrap().3 == content(3 * PAGE, 7));
        assert_eq!(report.entries, want.len() as u64);
    }

    #[test]
    fn a_name_that_matches_nothing_writes_nothing() {
        let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
        let members = Members::paths(&[b"a-big".to_vec(), b"nope".to_vec()]);
        let mut stream = Vec::new();
        assert!(matches!(export(&mut stream, &a, &members), Err(Error::NotFound { .. })));
        assert!(matches!(write_contents(&mut stream, &a, &members), Err(Error::NotFound { .. })));
        assert!(stream.is_empty(), "{} bytes written", stream.len());
    }

    #[test]
    fn a_hard_link_alone_goes_out_as_its_targets_content() {
        let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
        let want = content(40 * PAGE + 123, 2);
        let link = Members::paths(&[b"d-link".to_vec()]);
        let (stream, _) = export(Vec::new(), &a, &link).unwrap();
        let got = read_tar(&stream);
        assert_eq!((got.len(), got[0].0.as_str(), got[0].1), (1, "d-link", tar::EntryType::Regular));
        assert!(got[0].3 == want);
        let (contents, report) = write_contents(Vec::new(), &a, &link).unwrap();
        assert!(contents == want);
        assert_eq!(report.entries, 1);
    }

    #[test]
    fn pax_times_round_trip_the_import_parser() {
        assert_eq!(pax_time(1_700_000_000, 0), "1700000000");
        assert_eq!(pax_time(1_700_000_000, 5), "1700000000.000000005");
        assert_eq!(pax_time(-2, 750_000_000), "-1.250000000");
    }
}
