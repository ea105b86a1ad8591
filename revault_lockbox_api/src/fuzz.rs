//! Entry points for fuzzers (feature `fuzzing`): each decoder that reads
//! bytes from a file, callable in one line from any fuzzing harness
//! (cargo-afl, cargo-fuzz) and from the corpus replay test. None may panic,
//! whatever the input. Also what a seed generator needs to cut real
//! archives into the inputs of each target.

use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::archive::Archive;
use crate::crypto::{seam, Sealing};
use crate::crypto::{KdfParams, Password};
use crate::error::Result;
use crate::format::EntryKind;
use crate::format::{
    decode_slot, Child, EntriesLeaf, HeaderPrefix, IndexNodeId, Internal, KeySlot, PagesLeaf, Root, Table,
    Trailer, ARCHIVE_ID_LEN, KEY_SLOTS, MAX_PAGE_PLAIN_LEN,
};
use crate::index::TreeReader;
use crate::keys::KeySet;
use crate::keys::{unwrap_content_key, Identity, KeyFile, Unlock};
use crate::write::{ArchiveWriter, CreateOptions, Metadata};

/// Length of the header prefix, the input of [`header`].
pub const HEADER_PREFIX_LEN: usize = crate::format::HEADER_PREFIX_LEN;
/// Length of the largest key slot, the input of [`key_slots`] and a slot
/// of [`slot_table`]'s input; an archive's first slot starts right after
/// the header prefix, and its slots may be smaller (see [`slot_len`]).
pub const KEY_SLOT_LEN: usize = crate::format::MAX_KEY_SLOT_LEN;

/// The slot size a header prefix declares, if it decodes.
pub fn slot_len(prefix: &[u8]) -> Option<usize> {
    let prefix = <&[u8; HEADER_PREFIX_LEN]>::try_from(prefix.get(..HEADER_PREFIX_LEN)?).ok()?;
    HeaderPrefix::decode(prefix).ok().map(|h| h.slot_len)
}
/// Length of the trailer at the end of every archive.
pub const TRAILER_LEN: usize = crate::format::TRAILER_LEN;

/// First byte of an [`index`] input that decodes the rest as an entries leaf.
pub const INDEX_ENTRIES_LEAF: u8 = 0;
/// First byte of an [`index`] input that decodes the rest as a page-table leaf.
pub const INDEX_PAGES_LEAF: u8 = 1;
/// First byte of an [`index`] input that decodes the rest as an internal node.
pub const INDEX_INTERNAL: u8 = 2;
/// First byte of an [`index`] input that decodes the rest as the root.
pub const INDEX_ROOT: u8 = 3;

/// The header prefix.
pub fn header(data: &[u8]) {
    if let Ok(prefix) = <&[u8; HEADER_PREFIX_LEN]>::try_from(data) {
        let _ = HeaderPrefix::decode(prefix);
    }
}

/// One key slot (padded or cut to the largest size).
pub fn key_slots(data: &[u8]) {
    let mut slot = data.to_vec();
    slot.resize(KEY_SLOT_LEN, 0);
    let _ = decode_slot(&slot);
}

/// A trailer; the first 8 bytes give the offset the trailer claims to sit at.
pub fn trailer(data: &[u8]) {
    if data.len() == 8 + TRAILER_LEN {
        let offset = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        let _ = Trailer::decode(data[8..].try_into().expect("trailer length"), offset);
    }
}

/// An index node or root plaintext, after opening and decompression: the
/// first byte picks the decoder (modulo 4: [`INDEX_ENTRIES_LEAF`],
/// [`INDEX_PAGES_LEAF`], [`INDEX_INTERNAL`], [`INDEX_ROOT`]).
pub fn index(data: &[u8]) {
    let Some((&which, node)) = data.split_first() else { return };
    match which % 4 {
        INDEX_ENTRIES_LEAF => drop(EntriesLeaf::decode(node)),
        INDEX_PAGES_LEAF => drop(PagesLeaf::decode(node)),
        INDEX_INTERNAL => drop(Internal::decode(node)),
        _ => drop(Root::decode(node)),
    }
}

/// A page body after opening: zstd decompression to the length the first
/// four bytes claim (capped at the format's page limit).
pub fn page(data: &[u8]) {
    if data.len() >= 4 {
        let len = u32::from_le_bytes(data[..4].try_into().expect("4 bytes")).min(MAX_PAGE_PLAIN_LEN);
        let _ = crate::crypto::decompress(&data[4..], len as usize);
    }
}

/// The password fuzzers use for whole archives.
pub const PASSWORD: &str = "fuzz";

