//! Safe extraction.
//!
//! # Security
//! - Every entry is checked before anything is written, in a first pass
//!   over the index: its path (no absolute path, `..`, `.` or empty
//!   component), no entry below a symbolic link or file of the archive,
//!   hard links naming an earlier file, and no existing target unless
//!   overwriting was asked for ([`ExistingFiles`]). `--strip-components`
//!   only shortens checked names, so what it gives is as safe.
//! - The destination is opened once and everything below it is reached
//!   through directory descriptors (`openat` with `O_NOFOLLOW`), never by
//!   path: a symbolic link in the destination, whether there before or
//!   swapped in while extraction runs, is refused, never followed.
//!   Symbolic links from the archive are created last.
//! - Files are written to an unnamed inode (`O_TMPFILE`, else a temporary
//!   name) in their directory, checked against their SHA-256, synced (in
//!   batches, with `syncfs`) and only then linked to their name: no byte
//!   that failed authentication sits under a final name, and a crash
//!   leaves no partial file under one.
//! - An extraction that fails removes the directories it created that are
//!   still empty; the files it placed stay.
//! - Owners are restored as tar does: by default only when running as
//!   root ([`ExtractOptions::same_owner`]), by name (mapped to local ids,
//!   else the stored ids) or by id ([`ExtractOptions::numeric_owner`]);
//!   `fchown` comes before the mode is set, since it clears setuid and
//!   setgid bits. An archive is trusted with ownership as far as its
//!   key is: whoever can write it can make files root's. Extended
//!   attributes are restored only when asked
//!   ([`ExtractOptions::xattrs`]); one the target refuses is a warning
//!   in [`ExtractReport::warnings`]. Permission bits follow tar: the umask
//!   applies and setuid, setgid and sticky bits are dropped, unless
//!   [`ExtractOptions::same_permissions`] asks for the stored modes
//!   exactly. Mtimes are restored; modes and times are set on descriptors,
//!   directories' at the end.

mod cleanup;
mod dirs;
mod extraction;
mod implicit;
mod owner;
mod place;
mod policy;
mod strip;

use std::path::Path;
use std::sync::Arc;

use crate::archive::Damage;
use crate::archive::{Archive, Members, Salvage};
use crate::entry_log::{EntryLog, Log};
use crate::error::{EntryPath, Error, Result};
use crate::progress::Progress;
use crate::storage::ReadAt;
use extraction::Extraction;
use implicit::ImplicitDirs;

/// How to extract. Every setter's doc states its default.
#[derive(Debug, Clone)]
pub struct ExtractOptions {
    existing: ExistingFiles,
    strip_components: usize,
    sync: bool,
    keep_going: bool,
    same_permissions: bool,
    same_owner: Option<bool>,
    numeric_owner: bool,
    xattrs: bool,
    members: Members,
    progress: Option<Arc<Progress>>,
    log: Option<Log>,
    dry_run: bool,
    implicit_dirs: Option<u64>,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions {
            existing: ExistingFiles::Refuse,
            strip_components: 0,
            sync: true,
            keep_going: false,
            same_permissions: false,
            same_owner: None,
            numeric_owner: false,
            xattrs: false,
            members: Members::all(),
            progress: None,
            log: None,
            dry_run: false,
            implicit_dirs: None,
        }
    }
}

impl ExtractOptions {
    /// Defaults: no overwriting, files synced, stop at the first damaged
    /// page, the umask applied to modes, everything extracted.
    pub fn new() -> ExtractOptions {
        ExtractOptions::default()
    }

    /// Replace existing files and links (never a directory with a file):
    /// [`ExistingFiles::Replace`] when `yes`, else [`ExistingFiles::Refuse`].
    /// Default: off; an existing path is an error and nothing is written.
    pub fn overwrite(self, yes: bool) -> Self {
        self.existing(if yes { ExistingFiles::Replace } else { ExistingFiles::Refuse })
    }

    /// What to do where a file, link or other non-directory entry would
    /// land on something that exists. Default: [`ExistingFiles::Refuse`].
    pub fn existing(mut self, policy: ExistingFiles) -> Self {
        self.existing = policy;
        self
    }

    /// Drop this many leading components from each stored name (and from
    /// each hard link's target) before extracting, as tar's
    /// `--strip-components`; an entry with no component left is not
    /// extracted. NAMEs still match the stored names. Default: 0.
    pub fn strip_components(mut self, n: usize) -> Self {
        self.strip_components = n;
        self
    }

