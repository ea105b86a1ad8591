//! Which paths a create takes, as tar's `--exclude`, `--exclude-vcs`,
//! `--exclude-caches`, `--exclude-tag`, `--newer` and `--one-file-system`
//! decide: the walk asks [`Selection`] about each stored name and skips
//! what it excludes (a directory with everything below it).

use std::os::unix::ffi::OsStrExt;

use globset::{GlobSet, GlobSetBuilder};

use crate::error::{Error, Result};
use crate::format::WalkRecord;
use crate::pattern::tar_glob;

/// The names `--exclude-vcs` skips, as GNU tar lists them.
const VCS_NAMES: [&str; 21] = [
    "CVS",
    ".cvsignore",
    ".svn",
    "RCS",
    "SCCS",
    ".git",
    ".gitignore",
    ".gitattributes",
    ".gitmodules",
    ".arch-ids",
    "{arch}",
    "=RELEASE-ID",
    "=meta-update",
    "=update",
    ".bzr",
    ".bzrignore",
    ".bzrtags",
    ".hg",
    ".hgignore",
    ".hgtags",
    "_darcs",
];

/// Exclude patterns and file-system limits for a create. Default: take
/// everything.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    patterns: Vec<String>,
    globs: Option<GlobSet>,
    vcs: bool,
    one_file_system: bool,
    /// File names that mark a directory whose contents are left out.
    tags: Vec<Vec<u8>>,
    caches: bool,
    newer: Option<Newer>,
}

/// Which change times `--newer` compares with its date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewerBy {
    /// The modification time only (tar's `--newer-mtime`).
    Modification,
    /// The modification or the status-change time, whichever is later
    /// (tar's `--newer`).
    ModificationOrStatus,
}

#[derive(Debug, Clone, Copy)]
struct Newer {
    after_nanos: i128,
    by: NewerBy,
}

/// The tag of a cache directory (<https://bford.info/cachedir/>), as the
/// first bytes of its `CACHEDIR.TAG`.
pub(crate) const CACHEDIR_SIGNATURE: &[u8] = b"Signature: 8a477f597d28d172789f06886806bc55";
/// The name of a cache directory's tag file.
pub(crate) const CACHEDIR_TAG: &[u8] = b"CACHEDIR.TAG";

impl Selection {
    /// Takes everything.
    pub fn new() -> Selection {
        Selection::default()
    }

    /// Skips the entries whose stored name matches `pattern`, with tar's
    /// rules for excludes: `*`, `?` and `[...]` wildcards that also match
    /// `/`, `\` to quote the next character, and a match on the whole name
    /// or on any of its trailing parts (`*.log` and `b.log` both skip
    /// `a/b.log`); an excluded directory is skipped with its contents. A
    /// trailing `/` is ignored. [`Error::BadPattern`] for a pattern that does
    /// not parse (an unclosed `[`).
    pub fn exclude(mut self, pattern: &str) -> Result<Selection> {
        self.patterns.push(pattern.to_string());
        let mut set = GlobSetBuilder::new();
        for p in &self.patterns {
            set.add(glob(p)?);
        }
        let built =
            set.build().map_err(|e| Error::BadPattern { pattern: pattern.into(), reason: e.to_string() })?;
        self.globs = Some(built);
        Ok(self)
    }

    /// Skips version-control directories and files (`.git`, `.hg`, `CVS`,
    /// `.gitignore`, ... as GNU tar's `--exclude-vcs`). Default: off.
    pub fn exclude_vcs(mut self, on: bool) -> Selection {
        self.vcs = on;
        self
    }

    /// Does not descend into directories on another file system than the
    /// input they are under (the directory itself is stored, as tar does).
    /// Default: off.
    pub fn one_file_system(mut self, on: bool) -> Selection {
        self.one_file_system = on;
        self
    }

