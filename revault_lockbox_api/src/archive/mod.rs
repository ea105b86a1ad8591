//! [`Archive`]: opens an archive (FORMAT.md §6's numbered steps), then reads
//! entries and pages on demand: a lookup descends the index to one path,
//! a listing streams the index leaves, and file content is read page by
//! page.

mod browse;
mod checks;
mod chunks;
#[cfg(test)]
mod commit_tests;
mod content;
mod entries;
mod file;
mod head;
#[cfg(test)]
mod hostile_tests;
mod info;
mod merge;
mod options;
mod records;
mod retention;
mod reuse;
mod salvage;
mod select;
mod session;
mod sessions;
mod signers;
mod tail;
mod verify;

use std::fs::File;
use std::sync::{Arc, OnceLock};

use crate::cache::Bounded;
use crate::crypto::open_root;
use crate::crypto::ContentKey;
use crate::crypto::SessionKeys;
use crate::error::{Error, Result};
use crate::format::{
    chunking_allowed, EntriesLeaf, Hash, HeaderPrefix, Internal, KeySlot, PageRecord, PagesLeaf, Root,
    SessionInfo, Table, TreeTop, ARCHIVE_ID_LEN, FRAME_LEN, HEADER_PREFIX_LEN, TRAILER_LEN,
};
use crate::index::{open_unit, page_key, NodeCache, TreeReader};
use crate::keys::Unlock;
use crate::profile::ReadTuning;
use crate::progress::Progress;
use crate::storage::ReadAt;

pub use browse::{Browser, Listed, Node, Place};
pub(crate) use chunks::ChunkLookup;
#[cfg(test)]
pub(crate) use content::chunked_tests;
pub(crate) use content::{ContentSource, ContentVisitor, Span, SpanRequest};
pub use entries::Entries;
pub use file::EntryReader;
use head::other_version;
pub(crate) use head::{known_head, listed_head, read_labeled_slots, read_prefix, unlock_head, Head};
pub use info::ArchiveInfo;
pub(crate) use merge::Merged;
pub use options::OpenOptions;
pub use retention::{Period, Reclaim, Retention, Zone};
pub use salvage::{is_salvageable, Salvage};
pub use select::{Members, Selected, Subtrees};
pub(crate) use session::header_copies;
use session::{check_chain, check_session, check_summary, SessionState};

/// Entries leaves a lookup keeps opened: the leaves of a path and of the
/// paths above it, for a few directories at once (a leaf holds up to
/// 64 KiB of records: this is at most a few MiB decoded).
const LOOKUP_LEAVES: usize = 16;
/// Internal nodes kept for descents: those near the top of every tree
/// read (a node holds up to 64 KiB of children).
const DESCENT_NODES: usize = 16;
pub use sessions::{AsOf, SessionSummary};
pub use signers::SessionSigners;
pub(crate) use tail::{find_committed, Committed};
pub use verify::{Damage, VerifyReport};

/// An open archive: header, key slot, trailer and index root authenticated;
/// index nodes and data pages read only when asked for.
pub struct Archive<S = File> {
    src: S,
    archive_id: [u8; ARCHIVE_ID_LEN],
    /// The format version of the header, and of every session.
    version: u16,
    /// The header prefix in use (the primary's, or its copy's).
    header: HeaderPrefix,
    /// The prefix and slot table in use, as at offset 0.
    head: Arc<[u8]>,
    /// Why the primary header was not used, when its copy was.
    head_damage: Option<String>,
    slots: Vec<KeySlot>,
    root: Root,
    /// Keys of each entries run, in the order of `root.runs`.
    run_keys: Vec<Arc<SessionKeys>>,
    /// Every session's record, read on first use.
    sessions: OnceLock<sessions::SessionTable>,
    tuning: ReadTuning,
    /// Data pages opened, by number.
    pages: Bounded<u64, Arc<Vec<u8>>>,
    /// Entries leaves opened by lookups, and internal nodes by descents.
    leaves: NodeCache<EntriesLeaf>,
    internals: NodeCache<Internal>,
    file_len: u64,
    /// Where the last committed trailer ends; bytes past it are a torn tail.
    committed_len: u64,
    /// Sealed length of the root in use.
    root_stored_len: u32,
    /// The content key, kept for appending sessions and history checks.
    content_key: ContentKey,
    /// Offset of the first data page (after the key-slot table).
    data_start: u64,
    /// The last session's header, commit hash and signatures.
    last: SessionState,
    /// Counters of the reading jobs ([`OpenOptions::progress`]).
    progress: Option<Arc<Progress>>,
}

impl<S> std::fmt::Debug for Archive<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive")
            .field("entries", &self.root.entry_count)
            .field("pages", &self.root.page_count)
            .finish_non_exhaustive()
    }
}