    /// Whether existing targets may be replaced (those the policy keeps are
    /// left out before writing).
    pub(crate) fn replaces(&self) -> bool {
        matches!(self.existing, ExistingFiles::Replace | ExistingFiles::KeepNewer)
    }

    /// Sync files to disk before renaming them into place, so that a crash
    /// never leaves an empty or partial file under its final name. Files
    /// are synced in batches, one `syncfs` per batch. Default: on.
    pub fn sync(mut self, yes: bool) -> Self {
        self.sync = yes;
        self
    }

    /// Restore every intact file when some pages are damaged, and report the
    /// damaged ones in [`ExtractReport::damaged`]. Default: off (stop at the
    /// first failure).
    pub fn keep_going(mut self, yes: bool) -> Self {
        self.keep_going = yes;
        self
    }

    /// Restore permission bits exactly as stored, setuid, setgid and sticky
    /// bits included, without the umask (`tar -p`). Default: off; the
    /// process umask applies and those three bits are dropped, so that an
    /// archive cannot plant a setuid program (extracting as root would make
    /// it setuid-root).
    pub fn same_permissions(mut self, yes: bool) -> Self {
        self.same_permissions = yes;
        self
    }

    /// Restore owners (tar's `--same-owner`; `false` is
    /// `--no-same-owner`): each entry gets the local ids of its stored user
    /// and group names, or its stored ids where a name is absent or unknown
    /// here. Needs the privilege to `chown` (an error otherwise). Default:
    /// on when the process runs as root (effective uid 0), off otherwise.
    pub fn same_owner(mut self, yes: bool) -> Self {
        self.same_owner = Some(yes);
        self
    }

    /// When restoring owners, use the stored ids and ignore the names
    /// (`--numeric-owner`). Default: off.
    pub fn numeric_owner(mut self, yes: bool) -> Self {
        self.numeric_owner = yes;
        self
    }

    /// Restore extended attributes (POSIX ACLs included); one the target
    /// refuses (`trusted.*` without privilege, `security.selinux`, a file
    /// system without them) is a warning in [`ExtractReport::warnings`],
    /// not a failure. Default: off.
    pub fn xattrs(mut self, yes: bool) -> Self {
        self.xattrs = yes;
        self
    }

    /// Whether owners are restored: as set, else as root only.
    pub(crate) fn restores_owners(&self) -> bool {
        self.same_owner.unwrap_or_else(|| rustix::process::geteuid().is_root())
    }

    /// Extract only these stored paths, and everything below those that are
    /// directories. Each must match an entry. Default: everything.
    pub fn only(self, paths: Vec<Vec<u8>>) -> Self {
        self.members(Members::paths(&paths))
    }

    /// Extract only the entries `members` selects (names or patterns, and
    /// excludes); each name must match an entry, else [`Error::NotFound`]
    /// naming it before anything is written. Default: everything.
    pub fn members(mut self, members: Members) -> Self {
        self.members = members;
        self
    }

    /// Directories the archive does not list that extraction may make
    /// (the parents of a path stored without them). Default: 4096, or one
    /// per 64 bytes of the archive when that is more, so that a small
    /// hostile archive of deep paths cannot make hundreds of thousands.
    /// Past it, [`Error::TooManyImplicitDirs`] before anything is written.
    pub fn implicit_dirs(mut self, limit: u64) -> Self {
        self.implicit_dirs = Some(limit);
        self
    }

    /// Told of each entry as its restoring begins, in index order (tar's
    /// `-v`). Default: none.
    pub fn log(mut self, log: Arc<dyn EntryLog>) -> Self {
        self.log = Some(Log(log));
        self
    }

    /// Run every check of the first pass (names found, entries valid,
    /// existing targets), tell the log of each entry that would be
    /// restored and count it in the report, but create nothing. Default:
    /// off.
    pub fn dry_run(mut self, yes: bool) -> Self {
        self.dry_run = yes;
        self
    }

    /// Counters updated as files are written. Default: none.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }
}

