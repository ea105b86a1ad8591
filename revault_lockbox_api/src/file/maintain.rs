//! Maintenance of an archive file, beside the updater's add, update and
//! remove: [`ArchiveUpdater::compact`] rewrites it without what later
//! sessions superseded, [`ArchiveUpdater::repair`] cuts off a torn tail
//! or, when the index cannot be read, rewrites what a salvage scan proves.
//! Both hold the writer lock throughout.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::atomic::{replace_atomically, ArchiveFile};
use super::changes::inconsistent;
use super::lock::open_locked;
use super::retain::{write_kept, Rewrite};
use super::{ArchiveUpdater, UpdateOptions};
use crate::archive::{is_salvageable, Archive, Damage, Members, OpenOptions, Salvage, SessionSummary};
use crate::error::{Error, Result};
use crate::format::{
    encode_header_copy, record_hasher, Entry, EntryKind, Footer, HeaderPrefix, PagesLeaf, RecordOwner,
    SessionKind, Trailer, FOOTER_LEN, HEADER_PREFIX_LEN, VERSION,
};
use crate::keys::Unlock;
use crate::recovery::{write_record, RunRepair, REPAIR_WINDOW};
use crate::session::{ArchiveWriter, CreateOptions, SessionStart};
use crate::storage::ReadAt;

