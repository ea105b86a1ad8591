//! One module per command: each gathers its keys and options, calls the
//! library, and hands what comes back to [`crate::output`]. A command
//! returns an [`Outcome`] or an error; [`crate::exit`] turns either into
//! the exit code. Commands do not call one another; what several need
//! (opening the archive argument) sits here.

pub mod append;
pub mod cat;
pub mod compact;
pub mod completions;
pub mod create;
pub mod export;
pub mod extract;
pub mod info;
pub mod key;
pub mod keygen;
pub mod list;
pub mod man;
pub mod mount;
pub mod passwd;
pub mod repair;
pub mod verify;

use std::path::Path;

use anyhow::{Context, Result};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::{Archive, OpenOptions, Quoted, WorkloadProfile};

pub use crate::exit::Outcome;
use crate::flags::{ObjectStoreArgs, ReadArgs};
use crate::location::ArchiveLocation;
use crate::{keys, source};

/// The bytes of the archive argument (a file, `-` or `s3://BUCKET/KEY`)
/// for positioned reads, and how messages name it.
fn archive_bytes(arg: &Path, s3: &ObjectStoreArgs) -> Result<(Box<dyn ReadAt>, String)> {
    Ok(match ArchiveLocation::parse(arg)? {
        location @ ArchiveLocation::Object(_) => (location.open_reader(s3)?, Quoted::path(arg).to_string()),
        ArchiveLocation::Local(_) => {
            let input = source::open(arg)?;
            (Box::new(input.file), input.name)
        }
    })
}

/// Opens the archive argument with the key `read` gives; returns it and
/// how messages name it.
fn open_archive(
    arg: &Path,
    read: &ReadArgs,
    profile: WorkloadProfile,
) -> Result<(Archive<Box<dyn ReadAt>>, String)> {
    let (src, name) = archive_bytes(arg, &read.s3)?;
    let options = OpenOptions::new().profile(profile);
    // A spooled copy may be deleted now: the open file keeps its bytes.
    let archive = keys::with_key(&read.unlock, |key| Archive::open_with(src, key, options))
        .with_context(|| format!("opening {name}"))?;
    Ok((archive, name))
}

/// The archive of a command that rewrites it in place: a local file only.
fn in_place(archive: &Path, command: &str) -> Result<()> {
    ArchiveLocation::local_only(archive, command).map(drop)
}
