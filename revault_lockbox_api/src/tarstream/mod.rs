//! Tar streams in and out, so that lockbox can sit in a pipeline with tar,
//! `docker save`, `pg_dump` or a tar-based backup: an archive made from a
//! tar or pax stream ([`write_archive_from_tar`]; `file/create.rs` puts
//! one in a file), and an archive's entries written as a pax stream
//! ([`export_tar`]).
//!
//! What a tar entry holds and an archive entry cannot (owner names, atime
//! and ctime, xattrs, ACLs, device nodes, FIFOs) is dropped; device nodes
//! and FIFOs with a warning in the report.

mod export;
mod import;
mod spool;

use std::io::{Read, Write};

pub use export::{export_tar, ExportReport};
pub(crate) use import::tar_into;

use crate::error::Result;
use crate::keys::KeySet;
use crate::session::CreateOptions;
use crate::walk::CreateReport;

/// Streams an archive of the tar stream `input` to `out`; see
/// [`create_archive_from_tar`](crate::create_archive_from_tar). Nothing is
/// written to `out` before the
/// whole stream has been read and checked.
pub fn write_archive_from_tar<W: Write>(
    mut input: impl Read,
    out: W,
    keys: impl Into<KeySet>,
    options: CreateOptions,
) -> Result<(W, CreateReport)> {
    import::tar_into(&mut input, out, &keys.into(), options)
}