impl ArchiveUpdater {
    /// Rewrites the archive at `path` (opened with `key`) without what later
    /// sessions superseded and without the states that
    /// [`UpdateOptions::retention`] does not keep: by default one session,
    /// one run, only the live files' content; keeping more states, the
    /// oldest kept whole, then one session per later state holding what
    /// changed since the one before. Each kept state keeps its number,
    /// time and label ([`Archive::history`]); the pages no kept state uses
    /// are reclaimed. The new archive keeps the archive id and key slots; it is
    /// written to a temporary file beside the old one, synced, and renamed
    /// over it, so the path holds either the old or the new archive, whole.
    /// Holds the writer lock throughout. Returns the new archive's length
    /// (with [`UpdateOptions::dry_run`], the length it would have, to
    /// within a few bytes: the whole rewrite is made, every file's content
    /// read and checked, and counted instead of written; the real run's
    /// session time, compressed with its index, may differ). A dry run of
    /// an archive with nothing to reclaim (no dead bytes, no torn tail,
    /// every state kept: what [`Archive::info`] tells from the index)
    /// answers its length at once, reading no data page.
    pub fn compact<'k>(path: &Path, key: impl Into<Unlock<'k>>, mut options: UpdateOptions) -> Result<u64> {
        let file = open_locked(path, options.wait)?;
        let reader = file.try_clone().map_err(Error::io("opening", path))?;
        let archive = Archive::open_with(reader, key, options.open_options())?;
        options.check_chain(&archive)?;
        // The new archive walks on by the rules the old one recorded.
        options.adopt_recorded_rules(&archive)?;
        let kept = archive.kept_states(&options.retention)?;
        if options.dry_run {
            if let Some(len) = nothing_to_reclaim(&archive, kept.len())? {
                return Ok(len);
            }
        }
        if let (Some(p), [last]) = (&options.create.progress, &kept[..]) {
            let state = archive.after_session(last.number)?;
            p.total_bytes.store(Members::all().content_bytes(&state)?, Ordering::Relaxed);
        }
        let head = head_for_rewrite(archive.head())?;
        let open = options.open_options();
        let len = match (options.dry_run, kept.len()) {
            (true, 1) => {
                // Nothing to read back: counted without a recovery record.
                let to = Rewrite {
                    out: io::sink(),
                    reader: None,
                    head: Arc::clone(&head),
                    options: &options.create.clone().recovery(0),
                    open,
                };
                write_kept(path, &archive, &kept, to)?.1
            }
            // The later states are read back from what was written: a
            // scratch file beside the archive, never named, gone after.
            (true, _) => write_scratch(path, &archive, &kept, &head, &options.create, open)?,
            (false, _) => rewrite_archive(path, &archive, &head, &kept, &options.create, open)?,
        };
        drop(file);
        Ok(len)
    }

    /// Makes the archive at `path` (opened with `key`) valid again. An
    /// archive whose last commit reads, index included, and whose every
    /// data page authenticates (all of it is read, as `verify` does) only
    /// loses its torn tail (what an interrupted session left after the
    /// last committed trailer), cut off in place. One whose trailer, root
    /// or index is damaged, or an earlier trailer of its hash chain, or a
    /// data page, or that was cut with no commit left, is salvaged
    /// (FORMAT.md §6.6): a new archive of one session holding what the
    /// scan proves (the last state but the files on damaged pages), each
    /// file's SHA-256 checked, is written beside it, synced and renamed
    /// over it (the original is untouched until the new one is complete).
    /// When the damage spared the sessions tree, the rewrite keeps the
    /// last state's number. Of `options`, the create options (progress
    /// included), `wait` and `kdf_budget` count.
    pub fn repair<'k>(
        path: &Path,
        key: impl Into<Unlock<'k>>,
        options: UpdateOptions,
    ) -> Result<RepairReport> {
        let key = key.into();
        let file = open_locked(path, options.wait)?;
        let reader = file.try_clone().map_err(Error::io("opening", path))?;
        // The check reads every page, as verify does, and counts it.
        let open = match &options.create.progress {
            Some(p) => options.open_options().progress(Arc::clone(p)),
            None => options.open_options(),
        };
        let (damage, kept_state) = match Archive::open_with(reader, key, open) {
            Ok(archive) => match whole_or_damage(&archive)? {
                Ok(()) => {
                    // Whole, but a recovery record, its footer or a trailer
                    // copy after it damaged: written again from the trailer.
                    let tails = damaged_tails(archive.source(), &archive.trailers()?)
                        .map_err(Error::io("reading the recovery records of", path))?;
                    if !tails.is_empty() {
                        let patches = head_and_copies(archive.head(), &archive.trailers()?);
                        let (_, _, end) = archive.append_point();
                        let reader = file.try_clone().map_err(Error::io("opening", path))?;
                        write_rebuilt(path, &reader, &patches, &tails, end)?;
                        let header_rewritten = archive
                            .header_damage()
                            .map(|damage| format!("{damage}: written again from that copy"));
                        return Ok(RepairReport {
                            records_rewritten: tails.len() as u64,
                            torn_tail_bytes: archive.torn_tail_bytes(),
                            header_rewritten,
                            ..RepairReport::default()
                        });
                    }
                    let torn = archive.torn_tail_bytes();
                    if torn > 0 {
                        let (_, _, end) = archive.append_point();
                        file.set_len(end).map_err(Error::io("truncating", path))?;
                        file.sync_all().map_err(Error::io("syncing", path))?;
                    }
                    // A damaged primary header is written again from the
                    // copy it was read through (FORMAT.md §3.11); a write
                    // cut short leaves a primary the copy still stands in for.
                    let mut header_rewritten = archive
                        .header_damage()
                        .map(|damage| format!("{damage}: written again from that copy"));
                    if header_rewritten.is_some() {
                        let head = archive.head();
                        std::os::unix::fs::FileExt::write_all_at(&file, head, 0)
                            .map_err(Error::io("writing the header of", path))?;
                        file.sync_all().map_err(Error::io("syncing", path))?;
                    } else if let Some((at, _)) = archive.last_copy_differs()? {
                        // The other way round: the last session's copy is
                        // written again from the header it copies.
                        let copy = crate::format::encode_header_copy(archive.head());
                        std::os::unix::fs::FileExt::write_all_at(&file, &copy, at)
                            .map_err(Error::io("writing the header copy of", path))?;
                        file.sync_all().map_err(Error::io("syncing", path))?;
                        header_rewritten = Some(format!(
                            "the header copy at byte {at} differed from the header at byte 0: written again from it"
                        ));
                    }
                    return Ok(RepairReport {
                        torn_tail_bytes: torn,
                        header_rewritten,
                        ..RepairReport::default()
                    });
                }
                Err(damage) => (damage, kept_state(&archive)?),
            },
            Err(e) if is_salvageable(&e) => (e.to_string(), None),
            // No slot opened, the primary table's nor its copies' (§3.11):
            // parity does not cover slots, so it cannot help.
            Err(
                e @ (Error::WrongPassword
                | Error::WrongKeyFile
                | Error::NoIdentityMatched
                | Error::KdfOverBudget { .. }
                | Error::Key(_)),
            ) => return Err(e),
            Err(e) => {
                // Damage the open could not read around (a unit it needs
                // before any salvage can start): the records may rebuild it.
                return match rebuild_from_records(path, &file, &key, &options)? {
                    Rebuilt::Rewritten(report) => Ok(report),
                    Rebuilt::NoRecords | Rebuilt::Short(_) => Err(e),
                };
            }
        };
        let not_rebuilt = match rebuild_from_records(path, &file, &key, &options)? {
            Rebuilt::Rewritten(report) => return Ok(report),
            Rebuilt::NoRecords => None,
            Rebuilt::Short(why) => Some(why),
        };
        let reader = file.try_clone().map_err(Error::io("opening", path))?;
        let salvage = Salvage::scan(reader, key, options.open_options())?;
        let checked = salvage.verify()?;
        let bad: HashSet<Vec<u8>> = checked.damaged.iter().map(|d| d.path.0.clone()).collect();
        let head = head_for_rewrite(salvage.head())?;
        let mut report = RepairReport {
            salvaged: Some(damage),
            not_rebuilt,
            damaged: checked.damaged,
            lost: checked.lost,
            ..RepairReport::default()
        };
        let state = match kept_state {
            Some(KeptState { last, earlier }) => {
                if let Some(earlier) = earlier {
                    report.lost.push(format!("{earlier}: the rewrite holds the last state only"));
                }
                last
            }
            // What the scan proves is one state; the lost sessions tree
            // held the states' numbering, so the history starts again at 1.
            None => 1,
        };
        if let Some(p) = &options.create.progress {
            // The check counted what it read; the rewrite counts again.
            p.bytes_in.store(0, Ordering::Relaxed);
            p.entries.store(0, Ordering::Relaxed);
        }
        replace_atomically(path, |mut out| {
            out.write_all(&head).map_err(Error::io("writing", path))?;
            copy_salvaged(&salvage, &bad, &head, state, out, &options.create)
        })
        .map(|kept| report.entries = kept)?;
        drop(file);
        Ok(report)
    }
}

