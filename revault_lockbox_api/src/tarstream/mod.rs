//! Tar streams in and out, so that lockbox can sit in a pipeline with tar,
//! `docker save`, `pg_dump` or a tar-based backup: an archive made from a
//! tar or pax stream ([`write_archive`]; `file/create.rs` puts
//! one in a file), and an archive's entries written as a pax stream
//! ([`export`]).
//!
//! What a tar entry holds and an archive entry cannot (owner names, atime
//! and ctime, xattrs, ACLs, device nodes, FIFOs) is dropped; device nodes
//! and FIFOs with a warning in the report.

mod export;
mod import;
mod spool;

use std::io::{Read, Write};

pub use export::{export, write_contents, ExportReport};
pub(crate) use import::tar_into;

use crate::error::Result;
use crate::keys::KeySet;
use crate::session::CreateOptions;
use crate::walk::CreateReport;

/// Streams an archive of the tar stream `input` to `out`; see
/// [`tar::create_archive`](crate::tar::create_archive). Nothing is written
/// to `out` before the whole stream has been read and checked.
pub fn write_archive<W: Write>(
    out: W,
    mut input: impl Read,
    keys: impl Into<KeySet>,
    options: CreateOptions,
) -> Result<(W, CreateReport)> {
    import::tar_into(&mut input, out, &keys.into(), options)
}
