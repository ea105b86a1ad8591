//! Which entries a command works on: for `create`, `add` and `update`,
//! the paths of `--files-from` and the library's [`Selection`] built from
//! `--exclude`, `--exclude-from`, `--exclude-vcs`, `--one-file-system`,
//! the tag files and (`create`) the filters by age; for the
//! commands that read, the library's [`Members`] built from their NAMEs
//! and [`MemberArgs`] (the library spells names as the archive does).

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use revault_lockbox_api::create::{NewerBy, Selection};
use revault_lockbox_api::read::{MatchRules, Members};
use revault_lockbox_api::Quoted;

use crate::exit::UsageError;
use crate::flags::{FilterArgs, MemberArgs, WalkArgs};
use crate::source;

/// The selection the flags ask for (`filters`: `create`'s, by age); a bad
/// pattern is a usage error.
pub fn selection(a: &WalkArgs, filters: Option<&FilterArgs>) -> Result<Selection> {
    let mut patterns = a.exclude.clone();
    for file in &a.exclude_from {
        for line in read_list(file, "--exclude-from", a.null)? {
            patterns.push(String::from_utf8(line).map_err(|e| {
                UsageError(format!(
                    "--exclude-from {}: a pattern is not UTF-8: {:?}",
                    Quoted::path(file),
                    e.as_bytes()
                ))
            })?);
        }
    }
    let mut selection = Selection::new().exclude_vcs(a.exclude_vcs).one_file_system(a.one_file_system);
    for p in &patterns {
        selection = selection.exclude(p).map_err(|e| UsageError(e.to_string()))?;
    }
    if let Some(date) = filters.and_then(|f| f.newer) {
        selection = selection.newer(date.unix_nanos(), NewerBy::ModificationOrStatus);
    }
    if let Some(date) = filters.and_then(|f| f.newer_mtime) {
        selection = selection.newer(date.unix_nanos(), NewerBy::Modification);
    }
    for tag in &a.exclude_if_present {
        selection = selection.exclude_if_present(tag.as_bytes());
    }
    Ok(selection.exclude_caches(a.exclude_caches))
}

/// How the flags match NAMEs: tar's member defaults, then the switches.
pub fn name_rules(a: &MemberArgs) -> MatchRules {
    MatchRules { wildcards: a.wildcards, anchored: !a.no_anchored }
}

/// The entries the NAMEs `names` and the exclude flags select; a bad
/// pattern is a usage error.
pub fn members(a: &MemberArgs, names: &[OsString]) -> Result<Members> {
    let mut excludes: Vec<Vec<u8>> = a.exclude.iter().map(|p| p.as_bytes().to_vec()).collect();
    for file in &a.exclude_from {
        excludes.extend(read_list(file, "--exclude-from", false)?);
    }
    let names: Vec<Vec<u8>> = names.iter().map(|n| n.as_bytes().to_vec()).collect();
    let usage = |e: revault_lockbox_api::Error| UsageError(e.to_string());
    let members = Members::names(&names, name_rules(a)).map_err(usage)?;
    Ok(members.exclude(&excludes, MatchRules::EXCLUDES).map_err(usage)?)
}

/// The PATH arguments followed by the paths of `--files-from`.
pub fn paths(a: &WalkArgs, given: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut all = given.to_vec();
    if let Some(file) = &a.files_from {
        let listed = read_list(file, "--files-from", a.null)?;
        all.extend(listed.into_iter().map(|name| PathBuf::from(OsString::from_vec(name))));
        if all.is_empty() {
            return Err(
                UsageError(format!("--files-from {}: names no path to archive", Quoted::path(file))).into()
            );
        }
    }
    Ok(all)
}

/// The non-empty entries of a list file, split on newlines (a trailing
/// `\r` dropped) or on NUL bytes.
fn read_list(file: &Path, what: &'static str, null: bool) -> Result<Vec<Vec<u8>>> {
    let mut bytes = Vec::new();
    source::open_input(file, what)?
        .read_to_end(&mut bytes)
        .with_context(|| format!("{what}: reading {}", Quoted::path(file)))?;
    let separator = if null { 0 } else { b'\n' };
    let items = bytes.split(|&b| b == separator).map(|item| {
        if !null && item.ends_with(b"\r") {
            &item[..item.len() - 1]
        } else {
            item
        }
    });
    Ok(items.filter(|item| !item.is_empty()).map(<[u8]>::to_vec).collect())
}
