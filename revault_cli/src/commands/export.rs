//! `export`: an archive's entries as a pax tar stream, to a file (the
//! library's atomic write: an unnamed inode, synced, named, the directory
//! synced) or to stdout.

use std::io::{self, BufWriter, Write};

use anyhow::{Context, Result};
use revault_lockbox_api::create::AtomicFile;
use revault_lockbox_api::{Quoted, WorkloadProfile};

use super::{open_counted, Outcome, Records};
use crate::flags::ExportArgs;
use crate::progress::Opening;
use crate::{progress, select, source};

pub fn run(a: ExportArgs) -> Result<Outcome> {
    let members = select::members(&a.members, &a.paths)?;
    let to_stdout = source::is_stdout(&a.output, "a tar stream")?;
    let writing = || format!("exporting to {}", Quoted::path(&a.output));
    if !to_stdout {
        AtomicFile::refuse_existing(&a.output, a.overwrite).with_context(writing)?;
    }
    // A bar only beside a file: with `-o -`, the reader of the stream
    // (`| tar -tv`) writes to the terminal.
    let counters = progress::counters(a.quiet || to_stdout);
    let (archive, name) = open_counted(
        &a.archive,
        &a.read,
        WorkloadProfile::ExtractMany,
        a.threads.count(),
        counters.as_ref(),
        Opening::unless(a.quiet),
        Records::Repair,
    )?;
    let exporting = || format!("exporting {name} to {}", Quoted::path(&a.output));
    if to_stdout {
        let out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
        let (out, _) = revault_lockbox_api::tar::export(out, &archive, &members).with_context(exporting)?;
        let mut out = out.into_inner().map_err(|e| e.into_error()).with_context(exporting)?;
        out.flush().with_context(exporting)?;
        return Ok(Outcome::Success);
    }
    let file = AtomicFile::create(&a.output, a.overwrite).with_context(writing)?;
    let out = BufWriter::with_capacity(1 << 20, file);
    let exported =
        progress::during(counters.as_ref(), || revault_lockbox_api::tar::export(out, &archive, &members));
    let (out, _) = exported.with_context(exporting)?;
    let file = out.into_inner().map_err(|e| e.into_error()).with_context(writing)?;
    file.commit().with_context(writing)?;
    Ok(Outcome::Success)
}