/// What [`rebuild_from_records`] did.
enum Rebuilt {
    /// The archive has no recovery record.
    NoRecords,
    /// Its records rebuilt it, and it was written again.
    Rewritten(RepairReport),
    /// Its records could not rebuild it whole: why, in one line.
    Short(String),
}

/// Rebuilds the archive at `path` (`file`, its lock held) byte for byte
/// from its recovery records (docs/RECOVERY.md), when they cover all of
/// its damage: the repaired view is opened with `key` and checked whole
/// (index, trailers, every data page, as `verify` reads them) before a
/// byte is written; then written beside the archive, synced and renamed
/// over it (the original untouched until then). A header and slot table
/// that only their copy gives back are written from it.
fn rebuild_from_records(
    path: &Path,
    file: &File,
    key: &Unlock<'_>,
    options: &UpdateOptions,
) -> Result<Rebuilt> {
    let reader = file.try_clone().map_err(Error::io("opening", path))?;
    let records = match crate::recovery::records_view(reader) {
        Ok(Some(records)) => records,
        Ok(None) => return Ok(Rebuilt::NoRecords),
        // Parity that lies is never used: the salvage goes on without it.
        Err(e) => return Ok(Rebuilt::Short(format!("its recovery records were not used: {e}"))),
    };
    if let Some(run) = records.runs.iter().find(|r| !r.is_repaired()) {
        let group = &run.unrepairable()[0];
        return Ok(Rebuilt::Short(format!(
            "its recovery record cannot repair the session at byte {}: group {} lost {} shards, {} recovery shards intact",
            run.start, group.group, group.lost, group.usable
        )));
    }
    let runs: Vec<RunRepair> = records.runs.into_iter().filter(RunRepair::is_damaged).collect();
    let view = records.view;
    let archive = match Archive::open_with(&view, *key, options.open_options()) {
        Ok(archive) => archive,
        Err(e) if runs.is_empty() => {
            return Ok(Rebuilt::Short(format!(
                "its damage lies outside what its recovery records protect ({e})"
            )))
        }
        Err(e) => {
            return Ok(Rebuilt::Short(format!(
                "rebuilt from its recovery records, it still does not open: {e}"
            )))
        }
    };
    match whole_or_damage(&archive)? {
        Ok(()) => {}
        Err(damage) => {
            return Ok(Rebuilt::Short(match runs.is_empty() {
                true => format!("its damage lies outside what its recovery records protect ({damage})"),
                false => format!("rebuilt from its recovery records, it is still damaged: {damage}"),
            }))
        }
    }
    let header_rewritten =
        archive.header_damage().map(|damage| format!("{damage}: written again from that copy"));
    if runs.is_empty() && header_rewritten.is_none() {
        return Ok(Rebuilt::Short("its recovery records found nothing to rebuild".into()));
    }
    let trailers = archive.trailers()?;
    let tails =
        damaged_tails(&view, &trailers).map_err(Error::io("reading the recovery records of", path))?;
    let (_, _, end) = archive.append_point();
    write_rebuilt(path, &view, &head_and_copies(archive.head(), &trailers), &tails, end)?;
    Ok(Rebuilt::Rewritten(RepairReport {
        header_rewritten,
        rebuilt: runs,
        records_rewritten: tails.len() as u64,
        ..RepairReport::default()
    }))
}

