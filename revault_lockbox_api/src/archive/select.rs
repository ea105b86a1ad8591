//! Selection on read: which entries fall under the paths or patterns a
//! caller asked for ([`Members`], GNU tar's member and exclude rules, in
//! [`crate::pattern`]), and which asked-for name matched nothing. The one
//! owner of that rule for every reader of a selection (list, extraction,
//! tar export, cat, verify, rm's subtrees), so that `a/` and `./a` select
//! what `a` does everywhere. Names and anchored patterns are read from
//! their subtree's lookup on, never by a walk of the whole index.

use super::Archive;
use crate::error::{Error, Result};
use crate::format::{is_within, path_cmp, Entry};
use crate::pattern::{self, MatchRules, Pattern};
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
    pub fn spelling(path: &[u8]) -> &[u8] {
        pattern::spelling(path)
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
        self.clone().into_entries(archive)
    }

    /// [`Subtrees::entries`], owning the subtrees.
    pub(crate) fn into_entries<'a, S: ReadAt>(
        self,
        archive: &'a Archive<S>,
    ) -> Result<Box<dyn Iterator<Item = Result<Entry>> + 'a>> {
        if self.is_everything() {
            return Ok(Box::new(archive.entries()?));
        }
        Ok(Box::new(self.roots.into_iter().flat_map(
            move |root| -> Box<dyn Iterator<Item = Result<Entry>> + 'a> {
                match archive.entries_from(&root) {
                    Ok(entries) => Box::new(
                        entries.take_while(move |e| e.as_ref().map_or(true, |e| is_within(&root, &e.path))),
                    ),
                    Err(e) => Box::new(std::iter::once(Err(e))),
                }
            },
        )))
    }
}

/// The entries a reader selects: those matching one of the member names
/// or patterns (every entry when none is given), less those matching an
/// exclude. Default: every entry.
#[derive(Debug, Clone, Default)]
pub struct Members {
    names: Vec<Pattern>,
    excludes: Vec<Pattern>,
    /// Where the matches can lie; everything when a name may match anywhere.
    read: Subtrees,
}

impl Members {
    /// Every entry.
    pub fn all() -> Members {
        Members::default()
    }

    /// The stored paths `paths` and everything below them (tar's default
    /// for member names: no wildcards, anchored).
    pub fn paths(paths: &[Vec<u8>]) -> Members {
        Members::names(paths, MatchRules::MEMBERS).expect("names without wildcards always parse")
    }

    /// The entries matching one of `names` under `rules` (and everything
    /// below a matching directory); [`Error::BadPattern`] for a pattern
    /// that does not parse. No names: every entry.
    pub fn names(names: &[Vec<u8>], rules: MatchRules) -> Result<Members> {
        let names = names.iter().map(|n| Pattern::new(n, rules)).collect::<Result<Vec<_>>>()?;
        let roots: Option<Vec<Vec<u8>>> = names.iter().map(|n| n.subtree().map(<[u8]>::to_vec)).collect();
        let read = Subtrees::new(&roots.unwrap_or_default());
        Ok(Members { names, excludes: Vec::new(), read })
    }

    /// Also leaves out the entries matching one of `patterns` under `rules`
    /// (a matching directory with everything below it).
    pub fn exclude(mut self, patterns: &[Vec<u8>], rules: MatchRules) -> Result<Members> {
        for p in patterns {
            self.excludes.push(Pattern::new(p, rules)?);
        }
        Ok(self)
    }

    /// Whether a name is a pattern (has wildcards under its rules).
    pub fn has_patterns(&self) -> bool {
        self.names.iter().any(|n| !n.is_literal())
    }

    /// Whether every entry is selected.
    pub fn is_everything(&self) -> bool {
        self.names.is_empty() && self.excludes.is_empty()
    }

    /// The first literal name (anchored, no wildcards) under which
    /// `archive` holds no entry, found by lookups before anything is read;
    /// patterns are judged by [`Selected::unmatched`] once read.
    pub fn first_missing_name<S: ReadAt>(&self, archive: &Archive<S>) -> Result<Option<&[u8]>> {
        for name in self.names.iter().filter(|n| n.is_literal()) {
            let Some(root) = name.subtree() else { continue };
            let first = archive.entries_from(root)?.next().transpose()?;
            if !first.is_some_and(|e| is_within(root, &e.path)) {
                return Ok(Some(name.given()));
            }
        }
        Ok(None)
    }

    /// The selected entries of `archive` in index order, read from the
    /// subtrees the names lie in (the whole index only when one may match
    /// anywhere).
    pub fn entries<'a, S: ReadAt>(&'a self, archive: &'a Archive<S>) -> Result<Selected<'a>> {
        Ok(Selected {
            members: self,
            inner: self.read.entries(archive)?,
            hits: vec![false; self.names.len()],
        })
    }

    /// The content bytes of the selected regular files (what a progress
    /// bar of a job over them counts to): one pass over their index.
    pub(crate) fn content_bytes<S: ReadAt>(&self, archive: &Archive<S>) -> Result<u64> {
        let mut total = 0u64;
        for e in self.entries(archive)? {
            if let crate::format::EntryKind::File { size, .. } = e?.kind {
                total = total.saturating_add(size);
            }
        }
        Ok(total)
    }

    /// Whether the entry at `path` is selected (a salvage's entries are
    /// in memory, and filtered one by one).
    pub(crate) fn selects(&self, path: &[u8]) -> bool {
        self.select(path, &mut vec![false; self.names.len()])
    }

    /// Whether the entry at `path` is selected, marking the names it matches.
    fn select(&self, path: &[u8], hits: &mut [bool]) -> bool {
        let mut named = self.names.is_empty();
        for (name, hit) in self.names.iter().zip(hits.iter_mut()) {
            if name.matches(path) {
                *hit = true;
                named = true;
            }
        }
        named && !self.excludes.iter().any(|x| x.matches(path))
    }
}

/// The entries a [`Members`] selects, as they are read; afterwards, which
/// name matched none.
pub struct Selected<'a> {
    members: &'a Members,
    inner: Box<dyn Iterator<Item = Result<Entry>> + 'a>,
    hits: Vec<bool>,
}

impl Selected<'_> {
    /// The first name (as given) that no entry read so far matched: after
    /// the whole selection was read, a name matching nothing in the archive.
    pub fn unmatched(&self) -> Option<&[u8]> {
        self.members.names.iter().zip(&self.hits).find(|(_, &hit)| !hit).map(|(n, _)| n.given())
    }

    /// [`Error::NotFound`] naming the first name that matched nothing.
    pub fn all_matched(&self) -> Result<()> {
        match self.unmatched() {
            Some(name) => Err(Error::NotFound { path: name.into() }),
            None => Ok(()),
        }
    }
}

impl Iterator for Selected<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        loop {
            match self.inner.next()? {
                Ok(e) if !self.members.select(&e.path, &mut self.hits) => continue,
                other => return Some(other),
            }
        }
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
