//! `create`: input paths (tar semantics) put in the index order, walked
//! into an archive written under a temporary name or streamed.

use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::atomic::write_atomically;
use super::walk::{Walk, WalkFilter};
use super::warning::CreateWarning;
use super::writer::{ArchiveWriter, CreateOptions};
use super::Selection;
use crate::format::path_cmp;
use crate::{Error, KeySet, Result};

/// What a create did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateReport {
    /// Entries archived.
    pub entries: u64,
    /// Bytes of file content archived.
    pub content_bytes: u64,
    /// Archive size.
    pub archive_bytes: u64,
    /// What was skipped or stored incompletely (sockets, devices, the
    /// archive itself, files that vanished, were replaced, changed while
    /// read or could not be read). Empty with
    /// [`CreateOptions::strict`], which fails at the first instead.
    pub warnings: Vec<CreateWarning>,
}

impl CreateReport {
    /// Whether a warning means the archive misses or holds a changed copy
    /// of something asked for ([`CreateWarning::is_failure`]).
    pub fn has_failures(&self) -> bool {
        self.warnings.iter().any(CreateWarning::is_failure)
    }
}

/// Creates the archive `archive` from `inputs`, each taken relative to
/// `base_dir` and stored under the name given (a leading `/` stripped, `.`
/// components removed), recursing into directories without following
/// symbolic links, an input that is itself a symbolic link included
/// (unless [`CreateOptions::dereference`]).
///
/// Files that vanish, are swapped, change while read or cannot be read are
/// reported in [`CreateReport::warnings`]; with [`CreateOptions::strict`]
/// the first is an [`Error::Strict`] and no archive is left behind.
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

/// Refuses an empty input list and a base that is not a directory.
pub(crate) fn check_inputs(base_dir: &Path, inputs: &[PathBuf]) -> Result<()> {
    if inputs.is_empty() {
        return Err(Error::BadInput {
            path: PathBuf::new(),
            reason: "nothing to archive: no input paths given",
        });
    }
    let meta = fs::metadata(base_dir).map_err(Error::io("opening directory", base_dir))?;
    if !meta.is_dir() {
        return Err(Error::BadInput { path: base_dir.to_path_buf(), reason: "not a directory" });
    }
    Ok(())
}

/// How a walk treats what it meets: [`CreateOptions::dereference`],
/// [`CreateOptions::strict`], [`CreateOptions::selection`].
pub(crate) struct WalkRules<'a> {
    pub(crate) follow: bool,
    pub(crate) strict: bool,
    pub(crate) selection: &'a Selection,
    pub(crate) xattrs: bool,
}

/// Walks `inputs` into `writer` (a create, or an append session), leaving
/// it unfinished; `filter` decides what is stored (`update`).
pub(crate) fn walk_with<'a, W: Write>(
    writer: ArchiveWriter<W>,
    base_dir: &Path,
    inputs: &[PathBuf],
    skip: &'a [(u64, u64)],
    rules: WalkRules<'a>,
    filter: Option<&'a mut dyn WalkFilter<W>>,
) -> Result<(ArchiveWriter<W>, CreateReport)> {
    let roots = ordered_roots(base_dir, inputs, rules.follow)?;
    let mut walk = Walk::new(writer, skip, rules.follow, rules.strict, rules.selection, filter);
    walk.xattrs = rules.xattrs;
    for root in roots {
        walk.add_root(&root.full, root.shown, root.stored)?;
    }
    let Walk { writer, report, .. } = walk;
    Ok((writer, report))
}

/// One input: where it is, how warnings name it, what it is stored as.
pub(crate) struct Root {
    full: PathBuf,
    shown: PathBuf,
    pub(crate) stored: Vec<u8>,
}

/// The inputs as (file-system path, stored name), in the index order of
/// their stored names, without those that another input contains: walked
/// one after the other, they give every entry in the index order. An input
/// that does not exist is an error.
pub(crate) fn ordered_roots(base_dir: &Path, inputs: &[PathBuf], follow: bool) -> Result<Vec<Root>> {
    let mut roots = Vec::with_capacity(inputs.len());
    for input in inputs {
        let full = base_dir.join(input);
        let exists = if follow { fs::metadata(&full) } else { fs::symlink_metadata(&full) };
        exists.map_err(Error::io("reading", &full))?;
        // Named as given, relative to `base_dir` (as tar names them).
        roots.push(Root { full, shown: input.clone(), stored: stored_name(input)? });
    }
    roots.sort_by(|a, b| path_cmp(&a.stored, &b.stored));
    let mut kept: Vec<Root> = Vec::with_capacity(roots.len());
    for root in roots {
        let name = &root.stored;
        let inside = kept.last().is_some_and(|outer| {
            let outer = &outer.stored;
            outer.is_empty()
                || name == outer
                || (name.starts_with(outer) && name.get(outer.len()) == Some(&b'/'))
        });
        if !inside {
            kept.push(root);
        }
    }
    Ok(kept)
}

/// The stored name of an input: tar semantics, `..` refused.
fn stored_name(input: &Path) -> Result<Vec<u8>> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in input.components() {
        match c {
            Component::Normal(s) => parts.push(s.as_bytes()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                return Err(Error::BadInput {
                    path: input.to_path_buf(),
                    reason: "contains `..`; use -C to change directory instead",
                });
            }
        }
    }
    Ok(parts.join(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_follow_tar() {
        assert_eq!(stored_name(Path::new("/etc/hosts")).unwrap(), b"etc/hosts");
        assert_eq!(stored_name(Path::new("./a/./b/")).unwrap(), b"a/b");
        assert!(stored_name(Path::new("a/../b")).is_err());
    }

    #[test]
    fn inputs_are_merged_into_index_order() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["a", "a/x", "b"] {
            fs::create_dir(dir.path().join(d)).unwrap();
        }
        fs::write(dir.path().join("a.txt"), b"").unwrap();
        let inputs: Vec<PathBuf> = ["b", "a.txt", "./a/x", "a", "b/"].iter().map(PathBuf::from).collect();
        let names: Vec<Vec<u8>> =
            ordered_roots(dir.path(), &inputs, false).unwrap().into_iter().map(|r| r.stored).collect();
        assert_eq!(names, [b"a".to_vec(), b"a.txt".to_vec(), b"b".to_vec()]);
    }
}