/// What follows a session's header copy when it has a recovery record
/// (FORMAT.md §3.12): `trailer || record || footer || trailer`, all of it
/// given by the trailer and the protected bytes.
struct Tail {
    trailer: Trailer,
    owner: RecordOwner,
    protected: std::ops::Range<u64>,
    percent: u8,
}

impl Tail {
    fn start(&self) -> u64 {
        self.trailer.first_offset()
    }

    fn end(&self) -> u64 {
        self.trailer.session_end()
    }
}

/// The sessions of `trailers` whose bytes after the header copy are not
/// what their trailer and protected bytes give: a trailer copy that is not
/// the trailer, a footer that does not decode or is not the one the
/// trailer gives, a record that does not hash to its footer's hash.
fn damaged_tails(src: &dyn ReadAt, trailers: &[Trailer]) -> io::Result<Vec<Tail>> {
    let mut damaged = Vec::new();
    for trailer in trailers {
        let Some(layout) = trailer.record_layout() else { continue };
        let tail = Tail {
            owner: RecordOwner {
                version: trailer.version,
                archive_id: trailer.archive_id,
                session_salt: trailer.session_salt,
                first_session: trailer.previous_trailer == 0,
            },
            protected: trailer.protected_start()..trailer.header_copy_offset(),
            percent: trailer.recovery_percent,
            trailer: trailer.clone(),
        };
        let encoded = trailer.encode();
        let record_at = trailer.record_offset();
        let footer_at = record_at + layout.record_len();
        let second_at = footer_at + FOOTER_LEN as u64;
        let mut intact =
            read_equals(src, trailer.first_offset(), &encoded)? && read_equals(src, second_at, &encoded)?;
        let mut footer = [0u8; FOOTER_LEN];
        intact = intact && read_or_missing(src, &mut footer, footer_at)?;
        let decoded = intact.then(|| Footer::decode(&footer, footer_at).ok()).flatten();
        intact = match decoded {
            Some(f) => {
                f.owner == tail.owner
                    && f.percent == tail.percent
                    && f.protected_start == tail.protected.start
                    && f.layout == layout.layout
                    && hash_of(src, record_at, layout.record_len())? == Some(f.record_hash)
            }
            None => false,
        };
        if !intact {
            damaged.push(tail);
        }
    }
    Ok(damaged)
}

