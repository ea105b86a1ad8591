//! `export`: an archive's entries as a pax tar stream; and their contents
//! alone, one after another (`extract -O`). Both come from one content
//! walk (`writer.rs`); `header.rs` writes the tar headers.

use std::io::{self, Write};

use crate::archive::{Archive, Members};
use crate::error::{Error, Result};
use crate::storage::ReadAt;

mod header;
#[cfg(test)]
mod tests;
mod writer;

use writer::write_stream;

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportReport {
    /// Entries written.
    pub entries: u64,
    /// Bytes of file content written.
    pub content_bytes: u64,
}

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

/// The action of a failed write of a tar stream, and of contents alone.
pub(super) const TAR: &str = "writing the tar stream";
pub(super) const CONTENTS: &str = "writing the contents";

/// The output, which a failed export closes before the tar builder's
/// drop would end the stream with end-of-archive blocks.
pub(super) struct Gate<W> {
    pub(super) inner: W,
    pub(super) open: bool,
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
pub(super) enum Stream<W: Write> {
    Tar(tar::Builder<Gate<W>>),
    Contents(Gate<W>),
}

impl<W: Write> Stream<W> {
    /// Where content bytes go.
    pub(super) fn content(&mut self) -> &mut Gate<W> {
        match self {
            Stream::Tar(tar) => tar.get_mut(),
            Stream::Contents(out) => out,
        }
    }

    /// A failed write of the stream.
    pub(super) fn error(&self) -> impl FnOnce(io::Error) -> Error {
        Error::stream(match self {
            Stream::Tar(_) => TAR,
            Stream::Contents(_) => CONTENTS,
        })
    }
}
