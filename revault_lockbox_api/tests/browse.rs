//! `read::Browser`: lookups, places, listings and ranged reads agree with
//! the entries walk on deep index trees, after appends and removals, with
//! hard links; a damaged page fails the reads of its file only.

use std::collections::BTreeMap;
use std::io::Cursor;

use revault_lockbox_api::create::Metadata;
use revault_lockbox_api::read::{Browser, Listed, Node, Place};
use revault_lockbox_api::{Archive, ArchiveUpdater, ArchiveWriter, Entry, EntryKind, UpdateOptions};

use crate::util::*;

/// The directory holding `path` (`b""` at the top).
fn parent(path: &[u8]) -> &[u8] {
    path.iter().rposition(|&b| b == b'/').map_or(&b""[..], |i| &path[..i])
}

/// Every directory's children as the entries walk gives them, the
/// directories no entry lists (implicit parents) among them.
fn walked_children(all: &[Entry]) -> BTreeMap<Vec<u8>, Vec<Vec<u8>>> {
    let mut out: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
    out.insert(Vec::new(), Vec::new());
    let mut add = |path: &[u8], is_dir: bool| {
        if is_dir {
            out.entry(path.to_vec()).or_default();
        }
        let siblings = out.entry(parent(path).to_vec()).or_default();
        if siblings.last().map(Vec::as_slice) != Some(path) {
            siblings.push(path.to_vec());
        }
    };
    for e in all {
        for (i, _) in e.path.iter().enumerate().filter(|(_, &b)| b == b'/') {
            add(&e.path[..i], true);
        }
        add(&e.path, matches!(e.kind, EntryKind::Dir));
    }
    out
}

/// Lists `dir` `page` entries at a time, going on from the last name.
fn listed<S: revault_lockbox_api::storage::ReadAt>(b: &Browser<S>, dir: &[u8], page: usize) -> Vec<Listed> {
    let mut all: Vec<Listed> = Vec::new();
    loop {
        let after = all.last().map(|n| n.path()[parent(n.path()).len()..].to_vec());
        let after = after.as_deref().map(|name| name.strip_prefix(b"/").unwrap_or(name));
        let more = b.children(dir, after, page).unwrap();
        let done = more.len() < page;
        all.extend(more);
        if done {
            return all;
        }
    }
}

/// Checks every lookup, place and listing of `b` against its entries walk.
fn agrees_with_the_walk<S: revault_lockbox_api::storage::ReadAt>(b: &Browser<S>) -> Vec<Node> {
    let all = entries(b.archive());
    let mut nodes = Vec::new();
    let mut places = BTreeMap::new();
    for e in &all {
        let node = b.lookup(&e.path).unwrap().expect("every walked entry is found");
        assert_eq!(&node.entry, e);
        let by_place = b.node(node.place).unwrap();
        match &e.kind {
            // A link's inode is its file's.
            EntryKind::Hardlink { target, .. } => assert_eq!(&by_place.entry.path, target),
            _ => {
                assert_eq!(by_place, node, "{}", String::from_utf8_lossy(&e.path));
                assert!(places.insert(node.place, e.path.clone()).is_none(), "places are distinct");
            }
        }
        nodes.push(node);
    }
    for (dir, children) in walked_children(&all) {
        for page in [1, 3, 1000] {
            let got: Vec<Vec<u8>> = listed(b, &dir, page).iter().map(|n| n.path().to_vec()).collect();
            assert_eq!(got, children, "children of {:?} by {page}", String::from_utf8_lossy(&dir));
        }
    }
    assert!(b.lookup(b"no/such/path").unwrap().is_none());
    for (dir, _) in walked_children(&all) {
        assert!(b.has_below(&dir).unwrap() || all.iter().any(|e| e.path == dir));
    }
    assert!(!b.has_below(b"no/such/path").unwrap());
    nodes
}

#[test]
fn deep_index_trees_are_browsed_by_path_and_by_place() {
    // 250-byte names nested 60 deep: a few entries fill a 64 KiB leaf and
    // a few keys an internal node, so the entries tree is three levels.
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap().page_size(4096)).unwrap();
    let name = |c: u8| vec![c; 250];
    for chain in [b'a', b'b', b'c', b'd'] {
        let mut path = name(chain);
        w.add_dir(&path, &meta(0o755)).unwrap();
        for depth in 0..60u32 {
            let file = [&path[..], b"/", &name(b'f')].concat();
            let content = format!("{} {depth}", chain as char).repeat(depth as usize + 1);
            w.add_file(&file, &meta(0o644), content.len() as u64, content.as_bytes()).unwrap();
            path = [&path[..], b"/", &name(b'n')].concat();
            w.add_dir(&path, &meta(0o700)).unwrap();
        }
    }
    let bytes = w.finish().unwrap();
    let b = Browser::new(Archive::open(Cursor::new(bytes.clone()), &password()).unwrap());
    let nodes = agrees_with_the_walk(&b);
    assert_eq!(nodes.len(), 4 * 121);
    // A browser that has seen nothing finds each place by descending from
    // the top (its cache holds 8 leaves of about 30).
    let fresh = Browser::new(Archive::open(Cursor::new(bytes), &password()).unwrap());
    for node in nodes.iter().rev() {
        assert_eq!(&fresh.node(node.place).unwrap(), node);
    }
    for node in nodes.iter().filter(|n| matches!(n.entry.kind, EntryKind::File { .. })) {
        let mut whole = Vec::new();
        std::io::Read::read_to_end(&mut b.archive().open_file(&node.entry.path).unwrap(), &mut whole)
            .unwrap();
        let mut buf = vec![0u8; 7];
        let at = whole.len() as u64 / 2;
        let n = b.read_at(&node.entry, at, &mut buf).unwrap();
        assert_eq!(&buf[..n], &whole[at as usize..(at as usize + 7).min(whole.len())]);
        assert_eq!(b.read_at(&node.entry, whole.len() as u64, &mut buf).unwrap(), 0, "at the end");
    }
    assert!(Place::from_number(1 << 63).is_none());
    assert!(b.node(Place::from_number(123_456_789).unwrap()).is_err(), "a place no leaf has");
}