/// Whether the bytes at `at` of `src` are `expected` (false when the source
/// ends first).
fn read_equals(src: &dyn ReadAt, at: u64, expected: &[u8]) -> io::Result<bool> {
    let mut bytes = vec![0u8; expected.len()];
    Ok(read_or_missing(src, &mut bytes, at)? && bytes == expected)
}

/// Fills `buf` from `at`; false when the source ends first.
fn read_or_missing(src: &dyn ReadAt, buf: &mut [u8], at: u64) -> io::Result<bool> {
    match src.read_exact_at(buf, at) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// The record hash of the `len` bytes at `at`; `None` when the source
/// ends first.
fn hash_of(src: &dyn ReadAt, at: u64, len: u64) -> io::Result<Option<crate::format::Hash>> {
    let mut hasher = record_hasher();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        if !read_or_missing(src, &mut buf[..n], at + done)? {
            return Ok(None);
        }
        hasher.update(&buf[..n]);
        done += n as u64;
    }
    Ok(Some(*hasher.finalize().as_bytes()))
}

/// Writes the archive at `path` again, beside it and renamed over it: the
/// bytes of `src` up to `end`, those of `patches` in their place (the
/// header, its copies), and each of `tails` made again from its trailer (the record encoded
/// anew from the protected bytes of `src`, which the caller checked).
fn write_rebuilt(
    path: &Path,
    src: &dyn ReadAt,
    patches: &[(u64, Vec<u8>)],
    tails: &[Tail],
    end: u64,
) -> Result<()> {
    replace_atomically(path, |mut out| {
        let mut at = 0u64;
        for tail in tails.iter().map(Some).chain([None]) {
            let until = tail.map_or(end, Tail::start);
            copy_range(src, patches, at..until, &mut out).map_err(Error::io("rewriting", path))?;
            let Some(tail) = tail else { break };
            let encoded = tail.trailer.encode();
            out.write_all(&encoded).map_err(Error::io("writing", path))?;
            write_record(src, tail.protected.clone(), tail.percent, REPAIR_WINDOW, tail.owner, &mut out)
                .map_err(Error::io("writing the recovery record of", path))?;
            out.write_all(&encoded).map_err(Error::io("writing", path))?;
            at = tail.end();
        }
        Ok((out, ()))
    })
}

/// Copies `range` of `src` to `out`, with the bytes of `patches` (each at
/// its offset) in place of what `src` holds there.
fn copy_range(
    src: &dyn ReadAt,
    patches: &[(u64, Vec<u8>)],
    range: std::ops::Range<u64>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut at = range.start;
    while at < range.end {
        let n = (range.end - at).min(buf.len() as u64) as usize;
        let end = at + n as u64;
        src.read_exact_at(&mut buf[..n], at)?;
        for (offset, bytes) in patches {
            let (lo, hi) = ((*offset).max(at), (offset + bytes.len() as u64).min(end));
            if lo < hi {
                buf[(lo - at) as usize..(hi - at) as usize]
                    .copy_from_slice(&bytes[(lo - offset) as usize..(hi - offset) as usize]);
            }
        }
        out.write_all(&buf[..n])?;
        at = end;
    }
    Ok(())
}

