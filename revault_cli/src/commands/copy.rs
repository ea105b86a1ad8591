//! `copy`: an archive on object storage (its base object and the parts its
//! appends added, docs/SCALE.md) to one local `.lbox` file, the objects'
//! bytes in order. Each object is read at the version its opening saw
//! (one that changes meanwhile fails the copy, exit 1), the header and
//! slot table are checked to be an archive's before anything is written,
//! and the file is written through the atomic write: unnamed until
//! complete, then named.

use std::io::Write;

use anyhow::{Context, Result};
use revault_lockbox_api::create::AtomicFile;
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::Quoted;

use super::Outcome;
use crate::exit::UsageError;
use crate::flags::CopyArgs;
use crate::location::{store, ArchiveLocation};

/// Bytes read and written at a time: the reader reads ahead of a
/// sequential run of these.
const COPY_CHUNK: usize = 4 << 20;

pub fn run(a: CopyArgs) -> Result<Outcome> {
    let ArchiveLocation::Object(location) = ArchiveLocation::parse(&a.archive)? else {
        return Err(UsageError(format!(
            "copy reads an archive on s3://; {} is a local file (cp copies it)",
            Quoted::path(&a.archive)
        ))
        .into());
    };
    let writing = || format!("copying {location} to {}", Quoted::path(&a.output));
    AtomicFile::refuse_existing(&a.output, a.overwrite).with_context(writing)?;
    let reading = || format!("reading {location}");
    let reader = store(&location, &a.s3)?.open().with_context(reading)?;
    // Not an archive (or one of an unknown version): refused before a
    // byte is written.
    revault_lockbox_api::slots::read(&reader).with_context(reading)?;
    let len = reader.len().with_context(reading)?;
    let mut file = AtomicFile::create(&a.output, a.overwrite).with_context(writing)?;
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(COPY_CHUNK as u64) as usize;
        reader.read_exact_at(&mut buf[..n], at).with_context(reading)?;
        file.write_all(&buf[..n]).with_context(writing)?;
        at += n as u64;
    }
    file.commit().with_context(writing)?;
    Ok(Outcome::Success)
}