#[test]
fn appends_removals_and_hard_links_keep_one_inode_per_content() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("docs/old")).unwrap();
    std::fs::write(src.join("docs/a.txt"), b"alpha\n").unwrap();
    std::fs::write(src.join("docs/old/x.txt"), b"x".repeat(5000)).unwrap();
    std::fs::hard_link(src.join("docs/a.txt"), src.join("docs/same.txt")).unwrap();
    std::fs::write(src.join("top.txt"), b"top\n").unwrap();
    let archive = archive_of(dir.path(), &src, &["docs", "top.txt"], cheap());
    std::fs::write(src.join("docs/new.txt"), b"new\n").unwrap();
    let options = || UpdateOptions::new().threads(2);
    ArchiveUpdater::open(&archive, &password(), options())
        .unwrap()
        .add(&src, &["docs/new.txt".into()])
        .unwrap();
    ArchiveUpdater::open(&archive, &password(), options()).unwrap().remove(&[b"docs/old".to_vec()]).unwrap();

    let b = Browser::new(open(&archive));
    let nodes = agrees_with_the_walk(&b);
    let by_path: BTreeMap<_, _> = nodes.iter().map(|n| (n.entry.path.clone(), n)).collect();
    assert!(!by_path.contains_key(&b"docs/old/x.txt"[..]) && by_path.contains_key(&b"docs/new.txt"[..]));
    let (file, link) = (by_path[&b"docs/a.txt"[..]], by_path[&b"docs/same.txt"[..]]);
    assert_eq!(file.place, link.place, "a hard link is its file's inode");
    assert!(file.shared && link.shared && !by_path[&b"top.txt"[..]].shared);
    let mut buf = [0u8; 16];
    let n = b.read_at(&link.entry, 0, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"alpha\n");
}

#[test]
fn a_damaged_page_fails_the_reads_of_its_file_only() {
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap().page_size(4096)).unwrap();
    // Incompressible (xorshift), so pages are stored raw and offsets known.
    let noise = |mut x: u64| {
        (0..12_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect::<Vec<u8>>()
    };
    let meta = Metadata::new(0o644, 0, 0, 0, 0);
    w.add_file("a.bin", &meta, 12_000, &noise(1)[..]).unwrap();
    w.add_file("b.bin", &meta, 12_000, &noise(2)[..]).unwrap();
    let mut bytes = w.finish().unwrap();
    // Past a.bin's pages (about 12 KB stored raw), inside b.bin's.
    let at = data_start(&bytes) + 18_000;
    bytes[at] ^= 0x40;
    let b = Browser::new(Archive::open(Cursor::new(bytes), &password()).unwrap());
    let (a, bad) = (b.lookup(b"a.bin").unwrap().unwrap(), b.lookup(b"b.bin").unwrap().unwrap());
    let mut buf = vec![0u8; 12_000];
    assert_eq!(b.read_at(&a.entry, 0, &mut buf).unwrap(), 12_000);
    assert_eq!(buf, noise(1));
    let err = b.read_at(&bad.entry, 0, &mut buf).unwrap_err();
    assert!(err.is_authentication(), "{err}");
    assert!(b.read_at(&bad.entry, 11_000, &mut buf).is_ok(), "pages before or after the damage still read");
}

#[test]
fn directories_no_entry_lists_are_listed_as_implicit() {
    // As a tar stream without directory members gives them: `a`, `a/b`
    // and `c` are implied by deeper paths; `d` is stored.
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    for path in ["a/b/one.txt", "a/b/two.txt", "a/top.txt", "c/deep/er/x.txt", "d", "d/y.txt", "z.txt"] {
        if path == "d" {
            w.add_dir(path, &meta(0o755)).unwrap();
        } else {
            w.add_file(path, &meta(0o644), 2, &b"hi"[..]).unwrap();
        }
    }
    let b = Browser::new(Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap());
    agrees_with_the_walk(&b);
    let top = listed(&b, b"", 1000);
    assert_eq!(
        top.iter().map(|l| matches!(l, Listed::ImplicitDir(_))).collect::<Vec<_>>(),
        [true, true, false, false],
        "{top:?}"
    );
    assert!(b.has_below(b"a/b").unwrap() && b.has_below(b"c/deep").unwrap());
    assert!(!b.has_below(b"a/b/one.txt").unwrap() && !b.has_below(b"a/b/on").unwrap());
    assert!(b.lookup(b"a/b").unwrap().is_none(), "an implicit directory has no entry");
}