    /// Stores only files (and links) changed after `after_nanos`
    /// nanoseconds since the Unix epoch, by the times `by` names;
    /// directories are stored whatever their age, as tar stores them, so
    /// that the newer files keep their place. Default: every file.
    pub fn newer(mut self, after_nanos: i128, by: NewerBy) -> Selection {
        self.newer = Some(Newer { after_nanos, by });
        self
    }

    /// Leaves out the contents of cache directories, those holding a
    /// `CACHEDIR.TAG` that starts with the cache-directory signature, but
    /// keeps the directory and its tag file (tar's `--exclude-caches`).
    /// Default: off.
    pub fn exclude_caches(mut self, on: bool) -> Selection {
        self.caches = on;
        self
    }

    /// Leaves out the contents of directories holding a file named `name`,
    /// but keeps the directory and that file (tar's `--exclude-tag`, which
    /// its `--exclude-if-present` names too). Repeatable.
    pub fn exclude_if_present(mut self, name: &[u8]) -> Selection {
        self.tags.push(name.to_vec());
        self
    }

    /// Writes the rules an archive keeps into `record` (FORMAT.md §3.9b):
    /// everything but `--newer`, which names a moment, not a rule.
    pub(crate) fn record_into(&self, record: &mut WalkRecord) {
        record.exclude_vcs = self.vcs;
        record.exclude_caches = self.caches;
        record.one_file_system = self.one_file_system;
        record.excludes = self.patterns.clone();
        record.tags = self.tags.clone();
    }

    /// This selection with the rules of `record` added: its switches, and
    /// its patterns and tags not already here. A recorded pattern that no
    /// longer parses is [`Error::BadPattern`].
    pub(crate) fn with_record(mut self, record: &WalkRecord) -> Result<Selection> {
        self.vcs |= record.exclude_vcs;
        self.caches |= record.exclude_caches;
        self.one_file_system |= record.one_file_system;
        for tag in &record.tags {
            if !self.tags.contains(tag) {
                self.tags.push(tag.clone());
            }
        }
        for pattern in &record.excludes {
            if !self.patterns.contains(pattern) {
                self = self.exclude(pattern)?;
            }
        }
        Ok(self)
    }

    /// Whether a file changed at these times is stored (`--newer`).
    pub(crate) fn is_new_enough(&self, mtime_nanos: i128, ctime_nanos: i128) -> bool {
        match self.newer {
            None => true,
            Some(Newer { after_nanos, by: NewerBy::Modification }) => mtime_nanos > after_nanos,
            Some(Newer { after_nanos, by: NewerBy::ModificationOrStatus }) => {
                mtime_nanos.max(ctime_nanos) > after_nanos
            }
        }
    }

    /// Whether `name` in a directory marks it as one whose contents are
    /// left out: an `--exclude-if-present` name, or with `--exclude-caches`
    /// `CACHEDIR.TAG` (whose signature the walk then checks).
    pub(crate) fn is_tag(&self, name: &[u8]) -> bool {
        self.tags.iter().any(|t| t == name) || (self.caches && name == CACHEDIR_TAG)
    }

    /// Whether `name` marks a directory by its name alone, without the
    /// cache signature (`--exclude-if-present CACHEDIR.TAG`).
    pub(crate) fn is_tag_name_only(&self, name: &[u8]) -> bool {
        self.tags.iter().any(|t| t == name)
    }

    pub(crate) fn stays_on_one_file_system(&self) -> bool {
        self.one_file_system
    }

    /// Whether the entry stored as `name` is left out.
    pub(crate) fn excludes(&self, name: &[u8]) -> bool {
        let last = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
        if self.vcs && VCS_NAMES.iter().any(|v| v.as_bytes() == last) {
            return true;
        }
        let Some(globs) = &self.globs else { return false };
        // The whole name, then each tail after a `/` (tar's unanchored match).
        let tails = std::iter::once(name)
            .chain(name.iter().enumerate().filter(|(_, &b)| b == b'/').map(|(i, _)| &name[i + 1..]));
        tails.into_iter().any(|tail| globs.is_match(std::ffi::OsStr::from_bytes(tail)))
    }
}

