//! `cat`: stored files' contents on stdout, each checked against its
//! SHA-256: a file shorter than [`CHECKED_BELOW`] bytes before any of it
//! is written, a longer one as it streams.

use std::io::Read;

use anyhow::{Context, Result};
use revault_lockbox_api::{Quoted, WorkloadProfile};

use super::{open_archive, Outcome, Records};
use crate::flags::CatArgs;
use crate::{output, select};

pub fn run(a: CatArgs) -> Result<Outcome> {
    // Each NAME on its own, so that files come out in the order given.
    let each = a.paths.iter().map(|p| select::members(&a.members, std::slice::from_ref(p)));
    let each = each.collect::<Result<Vec<_>>>()?;
    let (archive, name) =
        open_archive(&a.archive, &a.read, WorkloadProfile::RandomRead, a.threads.count(), Records::Repair)?;
    for (path, members) in a.paths.iter().zip(&each) {
        let path = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
        let excludes = !a.members.exclude.is_empty() || !a.members.exclude_from.is_empty();
        if members.has_patterns() || excludes {
            super::write_contents(&archive, &name, members)?;
            continue;
        }
        // A plain name must be a file: one lookup, only its pages read.
        let what = || format!("reading {} from {}", Quoted::bytes(path), name);
        let mut reader = archive.open_file(path).with_context(what)?;
        if reader.len() < CHECKED_BELOW {
            // The reader checks the SHA-256 at the end: read it all first,
            // so that damage writes nothing.
            let mut whole = Vec::with_capacity(reader.len() as usize);
            reader.read_to_end(&mut whole).with_context(what)?;
            output::copy(&mut whole.as_slice(), what)?;
        } else {
            output::copy(&mut reader, what)?;
        }
    }
    Ok(Outcome::Success)
}

/// A file shorter than this is held in memory and checked before it is
/// written: every file a writer may store as a small file (under half a
/// page, and a page is at most 16 MiB), at a bounded cost in memory. A
/// longer file streams, as `age -d` and `gpg` do: the bytes before damage
/// are written, then the command fails with exit code 3.
const CHECKED_BELOW: u64 = 8 << 20;
