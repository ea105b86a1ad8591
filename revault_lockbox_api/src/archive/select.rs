//! Subtree selection on read: which entries fall under the paths a caller
//! asked for, and which asked-for path matched nothing. The one owner of
//! that rule for every reader of a selection (extraction, tar export, the
//! CLI's listing filters), so that `a/` and `./a` select what `a` does
//! everywhere.

use super::Archive;
use crate::error::Result;
use crate::format::{is_within, path_cmp, Entry};
use crate::storage::ReadAt;

/// The subtrees asked for, as the archive spells paths (no leading `./`,
/// no trailing `/`), in index order, none inside another. None asked for
/// means every entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subtrees {
    roots: Vec<Vec<u8>>,
}

impl Subtrees {
    /// The subtrees at `requested` (each spelled as [`Subtrees::spelling`]
    /// gives it); a path inside another requested one adds nothing.
    pub fn new(requested: &[Vec<u8>]) -> Subtrees {
        let mut roots: Vec<Vec<u8>> = requested.iter().map(|p| Subtrees::spelling(p).to_vec()).collect();
        roots.sort_by(|a, b| path_cmp(a, b));
        let mut kept: Vec<Vec<u8>> = Vec::new();
        for r in roots {
            if !kept.last().is_some_and(|k| is_within(k, &r)) {
                kept.push(r);
            }
        }
        Subtrees { roots: kept }
    }

    /// A requested path as stored paths spell it: without leading `./` and
    /// trailing `/` (a lone `/` stays, and matches nothing).
    pub fn spelling(mut path: &[u8]) -> &[u8] {
        while path.len() > 1 && path.ends_with(b"/") {
            path = &path[..path.len() - 1];
        }
        while let Some(rest) = path.strip_prefix(b"./") {
            path = rest;
        }
        path
    }

    /// Whether every entry is selected (nothing was asked for).
    pub fn is_everything(&self) -> bool {
        self.roots.is_empty()
    }

    /// The subtrees' roots, in index order.
    pub fn roots(&self) -> &[Vec<u8>] {
        &self.roots
    }

    /// Whether the entry at `path` falls under one of the subtrees.
    pub fn contains(&self, path: &[u8]) -> bool {
        self.is_everything() || self.roots.iter().any(|r| is_within(r, path))
    }

    /// The first subtree root under which `archive` holds no entry at all
    /// (neither the path itself nor anything below it), if any.
    pub fn first_missing<S: ReadAt>(&self, archive: &Archive<S>) -> Result<Option<&[u8]>> {
        for root in &self.roots {
            let first = archive.entries_from(root)?.next().transpose()?;
            if !first.is_some_and(|e| is_within(root, &e.path)) {
                return Ok(Some(root));
            }
        }
        Ok(None)
    }

    /// The selected entries of `archive` in index order: every entry, or
    /// each subtree read from its lookup on (only the index nodes on the
    /// way to it and under it).
    pub fn entries<'a, S: ReadAt>(
        &'a self,
        archive: &'a Archive<S>,
    ) -> Result<Box<dyn Iterator<Item = Result<Entry>> + 'a>> {
        if self.is_everything() {
            return Ok(Box::new(archive.entries()?));
        }
        Ok(Box::new(self.roots.iter().flat_map(
            move |root| -> Box<dyn Iterator<Item = Result<Entry>> + 'a> {
                match archive.entries_from(root) {
                    Ok(entries) => Box::new(
                        entries.take_while(move |e| e.as_ref().map_or(true, |e| is_within(root, &e.path))),
                    ),
                    Err(e) => Box::new(std::iter::once(Err(e))),
                }
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_paths_are_spelled_as_stored_and_nested_ones_dropped() {
        assert_eq!(Subtrees::spelling(b"./a/b/"), b"a/b");
        assert_eq!(Subtrees::spelling(b"a//"), b"a");
        assert_eq!(Subtrees::spelling(b"/"), b"/");
        assert_eq!(Subtrees::spelling(b"a\xff"), b"a\xff");
        let s = Subtrees::new(&[b"b/".to_vec(), b"a/x".to_vec(), b"./a".to_vec(), b"a.txt".to_vec()]);
        assert_eq!(s.roots(), [b"a".to_vec(), b"a.txt".to_vec(), b"b".to_vec()]);
        assert!(s.contains(b"a/x/y") && s.contains(b"b") && !s.contains(b"ab") && !s.contains(b"c"));
        assert!(Subtrees::new(&[]).contains(b"anything"));
    }
}