/// The header and slot table `head` at offset 0 and, in every session of
/// `trailers` whose header copy has the header's slot size, its copy of
/// them (FORMAT.md §3.11: every copy is kept in step with the header).
fn head_and_copies(head: &[u8], trailers: &[Trailer]) -> Vec<(u64, Vec<u8>)> {
    let slot_len = usize::from(u16::from_le_bytes([head[30], head[31]]));
    let copy = encode_header_copy(head);
    let copies = trailers
        .iter()
        .filter(|t| usize::from(t.copy_slot_len) == slot_len)
        .map(|t| (t.header_copy_offset(), copy.clone()));
    [(0, head.to_vec())].into_iter().chain(copies).collect()
}

/// Whether `archive`, opened through its trailer and root, is whole: its
/// index, the trailers of its hash chain and every data page, read as
/// `verify` reads them. `Err` says what is damaged, in one line; damage
/// that a salvage cannot get round is the outer error.
fn whole_or_damage<S: ReadAt>(archive: &Archive<S>) -> Result<Result<(), String>> {
    // An earlier trailer that does not check loses its history: a rewrite
    // of what the scan proves makes the archive valid again.
    match archive.check_index().and_then(|()| archive.check_chain()) {
        Ok(headers) if !headers.is_empty() => return Ok(Err(headers.join("; "))),
        Ok(_) => {}
        Err(e) if is_salvageable(&e) => return Ok(Err(e.to_string())),
        Err(e) => return Err(e),
    }
    let report = archive.verify()?;
    let mut pages = report.damaged_pages.iter();
    Ok(match (pages.next(), report.damaged.first()) {
        (None, None) => Ok(()),
        (Some(first), _) => match pages.len() {
            0 => Err(first.clone()),
            more => Err(format!("{first} (and {more} more damaged data pages)")),
        },
        (None, Some(d)) => {
            // A checksum's reason names the path already.
            let path = d.path.to_string();
            let what =
                if d.reason.contains(&path) { d.reason.clone() } else { format!("{path}: {}", d.reason) };
            match report.damaged.len() - 1 {
                0 => Err(what),
                more => Err(format!("{what} (and {more} more damaged entries)")),
            }
        }
    })
}

/// The state a salvaged rewrite of an archive whose sessions tree reads
/// holds: its last, under the number its records give it; and the
/// earlier states, which the rewrite leaves out.
struct KeptState {
    last: u64,
    earlier: Option<String>,
}