/// A whole archive: open with [`PASSWORD`], verify, list, look one path up.
/// Archives with a password slot (any of them: the reader tries several)
/// that asks for more than a cheap Argon2id cost are skipped, so that the
/// fuzzer spends its time in the decoders, not in the KDF.
pub fn archive(data: &[u8]) {
    let Some(len) = slot_len(data) else { return };
    let slots = data.get(HEADER_PREFIX_LEN..HEADER_PREFIX_LEN + KEY_SLOTS * len).unwrap_or_default();
    if slots.chunks(len).any(|s| matches!(decode_slot(s), Ok(slot) if !cheap(&slot))) {
        return;
    }
    if let Ok(a) = Archive::open(Cursor::new(data), &Password::from(PASSWORD)) {
        let _ = a.verify();
        let _ = a.info();
        let _ = a.find(b"a");
    }
}

/// Test-only identities the key targets unwrap with (never use them for
/// anything else): an X25519 and a hybrid one.
pub const IDENTITIES: &str = "AGE-SECRET-KEY-1MAAWXJEEZ3GZ45NCEQHZNE77NWMXDVPYXFDUKSFZG830UYMKZXMSGD3QVH
AGE-SECRET-KEY-PQ-1QUPXX3344SDHF84JR2TCMJ2N03MFYUCC73Z2ZNJ5DE32NMR9SFMS9055KS
";
/// The test-only key file the key targets unwrap with.
pub const KEY_FILE: &str = "LOCKBOX-KEY-1 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";
/// The archive id the key targets authenticate slots with.
pub const ARCHIVE_ID: [u8; ARCHIVE_ID_LEN] = [0x5a; ARCHIVE_ID_LEN];

/// A seed's name and bytes.
pub type Seed = (String, Vec<u8>);

fn identities() -> &'static [Identity] {
    static IDS: OnceLock<Vec<Identity>> = OnceLock::new();
    IDS.get_or_init(|| Identity::parse_file(IDENTITIES.as_bytes(), &mut |_| None).expect("test identities"))
}

fn key_file() -> &'static KeyFile {
    static KEY: OnceLock<KeyFile> = OnceLock::new();
    KEY.get_or_init(|| KeyFile::parse(KEY_FILE.as_bytes()).expect("test key file"))
}

/// A recipient slot body (after the slot table's kind and length): its
/// stanzas parsed and unwrapped with [`IDENTITIES`], the content key's seal
/// checked against [`ARCHIVE_ID`].
pub fn recipient_slot(data: &[u8]) {
    let aad = crate::format::recipient_slot_aad(&ARCHIVE_ID);
    let _ = unwrap_content_key(identities(), data, &aad);
    let _ = crate::keys::stanza_types(data);
}

/// The whole key-slot table (zero-padded or cut to its 16 slots): every
/// slot decoded, then unlocked as `Archive::open` would with
/// [`IDENTITIES`], [`KEY_FILE`] and [`PASSWORD`] (password slots only when
/// all are cheap, as in [`archive`]).
pub fn slot_table(data: &[u8]) {
    let mut table = data.to_vec();
    table.resize(KEY_SLOTS * KEY_SLOT_LEN, 0);
    let Ok(slots) = table.chunks(KEY_SLOT_LEN).map(decode_slot).collect::<Result<Vec<_>, _>>() else {
        return;
    };
    let _ = Unlock::Identities(identities()).content_key(&ARCHIVE_ID, &slots);
    let _ = Unlock::KeyFile(key_file()).content_key(&ARCHIVE_ID, &slots);
    if slots.iter().all(cheap) {
        let _ = Unlock::Password(&Password::from(PASSWORD)).content_key(&ARCHIVE_ID, &slots);
    }
}

fn cheap(slot: &KeySlot) -> bool {
    match slot {
        KeySlot::Password(p) => p.m_kib <= 64 && p.t <= 2 && p.p <= 2,
        _ => true,
    }
}

