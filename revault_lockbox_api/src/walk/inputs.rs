//! A walk's inputs: paths given relative to a base directory, named as
//! tar names them, put in the index order, and walked one after the other.

use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::tree::{Walk, WalkFilter};
use super::CreateReport;
use crate::error::{Error, Result};
use crate::format::path_cmp;
use crate::session::{ArchiveWriter, Selection};

/// Refuses an empty input list and a base that is not a directory.
pub(crate) fn check_inputs(base_dir: &Path, inputs: &[PathBuf]) -> Result<()> {
    if inputs.is_empty() {
        return Err(Error::NoInputs);
    }
    let meta = fs::metadata(base_dir).map_err(Error::io("opening directory", base_dir))?;
    if !meta.is_dir() {
        return Err(Error::BadInput { path: base_dir.to_path_buf(), reason: "not a directory" });
    }
    Ok(())
}

/// How a walk treats what it meets: [`CreateOptions::dereference`],
/// [`CreateOptions::strict`], [`CreateOptions::selection`].
#[derive(Clone, Copy)]
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
                return Err(Error::ParentInInput { path: input.to_path_buf() });
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
