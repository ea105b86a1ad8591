//! Small files in the chunk index (FORMAT.md §3.6b, docs/DEDUP.md): a file
//! below the smallest chunk is one chunk, so a renamed or copied directory
//! of them, or a duplicate inside one tree, stores no data again. Real
//! files through `create_archive`, `add`, `update` and `compact`, at the
//! default chunk sizes.

use std::collections::BTreeMap;
use std::path::Path;

use crate::archive::{Archive, AsOf, Retention};
use crate::crypto::{KdfParams, Password};
use crate::extract::ExtractOptions;
use crate::file::{create_archive, ArchiveUpdater, UpdateOptions};
use crate::session::CreateOptions;
use crate::test_data::random;

/// The number of small files in `docs/`.
const FILES: usize = 40;

fn password() -> Password {
    Password::from("small files")
}

fn open(path: &Path) -> Archive<std::fs::File> {
    Archive::open(std::fs::File::open(path).unwrap(), &password()).unwrap()
}

/// `dir/docs`: `FILES` files of 1 to 40 KiB of random bytes (incompressible,
/// so what a session stores shows in its size); returns their total size.
fn small_files(dir: &Path) -> u64 {
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    (0..FILES)
        .map(|i| {
            let data = random(1024 * (1 + i), i as u64);
            std::fs::write(docs.join(format!("f{i:02}")), &data).unwrap();
            data.len() as u64
        })
        .sum()
}

/// Every regular file under `dir`, by its path below it.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Extracts state `state` (from 1) of the archive and checks it equals `want`.
fn state_is(path: &Path, state: i64, want: &BTreeMap<String, Vec<u8>>) {
    let archive = open(path);
    let view = archive.at(AsOf::State(state)).unwrap();
    let out = tempfile::tempdir().unwrap();
    view.extract(out.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert!(tree(out.path()) == *want, "state {state} extracts as it was");
}

fn create(src: &Path, archive: &Path, names: &[&str]) {
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
    let names: Vec<_> = names.iter().map(Into::into).collect();
    create_archive(archive, src, &names, &password(), options).unwrap();
}

#[test]
fn a_renamed_directory_of_small_files_stores_no_data_again() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let bytes = small_files(&src.join("tree"));
    let archive = work.path().join("a.lbox");
    create(&src, &archive, &["tree"]);
    let first = tree(&src);
    let created = open(&archive).history().unwrap()[0].bytes_written;
    assert!(created > bytes, "the create stored {created} bytes for {bytes} of files");

    std::fs::rename(src.join("tree/docs"), src.join("tree/manual")).unwrap();
    let updater = ArchiveUpdater::open(&archive, &password(), UpdateOptions::new()).unwrap();
    updater.update(&src, &["tree".into()], true).unwrap();
    let a = open(&archive);
    assert_eq!(a.reused_bytes(1).unwrap(), Some(bytes), "every file's bytes reused");
    // What remains: the session's header, 40 entries and their one-chunk
    // lists (44 bytes each), the deletion, the index nodes and the
    // trailer: a few KiB, against 820 KiB of files.
    let written = a.history().unwrap()[1].bytes_written;
    assert!(written < 16 << 10, "the rename stored {written} bytes");
    for i in [0, FILES - 1] {
        let entry = a.find(format!("tree/manual/f{i:02}")).unwrap().unwrap();
        assert_eq!(entry.extent.unwrap().chunks, 1, "a reference to the stored bytes");
    }
    assert!(a.verify().unwrap().is_ok());
    drop(a);
    state_is(&archive, 1, &first);
    state_is(&archive, 2, &tree(&src));

    // A compaction that keeps both states stores each file once.
    let keep = UpdateOptions::new()
        .retention(Retention::latest().last_states(std::num::NonZeroU64::new(2).unwrap()));
    ArchiveUpdater::compact(&archive, &password(), keep).unwrap();
    let a = open(&archive);
    assert!(a.content_bytes() < bytes + (8 << 10), "{} bytes stored after compaction", a.content_bytes());
    assert!(a.verify().unwrap().is_ok());
    drop(a);
    state_is(&archive, 1, &first);
    state_is(&archive, 2, &tree(&src));

    // The last state only: the renamed files are stored whole again.
    ArchiveUpdater::compact(&archive, &password(), UpdateOptions::new()).unwrap();
    let a = open(&archive);
    assert!(a.verify().unwrap().is_ok());
    assert_eq!(a.info().unwrap().deduplicated_bytes, 0);
    drop(a);
    state_is(&archive, -1, &tree(&src));
}

#[test]
fn a_copied_directory_added_later_reuses_the_stored_small_files() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let bytes = small_files(&src.join("tree"));
    let archive = work.path().join("a.lbox");
    create(&src, &archive, &["tree"]);
    let copy = src.join("tree/copy");
    std::fs::create_dir(&copy).unwrap();
    for (name, data) in tree(&src.join("tree/docs")) {
        std::fs::write(copy.join(name), data).unwrap();
    }
    // One file of the copy differs: it alone is stored.
    let changed = random(3000, 99);
    std::fs::write(copy.join("f05"), &changed).unwrap();
    let updater = ArchiveUpdater::open(&archive, &password(), UpdateOptions::new()).unwrap();
    updater.add(&src, &["tree/copy".into()]).unwrap();
    let a = open(&archive);
    assert_eq!(a.reused_bytes(1).unwrap(), Some(bytes - 6 * 1024));
    let written = a.history().unwrap()[1].bytes_written;
    assert!((3000..20_000).contains(&written), "the copy stored {written} bytes");
    assert!(a.verify().unwrap().is_ok());
    assert_eq!(a.info().unwrap().deduplicated_bytes, bytes - 6 * 1024);
    drop(a);
    state_is(&archive, 2, &tree(&src));
}

