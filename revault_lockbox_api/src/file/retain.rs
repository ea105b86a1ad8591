//! Compaction that keeps earlier states ([`Retention`](crate::archive::Retention)):
//! the rewrite's first session, a compaction, holds the oldest kept state
//! whole; each later kept state is an append session holding only what
//! differs from the state before it (puts and deletions, content stored
//! again only for what changed), so the rewrite costs about what the kept
//! states use. Each session keeps its state's time and label; the
//! compaction records the state's number, and so does a later state kept
//! after a gap (calendar retention), so states stay numbered as before
//! (FORMAT.md §3.7, §5.2). Every difference is streamed from two
//! states of the old archive (flat memory), and the new archive is read
//! back after each session, as an append reads the file it grows.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use super::changes::inconsistent;
use super::maintain::copy_content;
use crate::archive::{Archive, ChunkLookup, OpenOptions, SessionSummary};
use crate::compare::{self, DiffOptions, Difference};
use crate::crypto::ContentKey;
use crate::error::{Error, Result};
use crate::format::{is_within, Entry, EntryKind, Extent, PagesLeaf, SessionKind, MAX_RUNS};
use crate::session::{ArchiveWriter, CreateOptions, NextRoot, SessionStart};
use crate::storage::ReadAt;

/// Where the rewrite goes: its output, and (when more than one state is
/// kept) the same file opened for reading back what was written.
pub(super) struct Rewrite<'a, W: Write> {
    pub(super) out: W,
    pub(super) reader: Option<&'a File>,
    /// The header and slot table already written: each session ends with
    /// their copy.
    pub(super) head: Arc<[u8]>,
    pub(super) options: &'a CreateOptions,
    pub(super) open: OpenOptions,
}

/// Writes the `kept` states of `archive` (read from `path`), oldest first,
/// after the header; returns the output and the new archive's length.
pub(super) fn write_kept<W: Write>(
    path: &Path,
    archive: &Archive<File>,
    kept: &[SessionSummary],
    to: Rewrite<'_, W>,
) -> Result<(W, u64)> {
    let Rewrite { out, reader, head, options, open } = to;
    let (first, later) = kept.split_first().ok_or_else(inconsistent)?;
    let state = |s: &SessionSummary| archive.after_session(s.number);
    let (archive_id, content_key, _) = archive.append_point();
    // Numbered on from the old archive's sessions; at the last number
    // (FORMAT.md §3.7: a session number never wraps within a chain) from 0
    // again, which the rewrite may, since it starts a new chain: so the
    // remedy every writer names at the session limit works there too.
    let number = archive.chain_point().0.checked_add(1).unwrap_or(0);
    let start = SessionStart {
        number,
        kind: SessionKind::Compaction,
        created_ns: Some(first.created_ns),
        state: first.state.unwrap_or(0),
        ..SessionStart::first(archive_id, head)
    };
    let mut written = copy_state(path, &state(first)?, start, out, &labelled(options, first))?;
    let mut previous = first;
    for next in later {
        let reader = reader.ok_or_else(inconsistent)?;
        let (out, _) = written;
        let mut new = read_back(reader, content_key, &open)?;
        let out = if new.root().runs.len() >= MAX_RUNS {
            let out = merge_runs(path, &new, out, next.created_ns, options)?.0;
            new = read_back(reader, content_key, &open)?;
            out
        } else {
            out
        };
        let sides = (&state(previous)?, &state(next)?);
        // The chunks the rewrite holds so far, for the state's changes.
        let lookup = ChunkLookup::new(read_back(reader, content_key, &open)?);
        written = append_state(path, &new, sides, (out, lookup), next, options)?;
        previous = next;
    }
    Ok(written)
}

/// `options` with `summary`'s label, unless a label was given (`-m`: it
/// labels the compaction, the later states keep theirs).
fn labelled(options: &CreateOptions, summary: &SessionSummary) -> CreateOptions {
    match options.label.is_empty() {
        true => options.clone().label(summary.label.clone()),
        false => options.clone(),
    }
}