impl<S: ReadAt> Archive<S> {
    /// Opens an archive with the [`WorkloadProfile::Balanced`](crate::profile::WorkloadProfile::Balanced) reading knobs.
    /// Fails with [`Error::WrongPassword`] when no key slot opens, and
    /// [`Error::Tampered`] when the trailer or index root do not
    /// authenticate.
    pub fn open<'k>(src: S, key: impl Into<Unlock<'k>>) -> Result<Archive<S>> {
        Archive::open_with(src, key, OpenOptions::new())
    }

    /// Opens an archive with `key` (a `&Password`, or identities) and the
    /// reading knobs of `options`.
    pub fn open_with<'k>(src: S, key: impl Into<Unlock<'k>>, options: OpenOptions) -> Result<Archive<S>> {
        options.tuning.validate()?;
        let file_len = src.len().map_err(Error::stream("finding the archive's length"))?;
        if file_len < HEADER_PREFIX_LEN as u64 {
            return Err(Error::malformed("archive", "too short to be a lockbox archive"));
        }
        let (head, content_key) = unlock_head(&src, file_len, &key.into(), options.kdf_budget)?;
        Archive::open_unlocked(src, head, content_key, file_len, options)
    }

    /// Opens an archive whose content key is known (an appending writer
    /// re-reading what it committed).
    pub(crate) fn reopen(src: S, content_key: &ContentKey, options: OpenOptions) -> Result<Archive<S>> {
        let file_len = src.len().map_err(Error::stream("finding the archive's length"))?;
        let head = known_head(&src, file_len)?;
        let key = ContentKey::from_bytes(content_key.bytes());
        Archive::open_unlocked(src, head, key, file_len, options)
    }

    /// Opens `src`, the file this archive was read from as it is now (an
    /// appending writer re-reading what it committed), with this archive's
    /// content key and header: the one it was unlocked with, so that a
    /// damaged primary read through its copy stays read through it.
    pub(crate) fn reopen_as<T: ReadAt>(&self, src: T, options: OpenOptions) -> Result<Archive<T>> {
        let file_len = src.len().map_err(Error::stream("finding the archive's length"))?;
        let key = ContentKey::from_bytes(self.content_key.bytes());
        Archive::open_unlocked(src, self.head_in_use(), key, file_len, options)
    }

    /// The header this archive was unlocked with.
    fn head_in_use(&self) -> Head {
        Head {
            header: self.header,
            slots: self.slots.clone(),
            bytes: Arc::clone(&self.head),
            damage: self.head_damage.clone(),
        }
    }

    fn open_unlocked(
        src: S,
        head: Head,
        content_key: ContentKey,
        file_len: u64,
        options: OpenOptions,
    ) -> Result<Archive<S>> {
        let Head { header, slots, bytes: head_bytes, damage: head_damage } = head;
        if file_len < header.data_start() + TRAILER_LEN as u64 {
            return Err(Error::tampered("trailer (archive truncated)"));
        }
        let Committed { trailer, keys: last_keys, end: committed_len } =
            find_committed(&src, file_len, &header, &content_key)?;
        let mut last = check_session(&src, &header, &trailer, &content_key, &last_keys)?;
        let root_len = FRAME_LEN as u32 + trailer.root_stored_len;
        let root = open_unit(
            &src,
            trailer.root_offset,
            root_len,
            || "index root".into(),
            |framed| open_root(&last_keys, &header.archive_id, &trailer, framed),
        )?;
        let root = Root::decode(&root)?;
        if !chunking_allowed(header.version) && root.runs.iter().any(|run| run.chunks.height > 0) {
            return Err(Error::malformed("index root", "a chunk index in an archive of version 3"));
        }
        let newest = root.sessions.last();
        if last.header_damage.is_some() {
            // Its record repeats what the header held but the tool's name
            // and the walk rules (FORMAT.md §3.7).
            let summary = &newest.summary;
            last.info = SessionInfo {
                number: newest.number,
                created_ns: summary.created_ns,
                kind: summary.kind,
                label: summary.label.clone(),
                ..SessionInfo::default()
            };
        }
        let consistent = root.page_count == trailer.page_count
            && root.entry_count == trailer.entry_count
            && newest.salt == trailer.session_salt
            && newest.number == last.info.number
            && newest.header_offset == trailer.session_start(header.data_start())
            && (trailer.previous_trailer == 0) == (root.sessions.count == 1);
        if !consistent {
            return Err(Error::malformed("index root", "does not match the trailer"));
        }
        check_summary(&newest.summary, &last.info)?;
        let run_keys =
            root.runs.iter().map(|r| Arc::new(SessionKeys::derive(&content_key, &r.salt))).collect();
        let at_state = options
            .state
            .map(|state| (state, header, slots.clone(), Arc::clone(&head_bytes), head_damage.clone()));
        let archive = Archive {
            src,
            archive_id: header.archive_id,
            version: header.version,
            header,
            head: head_bytes,
            head_damage,
            data_start: header.data_start(),
            slots,
            root,
            run_keys,
            sessions: OnceLock::new(),
            tuning: options.tuning,
            pages: Bounded::new(options.tuning.page_cache),
            leaves: NodeCache::new(LOOKUP_LEAVES),
            internals: NodeCache::new(DESCENT_NODES),
            file_len,
            committed_len,
            root_stored_len: root_len,
            content_key,
            last,
            progress: options.progress.clone(),
        };
        match at_state {
            // An earlier state is checked when it is opened below, not this one.
            None => archive.check_last(options.trusted.as_deref()).map(|()| archive),
            Some((state, header, slots, bytes, damage)) => {
                let end = archive.state_end(state)?;
                let key = ContentKey::from_bytes(archive.content_key.bytes());
                let options = OpenOptions { state: None, ..options };
                let head = Head { header, slots, bytes, damage };
                Archive::open_unlocked(archive.src, head, key, end, options)
            }
        }
    }

    /// Why the header and key-slot table at offset 0 were not used, when
    /// the archive was read through their copy at the end of its last
    /// session (FORMAT.md §3.11): one line naming where. `verify` counts it
    /// as damage; `compact` and `repair` write the primary again.
    pub fn header_damage(&self) -> Option<&str> {
        self.head_damage.as_deref()
    }

    /// Why the last session's header could not be read, when it could not
    /// (FORMAT.md §6.1 step 6): the session was read through its trailer,
    /// which carries its salt, and its record; one line naming where.
    /// `verify` counts it as damage.
    pub fn session_header_damage(&self) -> Option<&str> {
        self.last.header_damage.as_deref()
    }

    /// The header prefix and key-slot table in use, as at offset 0.
    pub(crate) fn head(&self) -> &Arc<[u8]> {
        &self.head
    }

    /// When the last session's header copy (FORMAT.md §3.11) is not the
    /// header in use byte for byte: where it starts and one line saying so.
    pub(crate) fn last_copy_differs(&self) -> Result<Option<(u64, String)>> {
        let trailer = &self.last.trailer;
        let differs = head::copy_differs(&self.src, trailer, &self.head)?;
        Ok(differs.map(|why| (trailer.header_copy_offset(), why)))
    }

    /// The last session's header: its number, time, kind, label and tool.
    pub fn last_session(&self) -> &SessionInfo {
        &self.last.info
    }

    /// The last trailer's commit hash (FORMAT.md §3.8): one value that
    /// commits to every byte of this state a reader accepts.
    pub fn commit_hash(&self) -> [u8; 32] {
        self.last.commit
    }

    /// Follows the trailers' hash chain back to the first session, each
    /// session header compared with its record in the sessions tree.
    /// Returns a line per earlier session header that is damaged.
    pub(crate) fn check_chain(&self) -> Result<Vec<String>> {
        let table = self.sessions_table()?;
        check_chain(&self.src, &self.header, &self.content_key, &self.last.trailer, |number| {
            table.record(number)
        })
    }

    /// Every session's trailer along the hash chain, oldest first, each
    /// earlier one checked as [`check_chain`](Self::check_chain) checks it
    /// (`repair` rebuilds what follows each session's header copy from it).
    pub(crate) fn trailers(&self) -> Result<Vec<crate::format::Trailer>> {
        let mut all = vec![self.last.trailer.clone()];
        while let Some(newest) = all.last().filter(|t| t.previous_trailer != 0) {
            let previous = session::check_previous(&self.src, &self.header, &self.content_key, newest)?;
            all.push(previous);
        }
        all.reverse();
        Ok(all)
    }

    /// What is wrong with the recovery records along the hash chain, one
    /// line each (FORMAT.md §3.12): `verify` reports them as damage.
    pub(crate) fn check_records(&self) -> Result<Vec<String>> {
        records::records_damage(&self.src, &self.header, &self.content_key, &self.last.trailer)
    }

    /// Why the last session's recovery record cannot be used, if it has
    /// one that cannot (FORMAT.md §3.12): its footer does not decode or
    /// disagrees with the trailer, or the trailer's two copies differ. One
    /// line naming where; the state reads all the same (the record only
    /// repairs), and `verify` counts it as damage.
    pub fn record_damage(&self) -> Option<&str> {
        self.last.record_damage.as_deref()
    }

    /// Bytes of the last session's header, signature block, header copy and
    /// recovery record.
    pub(crate) fn session_overhead(&self) -> u64 {
        self.last.overhead
    }

    /// What an appending session continues from: the last session's
    /// number, and the committed length and commit hash it chains to.
    pub(crate) fn chain_point(&self) -> (u32, u64, Hash) {
        (self.last.info.number, self.committed_len, self.last.commit)
    }

    /// The reading knobs in effect.
    pub fn tuning(&self) -> &ReadTuning {
        &self.tuning
    }

    /// The counters a reading job updates, if the opener gave some.
    pub(crate) fn progress(&self) -> Option<&Progress> {
        self.progress.as_deref()
    }

    /// The source the archive is read from (for its counters, say).
    pub fn source(&self) -> &S {
        &self.src
    }

    /// Number of entries.
    pub fn entry_count(&self) -> u64 {
        self.root.entry_count
    }

    /// Bytes of file content stored (a hard link's content counted once).
    pub fn content_bytes(&self) -> u64 {
        self.root.stream_len
    }

    /// The authenticated root.
    pub(crate) fn root(&self) -> &Root {
        &self.root
    }

    /// The keys of this archive's chunk ids (and chunker): what `verify`
    /// checks a chunked file's chunks with.
    pub(crate) fn chunk_keys(&self) -> crate::chunk::ChunkKeys {
        crate::chunk::ChunkKeys::derive(&self.content_key, &self.archive_id)
    }

    /// The archive id, the content key, and where the committed state ends:
    /// what an appending session continues from.
    pub(crate) fn append_point(&self) -> ([u8; ARCHIVE_ID_LEN], &ContentKey, u64) {
        (self.archive_id, &self.content_key, self.committed_len)
    }

    /// The archive's format version: an append writes sessions of it.
    pub(crate) fn version(&self) -> u16 {
        self.version
    }

    /// Offset of the first data page: the header and key-slot table are
    /// the bytes before it.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn data_start(&self) -> u64 {
        self.data_start
    }

    /// Sealed length of the root in use.
    pub(crate) fn trailer_root_len(&self) -> u32 {
        self.root_stored_len
    }

    /// Bytes after the last committed trailer: what a crash during an
    /// append left behind (0 for a whole archive).
    pub fn torn_tail_bytes(&self) -> u64 {
        self.file_len - self.committed_len
    }

    /// Write sessions: the create, then each append.
    pub fn sessions(&self) -> u64 {
        self.root.sessions.count.into()
    }

    /// A reader of one of the trees written by the last session.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn tree(&self, table: Table) -> TreeReader<'_> {
        self.tree_with(self.run_keys.last().expect("a root has a run"), table)
    }

    /// A reader of a tree sealed under `keys`.
    pub(crate) fn tree_with(&self, keys: &Arc<SessionKeys>, table: Table) -> TreeReader<'_> {
        TreeReader {
            src: &self.src,
            keys: Arc::clone(keys),
            archive_id: self.archive_id,
            table,
            internals: Some(&self.internals),
        }
    }

    /// Every entries run's reader and top, oldest first.
    pub(crate) fn runs(&self) -> impl Iterator<Item = (TreeReader<'_>, &TreeTop)> + '_ {
        self.run_keys.iter().zip(&self.root.runs).map(|(k, r)| (self.tree_with(k, Table::Entries), &r.top))
    }

    /// The page-table leaf that holds data-stream offset `at`.
    pub(crate) fn pages_leaf_at(&self, at: u64) -> Result<PagesLeaf> {
        let table = self.sessions_table()?;
        let session = table.at_stream(at);
        let tree = self.pages_tree(session)?;
        let (id, child) = tree.find_leaf(table.pages(session), &page_key(at))?.ok_or_else(no_page)?;
        let leaf = PagesLeaf::decode(&tree.node(&id, &child)?)?;
        if page_key(leaf.first_offset) != child.first_key {
            return Err(Error::malformed("page table", "leaf does not start where its parent says"));
        }
        self.check_pages_leaf(session, &leaf)?;
        Ok(leaf)
    }
}

fn no_page() -> Error {
    Error::malformed("page table", "no page holds a file's bytes")
}

/// The page of `leaf` holding data-stream offset `at`: its number, record
/// and first byte's stream offset.
pub(crate) fn page_in(leaf: &PagesLeaf, at: u64) -> Option<(u64, PageRecord, u64)> {
    let mut start = leaf.first_offset;
    if at < start {
        return None;
    }
    for (i, record) in leaf.pages.iter().enumerate() {
        let end = start + u64::from(record.plain_len);
        if at < end {
            return Some((leaf.first_page + i as u64, *record, start));
        }
        start = end;
    }
    None
}
