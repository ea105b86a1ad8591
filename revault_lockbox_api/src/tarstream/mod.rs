//! Tar streams in and out, so that lockbox can sit in a pipeline with tar,
//! `docker save`, `pg_dump` or a tar-based backup: an archive made from a
//! tar or pax stream ([`create_archive_from_tar`], [`write_archive_from_tar`]),
//! and an archive's entries written as a pax stream ([`export_tar`]).
//!
//! What a tar entry holds and an archive entry cannot (owner names, atime
//! and ctime, xattrs, ACLs, device nodes, FIFOs) is dropped; device nodes
//! and FIFOs with a warning in the report.

mod export;
mod import;
mod spool;

use std::io::{Read, Write};
use std::path::Path;

pub use export::{export_tar, ExportReport};

use crate::write::write_atomically;
use crate::{CreateOptions, CreateReport, KeySet, Result};

/// Creates the archive `archive` from the tar or pax stream `input`, as
/// [`create_archive`](crate::create_archive) does from a tree: under a
/// temporary name, renamed into place when complete; an existing `archive`
/// refused unless [`CreateOptions::overwrite`].
///
/// The stream is read to its end before the archive is written (entries
/// must be sorted): names and metadata are held in memory (about 150 bytes
/// plus twice the name per entry), file contents wait in an unnamed temporary
/// file in `$TMPDIR`, sealed under a key held only in memory. Names lose a
/// leading `/`; a `..` component, a hard link that is absolute, has `..` or
/// names no earlier file, a pax sparse file, and a malformed or truncated
/// stream are refused with [`Error::BadTar`](crate::Error::BadTar), and
/// then no file is left at `archive`.
pub fn create_archive_from_tar(
    archive: &Path,
    mut input: impl Read,
    keys: impl Into<KeySet>,
    options: CreateOptions,
) -> Result<CreateReport> {
    let keys = keys.into();
    write_atomically(archive, options.overwrite, |out, _| import::tar_into(&mut input, out, &keys, options))
}

/// Streams an archive of the tar stream `input` to `out`; see
/// [`create_archive_from_tar`]. Nothing is written to `out` before the
/// whole stream has been read and checked.
pub fn write_archive_from_tar<W: Write>(
    mut input: impl Read,
    out: W,
    keys: impl Into<KeySet>,
    options: CreateOptions,
) -> Result<(W, CreateReport)> {
    import::tar_into(&mut input, out, &keys.into(), options)
}