fn too_many(path: &Path) -> Error {
    Error::TooManySessions { path: path.to_path_buf() }
}

/// The new archive as committed so far.
fn read_back(reader: &File, key: &ContentKey, open: &OpenOptions) -> Result<Archive<File>> {
    let reader = reader.try_clone().map_err(Error::stream("reading back the rewrite"))?;
    Archive::reopen(reader, key, open.clone())
}

/// The next session of `new`, of `kind`, at time `created_ns`.
fn next_start(path: &Path, new: &Archive<File>, kind: SessionKind, created_ns: i64) -> Result<SessionStart> {
    let (archive_id, _, end) = new.append_point();
    let (last, _, commit) = new.chain_point();
    let root = new.root();
    Ok(SessionStart {
        archive_id,
        version: new.version(),
        position: end,
        next_page: root.page_count,
        stream_len: root.stream_len,
        number: last.checked_add(1).ok_or_else(|| too_many(path))?,
        kind,
        previous: (end, commit),
        created_ns: Some(created_ns),
        state: 0,
        head: Arc::clone(new.head()),
    })
}

/// Every live entry of `state` (read from `path`) in a session of its own
/// that `start` describes, written to `out`.
pub(super) fn copy_state<W: Write, S: ReadAt>(
    path: &Path,
    state: &Archive<S>,
    start: SessionStart,
    out: W,
    options: &CreateOptions,
) -> Result<(W, u64)> {
    let (_, content_key, _) = state.append_point();
    let mut writer = ArchiveWriter::session(out, content_key, start, options.clone())?;
    let mut leaf = None;
    for entry in state.entries()? {
        let entry = entry?;
        let meta = entry.meta.clone();
        match &entry.kind {
            EntryKind::Dir => writer.add_dir(&entry.path, &meta)?,
            EntryKind::Symlink { target } => writer.add_symlink(&entry.path, &meta, target)?,
            EntryKind::Hardlink { target, .. } => writer.add_hardlink(&entry.path, &meta, target)?,
            EntryKind::File { .. } => {
                let linked = entry.extent.is_some_and(|x| x.linked);
                leaf = copy_content(&mut writer, state, &entry, linked, leaf.take(), path)?;
            }
        }
    }
    writer.finish_counted()
}

/// The state `sides.1` as an append session of `new` holding what differs
/// from `sides.0` (the state `new` holds now), with `summary`'s time and
/// label.
fn append_state<W: Write>(
    path: &Path,
    new: &Archive<File>,
    sides: (&Archive<&File>, &Archive<&File>),
    (out, stored): (W, ChunkLookup<File>),
    summary: &SessionSummary,
    options: &CreateOptions,
) -> Result<(W, u64)> {
    let (old, current) = sides;
    let mut start = next_start(path, new, SessionKind::Change, summary.created_ns)?;
    if summary.state != Some(new.next_state()?) {
        // After a gap (calendar retention) the state keeps its number.
        start.state = summary.state.ok_or_else(inconsistent)?;
    }
    let content_key = new.append_point().1;
    let options = options.clone().label(summary.label.clone());
    let mut writer = ArchiveWriter::session(out, content_key, start, options)?;
    if !stored.is_empty() {
        writer.reuse_stored_chunks(Box::new(stored));
    }
    // The last record that hides what lies below it (a deletion, a file or
    // a link): the old entries there need no deletion of their own.
    let mut hidden: Option<Vec<u8>> = None;
    let mut leaf = None;
    for difference in compare::states(old, current, DiffOptions::new().exact())? {
        let difference = difference?;
        if hidden.as_deref().is_some_and(|h| is_within(h, difference.path())) {
            continue;
        }
        match difference {
            Difference::Removed(entry) => {
                writer.delete(&entry.path)?;
                hidden = Some(entry.path);
            }
            Difference::Added(entry) | Difference::Changed { new: entry, .. } => {
                if entry.kind != EntryKind::Dir {
                    hidden = Some(entry.path.clone());
                }
                leaf = put(path, &mut writer, new, current, entry, leaf.take())?;
            }
        }
    }
    let (entries, pages) = writer.finish_trees()?;
    let root = new.root();
    let next = NextRoot {
        entry_count: current.entry_count(),
        sessions: root.sessions.clone(),
        runs: root.runs.clone(),
        entries,
        pages,
    };
    writer.commit(next, &mut |_| Ok(()))
}

