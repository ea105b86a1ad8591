//! `create`: a new archive from a tree or a tar stream, written under a
//! temporary name and renamed into place, or streamed.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::atomic::write_atomically;
use crate::error::{Error, Result};
use crate::keys::KeySet;
use crate::session::{ArchiveWriter, CreateOptions};
use crate::tarstream::tar_into;
use crate::walk::{check_inputs, walk_with, CreateReport, WalkRules};

/// Creates the archive `archive` from `inputs`, each taken relative to
/// `base_dir` and stored under the name given (a leading `/` stripped, `.`
/// components removed), recursing into directories without following
/// symbolic links, an input that is itself a symbolic link included
/// (unless [`CreateOptions::dereference`]).
///
/// Files that vanish, are swapped, change while read or cannot be read are
/// reported in [`CreateReport::warnings`]; with [`CreateOptions::strict`]
/// the first is an [`Error::Strict`](crate::error::Error::Strict) and no
/// archive is left behind.
///
/// The archive is written under a temporary name beside `archive`, synced,
/// and renamed into place: an interrupted create leaves no file at `archive`
/// and an existing one untouched until the new one is complete.
pub fn create_archive(
    archive: &Path,
    base_dir: &Path,
    inputs: &[PathBuf],
    keys: impl Into<KeySet>,
    options: CreateOptions,
) -> Result<CreateReport> {
    let keys = keys.into();
    write_atomically(archive, options.overwrite, |out, skip| {
        let options = options.read_back(out.reader().map_err(Error::io("opening", archive))?);
        walk_into(out, base_dir, inputs, &keys, options, skip, ArchiveWriter::with_late_slots)
    })
}

/// Streams an archive of `inputs` to `out` (a pipe, stdout, a socket): the
/// same walk as [`create_archive`] without the temporary file.
pub fn write_archive<W: Write>(
    out: W,
    base_dir: &Path,
    inputs: &[PathBuf],
    keys: impl Into<KeySet>,
    options: CreateOptions,
) -> Result<(W, CreateReport)> {
    walk_into(out, base_dir, inputs, &keys.into(), options, &[], ArchiveWriter::with_keys)
}

fn walk_into<W: Write>(
    out: W,
    base_dir: &Path,
    inputs: &[PathBuf],
    keys: &KeySet,
    options: CreateOptions,
    skip: &[(u64, u64)],
    start: fn(W, &KeySet, CreateOptions) -> Result<ArchiveWriter<W>>,
) -> Result<(W, CreateReport)> {
    check_inputs(base_dir, inputs)?;
    let mut skip = skip.to_vec();
    skip.extend_from_slice(&options.skip_files);
    let (follow, strict, xattrs) = (options.dereference, options.strict, options.xattrs);
    let selection = options.selection.clone();
    let writer = start(out, keys, options)?;
    let rules = WalkRules { follow, strict, selection: &selection, xattrs };
    let (writer, mut report) = walk_with(writer, base_dir, inputs, &skip, rules, None)?;
    let (out, archive_bytes) = writer.finish_counted()?;
    report.archive_bytes = archive_bytes;
    Ok((out, report))
}

/// Creates the archive `archive` from the tar or pax stream `input`, as
/// [`create_archive`] does from a tree: under a
/// temporary name, renamed into place when complete; an existing `archive`
/// refused unless [`CreateOptions::overwrite`].
///
/// The stream is read to its end before the archive is written (entries
/// must be sorted): names and metadata are held in memory (about 150 bytes
/// plus twice the name per entry), file contents wait in an unnamed temporary
/// file in `$TMPDIR`, sealed under a key held only in memory. Names lose a
/// leading `/`; a `..` component, a hard link that is absolute, has `..` or
/// names no earlier file, a pax sparse file, and a malformed or truncated
/// stream are refused with [`Error::BadTar`](crate::error::Error::BadTar), and
/// then no file is left at `archive`.
pub fn create_archive_from_tar(
    archive: &Path,
    mut input: impl Read,
    keys: impl Into<KeySet>,
    options: CreateOptions,
) -> Result<CreateReport> {
    let keys = keys.into();
    write_atomically(archive, options.overwrite, |out, _| {
        let options = options.read_back(out.reader().map_err(Error::io("opening", archive))?);
        tar_into(&mut input, out, &keys, options)
    })
}