fn kept_state<S: ReadAt>(archive: &Archive<S>) -> Result<Option<KeptState>> {
    let history = match archive.history() {
        Ok(history) => history,
        Err(e) if is_salvageable(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let states: Vec<u64> = history.iter().filter_map(|s| s.state).collect();
    let (Some(&first), Some(&last)) = (states.first(), states.last()) else { return Ok(None) };
    let earlier = match last - first {
        0 => None,
        1 => Some(format!("state {first}")),
        _ => Some(format!("states {first} to {}", last - 1)),
    };
    Ok(Some(KeptState { last, earlier }))
}

/// `archive`'s length if compacting it keeping `kept` states reclaims
/// nothing: no dead bytes, no torn tail, and every state kept. Reads no
/// data page: with every state kept, every chunk a chunk index lists is
/// one a kept state's file stored, so the indexes tell which are live.
fn nothing_to_reclaim<S: ReadAt>(archive: &Archive<S>, kept: usize) -> Result<Option<u64>> {
    let info = archive.info_of_index()?;
    let states = archive.history()?.iter().filter(|s| s.state.is_some()).count();
    let nothing = info.dead_bytes == 0 && info.torn_tail_bytes == 0 && kept == states;
    Ok(nothing.then_some(info.archive_bytes))
}

/// What [`ArchiveUpdater::repair`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairReport {
    /// Bytes cut off after the last committed trailer (0 when there were
    /// none, or when the archive was salvaged).
    pub torn_tail_bytes: u64,
    /// When the header and key-slot table at offset 0 were damaged and
    /// written again from their copy (FORMAT.md §3.11): the damage.
    pub header_rewritten: Option<String>,
    /// When the archive was salvaged and rewritten: the damage that made
    /// its index unreadable.
    pub salvaged: Option<String>,
    /// Entries the rewritten archive holds.
    pub entries: u64,
    /// Entries left out: lost with their content or link target, or whose
    /// content failed its SHA-256.
    pub damaged: Vec<Damage>,
    /// What the scan could not prove, one line each.
    pub lost: Vec<String>,
    /// The protected runs (one a session) whose damage recovery records
    /// rebuilt, when the archive was written again from them byte for byte.
    pub rebuilt: Vec<RunRepair>,
    /// When the archive has recovery records and was salvaged all the
    /// same: why they could not rebuild it.
    pub not_rebuilt: Option<String>,
    /// Sessions whose recovery record, footer or trailer copies after the
    /// header copy were damaged and written again from their trailer.
    pub records_rewritten: u64,
}

/// The header and key-slot table of an archive (`head`, the primary or
/// its copy, as read) for a rewrite: the slots byte for byte, the prefix
/// of this library's version, which every session a rewrite writes has (a
/// version 3 archive compacted becomes version 4; the slots' AAD binds the
/// slot layout's version, not the archive's, so they still open).
fn head_for_rewrite(head: &[u8]) -> Result<Arc<[u8]>> {
    let mut head = head.to_vec();
    let prefix: &mut [u8; HEADER_PREFIX_LEN] =
        (&mut head[..HEADER_PREFIX_LEN]).try_into().expect("the slot table follows the prefix");
    *prefix = HeaderPrefix { version: VERSION, ..HeaderPrefix::decode(prefix)? }.encode();
    Ok(head.into())
}

/// Writes the proven entries of `salvage` but those in `bad` (and hard
/// links to them) into `out` after the header (its first `position`
/// bytes), as one compaction session numbered on from the sessions found,
/// holding state `state`.
fn copy_salvaged(
    salvage: &Salvage<File>,
    bad: &HashSet<Vec<u8>>,
    head: &Arc<[u8]>,
    state: u64,
    out: ArchiveFile,
    options: &CreateOptions,
) -> Result<(ArchiveFile, u64)> {
    let (archive_id, content_key, _, last) = salvage.rewrite_point();
    let number = last.map_or(0, |n| n.saturating_add(1));
    let start = SessionStart {
        number,
        kind: SessionKind::Compaction,
        state,
        ..SessionStart::first(archive_id, Arc::clone(head))
    };
    let reader = out.reader().map_err(|e| Error::Stream { action: "opening the rewrite", source: e })?;
    let mut writer = ArchiveWriter::session(out, content_key, start, options.clone().read_back(reader))?;
    let mut kept = 0;
    for entry in salvage.entries() {
        let meta = &entry.meta;
        match &entry.kind {
            _ if bad.contains(&entry.path) => continue,
            EntryKind::Dir => writer.add_dir(&entry.path, meta)?,
            EntryKind::Symlink { target } => writer.add_symlink(&entry.path, meta, target)?,
            EntryKind::Hardlink { target, .. } if bad.contains(target) => continue,
            EntryKind::Hardlink { target, .. } => writer.add_hardlink(&entry.path, meta, target)?,
            EntryKind::File { size, .. } => {
                let mut content = salvage.content(entry);
                let linked = entry.extent.is_some_and(|x| x.linked);
                let stored = entry.extent.map_or(0, |x| x.size);
                let n = match entry.sparse_map() {
                    Some(map) => {
                        writer.add_sparse_file(&entry.path, meta, map.clone(), *size, linked, &mut content)?
                    }
                    None if linked => writer.add_linked_file(&entry.path, meta, *size, &mut content)?,
                    None => writer.add_file(&entry.path, meta, *size, &mut content)?,
                };
                // Read to the end once more: the digest is checked there.
                content
                    .read(&mut [0u8; 1])
                    .map_err(|e| Error::Stream { action: "reading salvaged content", source: e })?;
                if n != stored {
                    return Err(inconsistent());
                }
            }
        }
        kept += 1;
    }
    let (out, _) = writer.finish_counted()?;
    Ok((out, kept))
}

/// Writes the `kept` states of `archive` (read from `path`, whose writer
/// lock the caller holds) after `head` (the header and key-slot table,
/// resized or not) to a temporary file beside `path`, syncs it and renames
/// it over `path`. Returns the new archive's length.
pub(crate) fn rewrite_archive(
    path: &Path,
    archive: &Archive<File>,
    head: &Arc<[u8]>,
    kept: &[SessionSummary],
    options: &CreateOptions,
    open: OpenOptions,
) -> Result<u64> {
    replace_atomically(path, |mut out| {
        out.write_all(head).map_err(Error::io("writing", path))?;
        let reader = out.reader().map_err(Error::io("writing", path))?;
        let options = &options.clone().read_back(reader.try_clone().map_err(Error::io("opening", path))?);
        let to = Rewrite { out, reader: Some(&reader), head: Arc::clone(head), options, open };
        write_kept(path, archive, kept, to)
    })
}

/// [`rewrite_archive`] into a file that is never named: a dry run's length.
fn write_scratch(
    path: &Path,
    archive: &Archive<File>,
    kept: &[SessionSummary],
    head: &Arc<[u8]>,
    options: &CreateOptions,
    open: OpenOptions,
) -> Result<u64> {
    let mut out = ArchiveFile::scratch_beside(path)?;
    out.write_all(head).map_err(Error::io("writing", path))?;
    let reader = out.reader().map_err(Error::io("writing", path))?;
    let options = &options.clone().read_back(reader.try_clone().map_err(Error::io("opening", path))?);
    let to = Rewrite { out, reader: Some(&reader), head: Arc::clone(head), options, open };
    Ok(write_kept(path, archive, kept, to)?.1)
}

/// Stores `entry` (a file, or a hard link read as the file it names) again
/// in `writer` with its content read from `archive`, checked against its
/// SHA-256 on the way; `linked` when hard links will name it. `leaf` is the
/// pages leaf the last copy ended in, returned for the next one.
pub(super) fn copy_content<W: Write, S: ReadAt>(
    writer: &mut ArchiveWriter<W>,
    archive: &Archive<S>,
    entry: &Entry,
    linked: bool,
    leaf: Option<PagesLeaf>,
    path: &Path,
) -> Result<Option<PagesLeaf>> {
    let size = entry.content().map_or(0, |(size, _)| size);
    let meta = &entry.meta;
    let mut content = archive.content_reader(entry, leaf)?.reading_ahead().stored_only();
    // A failed read of the archive names it; damage (a page, a digest)
    // keeps its own error, so that it exits as damage.
    let named = |e: Error| match e {
        Error::Stream { action, source } if action == Error::READING_CONTENT => {
            Error::Io { action: "reading from", path: path.to_path_buf(), source }
        }
        e => e,
    };
    let n = if let Some(map) = entry.sparse_map() {
        let stored = writer
            .add_sparse_file(&entry.path, meta, map.clone(), size, linked, &mut content)
            .map_err(named)?;
        if stored == map.stored_len() {
            size
        } else {
            stored
        }
    } else if linked {
        writer.add_linked_file(&entry.path, meta, size, &mut content).map_err(named)?
    } else {
        writer.add_file(&entry.path, meta, size, &mut content).map_err(named)?
    };
    // Read to the end once more: the reader checks the digest there.
    content.read(&mut [0u8; 1]).map_err(Error::from_reader(Error::READING_CONTENT)).map_err(named)?;
    if n != size {
        return Err(inconsistent());
    }
    Ok(content.into_leaf())
}
