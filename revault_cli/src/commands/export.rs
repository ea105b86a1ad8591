//! `export`: an archive's entries as a pax tar stream, to a file (written
//! under a temporary name and renamed when complete) or to stdout.
//!
//! The temporary-file write here is the CLI's own copy of the library's
//! atomic write, and unlike it does not sync the directory after the
//! rename; it goes when the library offers one for any stream.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use anyhow::{Context, Result};
use revault_lockbox_api::{Error, Quoted, WorkloadProfile};

use super::{open_archive, Outcome};
use crate::flags::ExportArgs;
use crate::select::filter_path;
use crate::source;

pub fn run(a: ExportArgs) -> Result<Outcome> {
    let to_stdout = source::is_stdout(&a.output, "a tar stream")?;
    let writing = || format!("exporting to {}", Quoted::path(&a.output));
    if !to_stdout && !a.overwrite && std::fs::symlink_metadata(&a.output).is_ok() {
        return Err(Error::AlreadyExists { path: a.output.clone() }).with_context(writing);
    }
    let (archive, name) = open_archive(&a.archive, &a.read, WorkloadProfile::ExtractMany)?;
    let only: Vec<Vec<u8>> = a.paths.into_iter().map(|p| filter_path(p.into_vec())).collect();
    let exporting = || format!("exporting {name} to {}", Quoted::path(&a.output));
    if to_stdout {
        let out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
        let (out, _) = revault_lockbox_api::tar::export(out, &archive, &only).with_context(exporting)?;
        let mut out = out.into_inner().map_err(|e| e.into_error()).with_context(exporting)?;
        out.flush().with_context(exporting)?;
        return Ok(Outcome::Success);
    }
    let tmp = temporary_beside(&a.output).with_context(writing)?;
    let out = BufWriter::with_capacity(1 << 20, tmp.as_file());
    let (out, _) = revault_lockbox_api::tar::export(out, &archive, &only).with_context(exporting)?;
    out.into_inner().map_err(|e| e.into_error()).and_then(File::sync_all).with_context(writing)?;
    let persisted = if a.overwrite { tmp.persist(&a.output) } else { tmp.persist_noclobber(&a.output) };
    persisted.map_err(|e| e.error).with_context(writing)?;
    Ok(Outcome::Success)
}

/// A temporary file in the directory of `path`, named after it.
fn temporary_beside(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".tmp").tempfile_in(dir)
}