/// One pattern as a glob, as tar's excludes read it ([`tar_glob`]); a
/// trailing `/` is not part of it.
fn glob(pattern: &str) -> Result<globset::Glob> {
    let trimmed = pattern.trim_end_matches('/');
    let trimmed = if trimmed.is_empty() { pattern } else { trimmed };
    tar_glob(trimmed).map_err(|e| Error::BadPattern { pattern: pattern.into(), reason: e.kind().to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn excluded(patterns: &[&str], name: &str) -> bool {
        let mut s = Selection::new();
        for p in patterns {
            s = s.exclude(p).unwrap();
        }
        s.excludes(name.as_bytes())
    }

    #[test]
    fn patterns_follow_tar_excludes() {
        assert!(excluded(&["*.log"], "a/b/c.log"));
        assert!(excluded(&["b"], "a/b"));
        assert!(!excluded(&["b"], "a/bb"));
        assert!(excluded(&["a/*"], "x/a/b/c"), "unanchored, and * crosses /");
        assert!(excluded(&["sub/"], "tree/sub"));
        assert!(excluded(&["f?.txt"], "f1.txt") && !excluded(&["f?.txt"], "f10.txt"));
        assert!(excluded(&["[ab].c"], "b.c") && !excluded(&["[ab].c"], "c.c"));
        assert!(excluded(&["\\*"], "*") && !excluded(&["\\*"], "x"));
        assert!(excluded(&["{a,b}"], "{a,b}") && !excluded(&["{a,b}"], "a"), "braces are literal");
        assert!(!excluded(&[], "anything"));
    }

    #[test]
    fn bad_patterns_and_vcs_names() {
        let err = Selection::new().exclude("[abc").unwrap_err();
        assert!(err.to_string().contains("[abc"), "{err}");
        let vcs = Selection::new().exclude_vcs(true);
        assert!(
            vcs.excludes(b"proj/.git")
                && vcs.excludes(b"a/.svn")
                && vcs.excludes(b".hgignore")
                && vcs.excludes(b"x/{arch}")
        );
        assert!(!vcs.excludes(b"proj/.github") && !vcs.excludes(b"proj/src"));
    }

    #[test]
    fn newer_compares_the_chosen_times() {
        assert!(Selection::new().is_new_enough(0, 0), "every file by default");
        let by_mtime = Selection::new().newer(100, NewerBy::Modification);
        assert!(by_mtime.is_new_enough(101, 0) && !by_mtime.is_new_enough(100, 500));
        let by_either = Selection::new().newer(100, NewerBy::ModificationOrStatus);
        assert!(by_either.is_new_enough(50, 101) && !by_either.is_new_enough(100, 100));
    }

    #[test]
    fn records_keep_every_rule_but_newer_and_add_up() {
        let s = Selection::new()
            .exclude("*.o")
            .unwrap()
            .exclude_vcs(true)
            .exclude_if_present(b".nobackup")
            .newer(5, NewerBy::Modification);
        let mut record = WalkRecord::default();
        s.record_into(&mut record);
        assert_eq!(record.excludes, ["*.o"]);
        assert!(record.exclude_vcs && !record.exclude_caches && !record.one_file_system);
        let back = Selection::new().exclude("*.tmp").unwrap().with_record(&record).unwrap();
        assert!(back.excludes(b"a/b.o") && back.excludes(b"x.tmp") && back.excludes(b"p/.git"));
        assert!(back.is_tag(b".nobackup") && back.is_new_enough(0, 0), "--newer is not recorded");
        let again = back.clone().with_record(&record).unwrap();
        assert_eq!((again.patterns.len(), again.tags.len()), (2, 1), "nothing twice");
    }

    #[test]
    fn tags_name_marked_directories() {
        let s = Selection::new().exclude_if_present(b".nobackup");
        assert!(s.is_tag(b".nobackup") && !s.is_tag(CACHEDIR_TAG));
        assert!(Selection::new().exclude_caches(true).is_tag(CACHEDIR_TAG));
    }
}