/// Seeds for [`recipient_slot`] and [`slot_table`]: the slot table of an
/// archive locked with [`PASSWORD`] (cheap), [`KEY_FILE`] and the
/// recipients of [`IDENTITIES`], written under [`ARCHIVE_ID`]; and each
/// recipient slot's body, named by kind.
pub fn key_seeds() -> Result<(Vec<u8>, Vec<Seed>)> {
    let keys = KeySet::new()
        .password(&Password::from(PASSWORD))
        .key_file(key_file())
        .recipients(identities().iter().map(Identity::to_recipient))
        .allow_mixed_recipients(true);
    let content_key =
        crate::crypto::ContentKey::random().map_err(crate::error::Error::stream("drawing a key"))?;
    let slots = keys.slots(&ARCHIVE_ID, &content_key, KdfParams::INSECURE_FOR_TESTS)?;
    let mut table = Vec::new();
    let mut bodies = Vec::new();
    for slot in &slots {
        table.extend_from_slice(&crate::format::encode_slot(slot, KEY_SLOT_LEN));
        if let KeySlot::Recipient(body) = slot {
            let kind = crate::keys::stanza_types(body).unwrap_or_default().join("-");
            bodies.push((kind, body.clone()));
        }
    }
    Ok((table, bodies))
}

/// Selector byte (`% 6`) of a [`sealed`] input: the index root.
pub const SEALED_ROOT: u8 = 0;
/// Selector byte of a [`sealed`] input: the (only) entries leaf.
pub const SEALED_ENTRIES_LEAF: u8 = 1;
/// Selector byte of a [`sealed`] input: the (only) page-table leaf.
pub const SEALED_PAGES_LEAF: u8 = 2;
/// Selector bytes 3 to 5 of a [`sealed`] input: data pages 0 to 2.
pub const SEALED_FIRST_PAGE: u8 = 3;

/// Plaintexts swapped by [`sealed`] in the archive it writes (by archive
/// id, so that other archives written at the same time are untouched), and
/// every plaintext sealed there, for the seeds. One such archive at a time
/// (`SEALED_WRITER`): they all have the same id.
struct Swap {
    archive_id: [u8; ARCHIVE_ID_LEN],
    what: Option<Plaintext>,
    seen: Vec<Plaintext>,
}

/// A plaintext and what it is sealed as.
type Plaintext = (Sealing, Vec<u8>);

static SWAPS: Mutex<Vec<Swap>> = Mutex::new(Vec::new());
static SEALED_WRITER: Mutex<()> = Mutex::new(());

fn swaps() -> MutexGuard<'static, Vec<Swap>> {
    SWAPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The hook [`sealed_archive`] installs in `crypto::seam`: `plain`, or the
/// fuzzer's bytes when `what` of this archive is to be swapped.
fn swap_plaintext(archive_id: &[u8; ARCHIVE_ID_LEN], what: Sealing, plain: Vec<u8>) -> Vec<u8> {
    let mut swaps = swaps();
    let Some(swap) = swaps.iter_mut().find(|s| s.archive_id == *archive_id) else { return plain };
    swap.seen.push((what, plain.clone()));
    match &swap.what {
        Some((w, bytes)) if *w == what => bytes.clone(),
        _ => plain,
    }
}

/// A writer's output that the caller can read while the writer holds it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the small archive of [`sealed`] (fixed keys, password [`PASSWORD`], 4 KiB
/// pages: a directory, a three-page file, its hard link, an empty file,
/// two small files sharing a page, a symlink), with `what` swapped; returns
/// it and every plaintext sealed in it.
fn sealed_archive(what: Option<Plaintext>) -> Result<(Vec<u8>, Vec<Plaintext>)> {
    let _one_at_a_time = SEALED_WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let out = Shared::default();
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096).threads(1);
    seam::set_swap_hook(swap_plaintext);
    // The same archive id, content key and session salt every time, so
    // that a seed's root (which holds the salt) fits any run.
    seam::set_fixed_random(true);
    let started = ArchiveWriter::new(out.clone(), &Password::from(PASSWORD), options);
    seam::set_fixed_random(false);
    let mut w = started?;
    let header: [u8; HEADER_PREFIX_LEN] = out.0.lock().unwrap_or_else(|e| e.into_inner())
        [..HEADER_PREFIX_LEN]
        .try_into()
        .expect("header written");
    let archive_id = HeaderPrefix::decode(&header)?.archive_id;
    swaps().push(Swap { archive_id, what, seen: Vec::new() });
    let written = write_sealed_entries(&mut w).and_then(|()| w.finish());
    let mut all = swaps();
    let at = all.iter().position(|s| s.archive_id == archive_id).expect("registered above");
    let seen = all.swap_remove(at).seen;
    drop(all);
    written?;
    let bytes = std::mem::take(&mut *out.0.lock().unwrap_or_else(|e| e.into_inner()));
    Ok((bytes, seen))
}