impl<S: ReadAt> Salvage<S> {
    /// Restores what the salvage scan proved under `dest`, which must
    /// exist, with the same rules as [`Archive::extract`]: every entry
    /// checked before anything is written, each file's SHA-256 checked
    /// before it gets its name. Entries that were lost, and files whose
    /// content fails, are in [`ExtractReport::damaged`]; everything else
    /// that could not be proven in [`ExtractReport::lost`]. `options`'
    /// member selection picks among the proven entries; `keep_going` is
    /// implied.
    pub fn extract(&self, dest: &Path, options: &ExtractOptions) -> Result<ExtractReport> {
        let options = options.clone().keep_going(true);
        let strip = options.strip_components;
        let selected = || {
            let proven = self.entries().iter().filter(|e| options.members.selects(&e.path)).cloned().map(Ok);
            strip::entries(proven, strip)
        };
        let x = Extraction::new(dest, &options, self.tuning().threads)?;
        let mut report = x.run(
            self,
            |x| {
                let limit =
                    options.implicit_dirs.unwrap_or_else(|| implicit::default_limit(self.stored_len()));
                let mut implicit = ImplicitDirs::new(limit);
                x.check_targets(selected().map(|e| e.and_then(|e| implicit.entry(&e).map(|()| e))))
            },
            || Ok(selected()),
        )?;
        report.damaged.extend(self.lost_entries().into_iter().filter(|d| options.members.selects(&d.path.0)));
        report.lost = self.lost().to_vec();
        Ok(report)
    }
}

/// What extraction does where an entry other than a directory would land
/// on an existing path. A directory entry always merges with an existing
/// directory, and a symbolic link where a directory goes is always refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExistingFiles {
    /// [`Error::AlreadyExists`] before anything is written (tar's
    /// `--keep-old-files`).
    Refuse,
    /// Replace files and links; a directory in the way is still an error.
    Replace,
    /// Leave whatever exists alone and extract the rest, counted in
    /// [`ExtractReport::skipped`] (tar's `--skip-old-files`).
    Skip,
    /// Replace only files and links older than the archive's entry; keep
    /// one as new or newer, with a warning in [`ExtractReport::warnings`]
    /// (tar's `--keep-newer-files`).
    KeepNewer,
}

/// What an extraction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractReport {
    /// Entries restored.
    pub entries: u64,
    /// Bytes of file content written.
    pub bytes: u64,
    /// With `keep_going`: entries not restored, with the reason.
    pub damaged: Vec<Damage>,
    /// From a salvage ([`Salvage::extract`]): what could not be proven,
    /// one line each (FORMAT.md §6.6).
    pub lost: Vec<String>,
    /// Entries restored without some of their metadata (an extended
    /// attribute the target refused), or kept because the existing file is
    /// newer ([`ExistingFiles::KeepNewer`]), with the reason.
    pub warnings: Vec<Damage>,
    /// Entries left out because something existed where they go
    /// ([`ExistingFiles::Skip`], [`ExistingFiles::KeepNewer`]).
    pub skipped: u64,
}

impl<S: ReadAt> Archive<S> {
    /// Restores the archive's entries under `dest`, which must exist.
    /// See the module's security rules.
    pub fn extract(&self, dest: &Path, options: &ExtractOptions) -> Result<ExtractReport> {
        let x = Extraction::new(dest, options, self.tuning().threads)?;
        let (members, strip) = (&options.members, options.strip_components);
        x.run(
            self,
            |x| self.check_before_writing(x, members, options),
            || Ok(strip::entries(members.entries(self)?, strip)),
        )
    }

    /// The first pass: every named path found, then every selected entry
    /// checked (by the index walk) and no existing target unless
    /// overwriting, and every pattern seen to match.
    fn check_before_writing(
        &self,
        x: &mut Extraction<'_>,
        members: &Members,
        options: &ExtractOptions,
    ) -> Result<()> {
        if let Some(missing) = members.first_missing_name(self)? {
            return Err(Error::NotFound { path: EntryPath(missing.to_vec()) });
        }
        // This walk of the selection (the whole index when nothing was
        // named) runs every index check before anything is written, and
        // counts the directories it would make that no entry lists.
        let stored_len = self.append_point().2;
        let limit = options.implicit_dirs.unwrap_or_else(|| implicit::default_limit(stored_len));
        let mut implicit = ImplicitDirs::new(limit);
        let mut selected = members.entries(self)?;
        let stripped = strip::entries(selected.by_ref(), options.strip_components);
        x.check_targets(stripped.map(|e| e.and_then(|e| implicit.entry(&e).map(|()| e))))?;
        selected.all_matched()
    }
}