/// Stores `entry` of `current` in `writer`: content read from `current`; a
/// hard link to a file this session stored names it, one to a file an
/// earlier session of `new` holds takes that file's place in `new`.
fn put<W: Write>(
    path: &Path,
    writer: &mut ArchiveWriter<W>,
    new: &Archive<File>,
    current: &Archive<&File>,
    entry: Entry,
    leaf: Option<PagesLeaf>,
) -> Result<Option<PagesLeaf>> {
    match &entry.kind {
        EntryKind::Dir => writer.add_dir(&entry.path, &entry.meta)?,
        EntryKind::Symlink { target } => writer.add_symlink(&entry.path, &entry.meta, target)?,
        EntryKind::File { .. } => {
            if let Some(extent) = same_content(new, &entry)? {
                // Only what else it stores changed: the content stays where
                // an earlier session of the rewrite put it.
                writer.copy_entry(Entry { extent: Some(extent), ..entry })?;
                return Ok(leaf);
            }
            let linked = entry.extent.is_some_and(|x| x.linked);
            return copy_content(writer, current, &entry, linked, leaf, path);
        }
        EntryKind::Hardlink { target, .. } if writer.links_to(target) => {
            writer.add_hardlink(&entry.path, &entry.meta, target)?
        }
        EntryKind::Hardlink { target, sha256, .. } => {
            let file = new.find(target)?.ok_or_else(inconsistent)?;
            match file.kind {
                EntryKind::File { sha256: kept, .. } if kept == *sha256 && file.extent.is_some() => {
                    writer.copy_entry(Entry { extent: file.extent, ..entry })?
                }
                _ => return Err(inconsistent()),
            }
        }
    }
    Ok(leaf)
}

/// Where `new` already holds the content of the file `entry` (the same
/// path, digest, size, sparse map and sharing by hard links), if it does.
fn same_content(new: &Archive<File>, entry: &Entry) -> Result<Option<Extent>> {
    let Some(held) = new.find(&entry.path)? else { return Ok(None) };
    let same = matches!((&held.kind, &entry.kind), (EntryKind::File { .. }, EntryKind::File { .. }))
        && held.kind == entry.kind
        && held.sparse == entry.sparse
        && held.extent.map(|x| x.linked) == entry.extent.map(|x| x.linked);
    Ok(held.extent.filter(|_| same))
}

/// A merge session of `new`'s runs (FORMAT.md §5.1), as an append past
/// [`MAX_RUNS`] writes one.
fn merge_runs<W: Write>(
    path: &Path,
    new: &Archive<File>,
    out: W,
    created_ns: i64,
    options: &CreateOptions,
) -> Result<(W, u64)> {
    let root = new.root();
    let start = next_start(path, new, SessionKind::Merge, created_ns)?;
    let content_key = new.append_point().1;
    let mut writer = ArchiveWriter::session(out, content_key, start, options.clone().label(""))?;
    super::merge::write_merged(&mut writer, new, path)?;
    writer.write_chunk_index(new.chunk_entries()?)?;
    if writer.run_span().0 != root.entry_count {
        return Err(inconsistent());
    }
    let (entries, pages) = writer.finish_trees()?;
    let sessions = root.sessions.clone();
    let next = NextRoot { entry_count: root.entry_count, sessions, runs: Vec::new(), entries, pages };
    writer.commit(next, &mut |_| Ok(()))
}