fn write_sealed_entries(w: &mut ArchiveWriter<Shared>) -> Result<()> {
    let meta = |mode| Metadata::new(mode, 1000, 1000, 1_700_000_000, 5);
    let text: Vec<u8> =
        (0..10_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).take(3 * 4096 - 100).collect();
    w.add_dir("d", &meta(0o755))?;
    w.add_linked_file("d/a.txt", &meta(0o644), text.len() as u64, &text[..])?;
    w.add_file("d/b-empty", &meta(0o600), 0, &b""[..])?;
    w.add_hardlink("d/c-link", &meta(0o644), "d/a.txt")?;
    w.add_file("d/e-small", &meta(0o644), 6, &b"small\n"[..])?;
    w.add_file("d/f-small", &meta(0o644), 6, &b"other\n"[..])?;
    w.add_symlink("d/g-sym", &meta(0o777), "a.txt")?;
    // The entry tail: names, xattrs and a sparse map for the decoders.
    let tail = meta(0o644)
        .with_names(Some(b"user".to_vec()), Some(b"group".to_vec()))
        .with_xattrs(vec![crate::format::Xattr { name: b"user.k".to_vec(), value: b"v".to_vec() }]);
    let map = crate::format::SparseMap::new(vec![(4096, 5), (1 << 20, 3)], 1 << 21).expect("a valid map");
    w.add_sparse_file("d/h-sparse", &tail, map, 1 << 21, false, &b"holesend"[..])?;
    Ok(())
}

/// Behind the MAC: writes a small archive in which one plaintext (the
/// first byte picks which, `% 6`: [`SEALED_ROOT`], [`SEALED_ENTRIES_LEAF`],
/// [`SEALED_PAGES_LEAF`], or data page `n - SEALED_FIRST_PAGE`) is the rest
/// of the input, sealed under the archive's fixed test keys like any other; then
/// opens, verifies, lists it and reads every file. So the decoders after
/// authentication and the streaming of file spans over pages get the
/// fuzzer's bytes.
pub fn sealed(data: &[u8]) {
    let Some((&which, plain)) = data.split_first() else { return };
    let what = match which % 6 {
        SEALED_ROOT => Sealing::Root,
        SEALED_ENTRIES_LEAF => Sealing::Node(IndexNodeId { table: Table::Entries, level: 0, seq: 0 }),
        SEALED_PAGES_LEAF => Sealing::Node(IndexNodeId { table: Table::Pages, level: 0, seq: 0 }),
        n => Sealing::Page(u64::from(n - SEALED_FIRST_PAGE)),
    };
    let Ok((bytes, _)) = sealed_archive(Some((what, plain.to_vec()))) else { return };
    let Ok(archive) = Archive::open(Cursor::new(bytes), &Password::from(PASSWORD)) else { return };
    let _ = archive.verify();
    let _ = archive.info();
    let Ok(entries) = archive.entries() else { return };
    for entry in entries.take(64) {
        let Ok(entry) = entry else { break };
        if matches!(entry.kind, EntryKind::File { .. }) {
            if let Ok(mut file) = archive.open_file(&entry.path) {
                let _ = std::io::copy(&mut file, &mut std::io::sink());
            }
        }
    }
}

/// Seeds for [`sealed`]: every plaintext of its archive after its selector
/// byte, named `root`, `entries-leaf`, `pages-leaf`, `page-<n>`.
pub fn sealed_seeds() -> Result<Vec<Seed>> {
    let (_, seen) = sealed_archive(None)?;
    let mut seeds = Vec::new();
    for (what, plain) in seen {
        let (selector, name) = match what {
            Sealing::Root => (SEALED_ROOT, "root".to_string()),
            Sealing::Node(id) if id.level == 0 && id.seq == 0 && id.table == Table::Entries => {
                (SEALED_ENTRIES_LEAF, "entries-leaf".into())
            }
            Sealing::Node(id) if id.level == 0 && id.seq == 0 => (SEALED_PAGES_LEAF, "pages-leaf".into()),
            Sealing::Page(n) if n < 3 => (SEALED_FIRST_PAGE + n as u8, format!("page-{n}")),
            _ => continue,
        };
        seeds.push((name, [&[selector], &plain[..]].concat()));
    }
    Ok(seeds)
}

/// Seeds for [`index`]: the decrypted plaintexts of the root and of every
/// index node of `archive`, each after the byte that selects its decoder;
/// the root first, then each tree (entries, pages) top-down in key order.
pub fn index_plaintexts(archive: &[u8], password: &Password) -> Result<Vec<Vec<u8>>> {
    let opened = Archive::open(Cursor::new(archive), password)?;
    let root = opened.root();
    // The root's encoding is canonical: its decoder refuses anything else.
    let mut out = vec![[&[INDEX_ROOT], &root.encode()[..]].concat()];
    for (table, top) in [(Table::Entries, &root.entries), (Table::Pages, &root.pages)] {
        node_plaintexts(&opened.tree(table), top.height.saturating_sub(1), 0, &top.children, &mut out)?;
    }
    Ok(out)
}

