//! `cat`: one stored file's content on stdout, checked against its SHA-256
//! as it is read.

use std::os::unix::ffi::OsStringExt;

use anyhow::{Context, Result};
use revault_lockbox_api::{Quoted, WorkloadProfile};

use super::{open_archive, Outcome};
use crate::flags::CatArgs;
use crate::output;

pub fn run(a: CatArgs) -> Result<Outcome> {
    let (archive, name) = open_archive(&a.archive, &a.read, WorkloadProfile::RandomRead)?;
    let path = a.path.into_vec();
    let what = || format!("reading {} from {}", Quoted::bytes(&path), name);
    let mut reader = archive.open_file(&path).with_context(what)?;
    output::copy(&mut reader, what)?;
    Ok(Outcome::Success)
}