/// Copies inside one create are stored each: a reference back to a copy
/// stored earlier in the session would cost every later walk a pass that
/// opens its page again. They are in the chunk index once, and a copy an
/// `add` brings later names the first.
#[test]
fn identical_small_files_in_one_create_are_stored_each_and_indexed_once() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let data = random(30 << 10, 5);
    for name in ["a", "b", "c"] {
        std::fs::write(src.join(name), &data).unwrap();
    }
    std::fs::write(src.join("d"), random(30 << 10, 6)).unwrap();
    // The same bytes, one byte short: a chunk of another length.
    std::fs::write(src.join("e"), &data[..data.len() - 1]).unwrap();
    let archive = work.path().join("a.lbox");
    create(&src, &archive, &["a", "b", "c", "d", "e"]);
    let a = open(&archive);
    assert_eq!(a.content_bytes(), 5 * (30 << 10) - 1);
    let first = a.find("a").unwrap().unwrap().extent.unwrap();
    let indexed: Vec<(u64, u32)> =
        a.chunk_entries().unwrap().map(|e| e.unwrap()).map(|e| (e.offset, e.len)).collect();
    assert_eq!(indexed.len(), 3, "a, d and e: {indexed:?}");
    assert!(indexed.contains(&(first.offset, 30 << 10)), "{indexed:?}");
    assert!(a.verify().unwrap().is_ok());
    drop(a);
    state_is(&archive, 1, &tree(&src));

    std::fs::write(src.join("f"), &data).unwrap();
    let updater = ArchiveUpdater::open(&archive, &password(), UpdateOptions::new()).unwrap();
    updater.add(&src, &["f".into()]).unwrap();
    let a = open(&archive);
    let f = a.find("f").unwrap().unwrap();
    let list = a.chunk_list(&f).unwrap().unwrap();
    assert_eq!((list.len(), list[0].offset), (1, first.offset), "f names a's bytes");
    assert_eq!(a.reused_bytes(1).unwrap(), Some(30 << 10));
    drop(a);
    state_is(&archive, 2, &tree(&src));
}

/// One-chunk lists naming a small file's bytes as an attacker holding the
/// key could write them: past the stream, into a later session's part,
/// with a length other than the file's. Each is refused as malformed in
/// one line by every way in (`open_file`, extract, verify), in the state
/// it was written in and after an append.
#[test]
fn hostile_small_file_references_are_refused_in_one_line() {
    use crate::format::{encode_chunk_list, ChunkRef, Entry, EntryKind, Extent};
    use crate::session::{ArchiveWriter, Metadata};

    let a = random(3000, 1);
    let id = |bytes: &[u8]| {
        let keys = crate::crypto::ChunkKeys::from_key_bytes(&[0; 32], &[0; 16]);
        *crate::chunk::ChunkIdHasher::id_of(&keys, bytes).as_bytes()
    };
    // The list follows `a`'s 3,000 bytes: the session's stream ends after
    // it, at 3,044, where the append's first file starts.
    let cases = [
        ("a length other than the file's", ChunkRef { offset: 0, len: 3000, id: id(&a) }, 2999, "add up"),
        ("past the stream", ChunkRef { offset: 1 << 40, len: 100, id: [0; 32] }, 100, "before its list"),
        ("into the next session", ChunkRef { offset: 3044, len: 100, id: [0; 32] }, 100, "before its list"),
    ];
    for (name, chunk, size, message) in cases {
        let work = tempfile::tempdir().unwrap();
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
        let mut w = ArchiveWriter::new(Vec::new(), &password(), options).unwrap();
        let meta = Metadata::new(0o644, 0, 0, 0, 0);
        w.add_file("a", &meta, 3000, &a[..]).unwrap();
        let at = w.append_raw(&encode_chunk_list(&[chunk]));
        assert_eq!(at, 3000, "{name}");
        let kind = EntryKind::File { size, sha256: [0; 32] };
        let extent = Some(Extent { offset: at, size, linked: false, chunks: 1 });
        w.push_raw(Entry { path: b"c".to_vec(), kind, meta, extent, sparse: None }).unwrap();
        let path = work.path().join("x.lbox");
        std::fs::write(&path, w.finish().unwrap()).unwrap();
        // An append whose file lies where the forged chunk points.
        let src = work.path().join("src");
        std::fs::create_dir(&src).unwrap();
        std::fs::write(src.join("z"), random(3000, 2)).unwrap();
        let updater = ArchiveUpdater::open(&path, &password(), UpdateOptions::new()).unwrap();
        updater.add(&src, &["z".into()]).unwrap();
        let archive = open(&path);
        assert_eq!(archive.content_bytes(), 6044, "{name}");
        for state in [1, 2] {
            let view = archive.at(AsOf::State(state)).unwrap();
            let out = tempfile::tempdir().unwrap();
            let errors = [
                view.open_file("c").err().unwrap_or_else(|| panic!("{name}: opened")),
                view.extract(out.path(), &ExtractOptions::new().sync(false)).unwrap_err(),
                view.verify().unwrap_err(),
            ];
            for err in errors {
                let line = err.to_string();
                assert!(err.is_authentication() && !line.contains('\n'), "{name}, state {state}: {line}");
                assert!(line.contains(message), "{name}, state {state}: {line}");
            }
            assert!(std::fs::read_dir(out.path()).unwrap().next().is_none(), "{name}: nothing extracted");
        }
    }
}