/// Appends the plaintexts of `children` (of `level`, the first numbered
/// `first_seq`) and of every node below them to `out`.
fn node_plaintexts(
    reader: &TreeReader<'_>,
    level: u8,
    first_seq: u64,
    children: &[Child],
    out: &mut Vec<Vec<u8>>,
) -> Result<()> {
    for (i, child) in children.iter().enumerate() {
        let id = IndexNodeId { table: reader.table, level, seq: first_seq + i as u64 };
        let plain = reader.node(&id, child)?;
        let kind = match (level, reader.table) {
            (0, Table::Entries) => INDEX_ENTRIES_LEAF,
            (0, Table::Pages) => INDEX_PAGES_LEAF,
            _ => INDEX_INTERNAL,
        };
        out.push([&[kind], &plain[..]].concat());
        if level > 0 {
            let node = Internal::decode(&plain)?;
            node_plaintexts(reader, level - 1, node.first_child_seq, &node.children, out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::KdfParams;
    use crate::write::{ArchiveWriter, CreateOptions, Metadata};

    #[test]
    fn index_seeds_are_the_root_and_every_node() {
        let password = Password::from(PASSWORD);
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
        let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
        w.add_file("a", &Metadata::new(0o644, 0, 0, 0, 0), 3, &b"abc"[..]).unwrap();
        let seeds = index_plaintexts(&w.finish().unwrap(), &password).unwrap();
        let kinds: Vec<u8> = seeds.iter().map(|s| s[0]).collect();
        assert_eq!(kinds, [INDEX_ROOT, INDEX_ENTRIES_LEAF, INDEX_PAGES_LEAF]);
        assert!(Root::decode(&seeds[0][1..]).is_ok());
        assert!(EntriesLeaf::decode(&seeds[1][1..]).is_ok() && PagesLeaf::decode(&seeds[2][1..]).is_ok());
    }

    #[test]
    fn sealed_swaps_exactly_the_chosen_plaintext() {
        let seeds = sealed_seeds().unwrap();
        let names: Vec<&str> = seeds.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["page-0", "page-1", "page-2", "pages-leaf", "entries-leaf", "root"]);
        let open = |bytes: Vec<u8>| Archive::open(Cursor::new(bytes), &Password::from(PASSWORD));
        for (name, seed) in &seeds {
            // The same plaintext swapped in: an intact archive.
            let what = match seed[0] {
                SEALED_ROOT => Sealing::Root,
                SEALED_ENTRIES_LEAF => Sealing::Node(IndexNodeId { table: Table::Entries, level: 0, seq: 0 }),
                SEALED_PAGES_LEAF => Sealing::Node(IndexNodeId { table: Table::Pages, level: 0, seq: 0 }),
                n => Sealing::Page(u64::from(n - SEALED_FIRST_PAGE)),
            };
            let (same, _) = sealed_archive(Some((what, seed[1..].to_vec()))).unwrap();
            assert!(open(same).unwrap().verify().unwrap().is_ok(), "{name}");
            sealed(seed);
        }
        // Another page-0 plaintext, sealed and authentic: files over it are
        // damaged, not the archive's authentication.
        let (other, _) = sealed_archive(Some((Sealing::Page(0), b"other bytes".to_vec()))).unwrap();
        let archive = open(other).unwrap();
        assert!(!archive.verify().map(|r| r.is_ok()).unwrap_or(false));
    }

    #[test]
    fn key_seeds_unlock_with_the_test_keys() {
        let (table, bodies) = key_seeds().unwrap();
        let kinds: Vec<&str> = bodies.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["X25519", "mlkem768x25519"]);
        let aad = crate::format::recipient_slot_aad(&ARCHIVE_ID);
        for (_, body) in &bodies {
            assert!(unwrap_content_key(identities(), body, &aad).unwrap().is_some());
        }
        let slots: Vec<KeySlot> = table.chunks(KEY_SLOT_LEN).map(|s| decode_slot(s).unwrap()).collect();
        assert!(Unlock::KeyFile(key_file()).content_key(&ARCHIVE_ID, &slots).is_ok());
        assert!(Unlock::Password(&Password::from(PASSWORD)).content_key(&ARCHIVE_ID, &slots).is_ok());
        slot_table(&table);
    }
}
