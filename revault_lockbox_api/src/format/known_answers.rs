//! The known-answer vectors of docs/FORMAT.md §10, checked against the
//! code. The hashes were computed independently (Python's `blake3`
//! package, derive-key mode) from the bytes the spec gives.

use super::*;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const ID: [u8; ARCHIVE_ID_LEN] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
const ID_HEX: &str = "000102030405060708090a0b0c0d0e0f";

/// The first trailer of `trailer_and_chain`, all 216 bytes, version 3 (a
/// version 4 trailer differs in its ninth byte only).
const TRAILER_HEX: &str = concat!(
    "4c424f585441494c03000000000102030405060708090a0b0c0d0e0f2020202020202020202020202020202020202020",
    "202020202020202020202020111111111111111111111111111111111111111111111111111111111111111168100000",
    "000000003c00000064000000222222222222222222222222222222222222222222222222222222222222222201000000",
    "000000000200000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
);

#[test]
fn index_order() {
    let mut paths: Vec<&[u8]> = vec![b"b", b"a.txt", b"\xff", b"a/b.c", b"a", b"a-b", b"a/b/c", b"a/b"];
    paths.sort_by(|x, y| path_cmp(x, y));
    assert_eq!(paths, [&b"a"[..], b"a/b", b"a/b/c", b"a/b.c", b"a-b", b"a.txt", b"b", b"\xff"]);
}

#[test]
fn frames_and_unit_hashes() {
    let page = Frame::page(3, Codec::Zstd, 4096, 1000);
    assert_eq!(hex(&page.encode()), "01000001030000000000000000100000e8030000");
    assert_eq!(hex(&page.aad(&ID)), format!("{ID_HEX}01000001030000000000000000100000e8030000"));
    let node = Frame::node(&IndexNodeId { table: Table::Entries, level: 0, seq: 7 }, Codec::Raw, 100, 116);
    assert_eq!(hex(&node.encode()), "0201000007000000000000006400000074000000");
    assert_eq!(hex(&Frame::root(100, 60).encode()), "030000010000000000000000640000003c000000");
    assert_eq!(
        hex(&unit_hash(&page.encode(), b"abc")),
        "68c0d46bb141a2b81e6a3a5ae3ec1de2675f3eb775388256f8b9bf1ecd76e58b"
    );
}

#[test]
fn session_header() {
    for (version, hex_version) in [(3, "0300"), (4, "0400")] {
        let salt = std::array::from_fn(|i| 0x20 + i as u8);
        let clear = HeaderClear { version, archive_id: ID, salt, body_stored_len: 52 };
        let encoded = clear.encode();
        assert_eq!(hex(&encoded), format!("4c424f5853455353{hex_version}0000{ID_HEX}{}34000000", hex(&salt)));
        assert_eq!(HeaderClear::decode(&encoded).unwrap(), clear);
    }
    let info = SessionInfo {
        number: 1,
        created_ns: 1_764_633_600_000_000_000,
        kind: SessionKind::Merge,
        label: "nightly".into(),
        tool: "lockbox 0.1.0".into(),
        walk: None,
    };
    assert_eq!(
        hex(&info.encode()),
        "010000000000b8e6e83c7d180100070000006e696768746c790d0000006c6f636b626f7820302e312e30"
    );
    // The same body with walk rules (§3.9b): --exclude-vcs --xattrs
    // --exclude '*.o'.
    let walk =
        WalkRecord { exclude_vcs: true, xattrs: true, excludes: vec!["*.o".into()], ..WalkRecord::default() };
    assert_eq!(hex(&walk.encode().unwrap()), "110100030000002a2e6f0000");
    let with_rules = SessionInfo { walk: Some(walk), ..info };
    assert_eq!(
        hex(&with_rules.encode()),
        concat!(
            "010000000000b8e6e83c7d180100070000006e696768746c790d0000006c6f636b626f7820302e312e30",
            "0c000000110100030000002a2e6f0000"
        )
    );
    assert_eq!(
        hex(&session_header_hash(b"abc")),
        "e1357b4310b72810f085f92e5a2a65a2d8351e36da09f8590a008000a2906f5b"
    );
}

/// Version 3's trailers (the golden archives') and version 4's: the
/// commit hashes differ, the version being in the core.
#[test]
fn trailer_and_chain() {
    let hashes = [
        (
            3,
            "a92f431baf90c0849c58f4e88ba3b4bf081d72bfb279af97761f7b0d090208ce",
            "cee3c063dac06f2460d877d6385487877f6c5fc59abf195540faddddff768a7d",
        ),
        (
            4,
            "1a0e3cec313e755dec8598270eafc6277ee4f416ec951cc81c6c89faf46c952d",
            "140f67393193e404a5e94cb8a5ef081e162c9c6d1025b7271fbbd57e681ab398",
        ),
    ];
    for (version, first_hash, second_hash) in hashes {
        trailer_chain_of(version, first_hash, second_hash);
    }
}

/// §10's first trailer, of `version`, without a header copy.
fn first_trailer(version: u16) -> Trailer {
    Trailer {
        version,
        archive_id: ID,
        session_salt: [0x20; SESSION_SALT_LEN],
        header_hash: [0x11; HASH_LEN],
        root_offset: 4200,
        root_stored_len: 60,
        root_plain_len: 100,
        root_hash: [0x22; HASH_LEN],
        page_count: 1,
        entry_count: 2,
        previous_trailer: 0,
        previous_hash: [0; HASH_LEN],
        signature_len: 0,
        copy_slot_len: 0,
        recovery_percent: 0,
        tag: [0xee; TAG_LEN],
    }
}

fn trailer_chain_of(version: u16, first_hash: &str, second_hash: &str) {
    let first = first_trailer(version);
    let expected = TRAILER_HEX.replacen("4c424f585441494c03", &format!("4c424f585441494c{version:02x}"), 1);
    assert_eq!(hex(&first.encode()), expected);
    assert_eq!(hex(&first.commit_hash()), first_hash);
    let at = 4200 + FRAME_LEN as u64 + 60;
    assert_eq!(Trailer::decode(&first.encode(), at).unwrap(), first);
    let second = Trailer {
        root_offset: 5000,
        previous_trailer: at + TRAILER_LEN as u64,
        previous_hash: first.commit_hash(),
        ..first.clone()
    };
    assert_eq!(hex(&second.commit_hash()), second_hash);
}

/// Version 4's first trailer above with a header copy before it (§3.11):
/// `flags` says so and gives the slot size, the commit hash covers it,
/// and it decodes only where the copy fits between the root and it.
#[test]
fn trailer_with_a_header_copy() {
    let cases = [
        (256u16, "0100", 4280 + 4128, "eb29027582ec3c779fc60a5fce10ff1e9545d5aa61e82314deb4c6b6623cb3dc"),
        (4096, "0900", 4280 + 65568, "af8b944c208262c4a20ba06bce3ecd41e09195f6de7fe612256371a43ef23f9b"),
    ];
    for (slot_len, flags, at, commit) in cases {
        let t = Trailer { copy_slot_len: slot_len, ..first_trailer(4) };
        assert_eq!(hex(&t.encode()[10..12]), flags);
        assert_eq!(hex(&t.commit_hash()), commit);
        assert_eq!(Trailer::decode(&t.encode(), at).unwrap(), t);
        assert!(Trailer::decode(&t.encode(), 4280).is_err(), "no room for the copy");
    }
}

/// The first version 4 trailer with a header copy of slot size 256 and a
/// recovery record of 5 % (FORMAT.md §3.12, §10): its flags, its commit
/// hash (Python's `blake3`), its two places, and the footer of its record
/// (that of `recovery::record_tests::a_tiny_record_is_a_known_answer`,
/// over its 152 protected bytes) decoding against it.
#[test]
fn trailer_with_a_recovery_record() {
    let t = Trailer { copy_slot_len: 256, recovery_percent: 5, ..first_trailer(4) };
    assert_eq!(hex(&t.encode()[10..12]), "b100");
    assert_eq!(hex(&t.commit_hash()), "98fea7cf7a43fdd4e30e0fa8c81243bc622215621c8732aa0f881eeea6a8a7dc");
    let (first, second) = (4280 + 4128, 4280 + 4128 + 216 + 8256 + 166);
    for at in [first, second] {
        assert_eq!(Trailer::decode(&t.encode(), at).unwrap(), t, "at {at}");
    }
    assert!(Trailer::decode(&t.encode(), first + 216).is_err());
    assert_eq!(t.session_end(), second + 216);
    let footer_hex = concat!(
        "4c424f5852435652",
        "0400",
        "0100",
        "0500",
        "00100000",
        "01000000",
        "01000000",
        "02000000",
        "000102030405060708090a0b0c0d0e0f",
        "2020202020202020202020202020202020202020202020202020202020202020",
        "2010000000000000",
        "9800000000000000",
        "4020000000000000",
        "b04213fa26ff86db323510de9b54ed0519ed294ffdd21f685bdb4d8bfa5d3cd0",
        "8e6f759c65f012976ea051cac615b6047ec4e3acaca155c9eaa1913b12d45696",
    );
    let bytes: Vec<u8> = (0..footer_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&footer_hex[i..i + 2], 16).unwrap())
        .collect();
    let footer = Footer::decode(&bytes.try_into().unwrap(), second - FOOTER_LEN as u64).unwrap();
    assert_eq!((footer.protected_start, footer.layout.len, footer.record_len), (4128, 152, 8256));
    footer.check_against(&t).unwrap();
    let other = Trailer { recovery_percent: 6, ..t };
    assert!(footer.check_against(&other).is_err());
}

#[test]
fn slot_with_a_label() {
    let mut slot = vec![0u8; MIN_KEY_SLOT_LEN];
    slot[0] = 2; // a recipient slot with a 4-byte body
    slot[1] = 4;
    slot[3..7].copy_from_slice(b"body");
    slot[7] = 6;
    slot[8..14].copy_from_slice(b"laptop");
    assert_eq!(decode_slot(&slot).unwrap(), KeySlot::Recipient(b"body".to_vec()));
    assert_eq!(header::slot_label(&slot[7..]).unwrap(), "laptop");
    let recipient = KeySlot::Recipient(b"body".to_vec());
    assert_eq!(
        header::encode_labeled_slot(&recipient, "laptop", MIN_KEY_SLOT_LEN),
        slot,
        "the writer's bytes"
    );
    assert_eq!(header::decode_labeled_slot(&slot).unwrap(), (recipient, "laptop".to_owned()));
    slot[8] = 0x1b;
    assert!(decode_slot(&slot).is_err(), "a control character in a label");
    slot[8] = b'l';
    slot[7] = 250;
    assert!(decode_slot(&slot).is_err(), "a label past the slot's end");
}

#[test]
fn golden_header_prefix_and_sizes() {
    let golden =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/v3-balanced.lbox")).unwrap();
    let prefix: &[u8; HEADER_PREFIX_LEN] = golden[..HEADER_PREFIX_LEN].try_into().unwrap();
    assert_eq!(hex(prefix), "894c424f580d0a1a03000000ac8ea12e935f887f3d748dec70d5dd6e10000001");
    assert_eq!(HeaderPrefix::decode(prefix).unwrap().encode(), *prefix);
    assert_eq!(MIN_DATA_START, 4128);
    assert_eq!((FRAME_LEN, TRAILER_LEN, trailer::TRAILER_CORE_LEN), (20, 216, 196));
    assert_eq!(SESSION_HEADER_CLEAR_LEN, 64);
}

/// Salt `20 21 … 3f`.
fn salt() -> [u8; SESSION_SALT_LEN] {
    std::array::from_fn(|i| 0x20 + i as u8)
}

/// The record of the vectors: session 1, `nightly`, one signer `k1`.
fn nightly_record(kind: SessionKind, state: u64) -> SessionRecord {
    let summary = Summary {
        created_ns: 1_764_633_600_000_000_000,
        kind,
        label: "nightly".into(),
        stored: 1,
        removed: 0,
        entries: 3,
        signers: vec![b"k1".to_vec()],
        state,
    };
    SessionRecord {
        number: 1,
        salt: salt(),
        first_page: 2,
        stream_start: 4096,
        header_offset: 5000,
        pages: TreeTop::default(),
        summary,
    }
}

/// The first session's record of an archive holding nothing: the
/// nightly record renumbered 0, at the start, unlabelled and empty.
fn first_session_record() -> SessionRecord {
    let nightly = nightly_record(SessionKind::Change, 0);
    SessionRecord {
        number: 0,
        first_page: 0,
        stream_start: 0,
        header_offset: 4128,
        summary: Summary {
            label: String::new(),
            stored: 0,
            entries: 0,
            signers: Vec::new(),
            ..nightly.summary
        },
        ..nightly
    }
}

#[test]
fn session_record_and_root() {
    let record = nightly_record(SessionKind::Change, 0);
    let top = SessionsTop { count: 1, forest: Vec::new(), pending: vec![record] };
    let mut e = codec::Encoder::default();
    top.encode(&mut e);
    let expected = concat!(
        "01000000", // session_count
        "00",       // forest_count
        "01",       // pending_count
        "01000000 202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
        "0200000000000000 0010000000000000 8813000000000000 00 00000000",
        "0000b8e6e83c7d18 0000 07000000 6e696768746c79",
        "0100000000000000 0000000000000000 0300000000000000 01 02000000 6b31",
    );
    assert_eq!(hex(&e.buf), expected.replace(' ', ""));
    let mut d = codec::Decoder::new(&e.buf, "sessions");
    assert_eq!(SessionsTop::decode(&mut d).unwrap(), top);

    let first = first_session_record();
    let root = Root {
        page_count: 0,
        stream_len: 0,
        entry_count: 0,
        sessions: SessionsTop { count: 1, forest: Vec::new(), pending: vec![first] },
        runs: vec![Run { session: 0, salt: salt(), top: TreeTop::default(), chunks: TreeTop::default() }],
    };
    let expected = concat!(
        "000000000000000000000000000000000000000000000000 01000000 00 01",
        "00000000 202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
        "0000000000000000 0000000000000000 2010000000000000 00 00000000",
        "0000b8e6e83c7d18 0000 00000000",
        "0000000000000000 0000000000000000 0000000000000000 00",
        "01 00000000 202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f 00 00000000",
    );
    assert_eq!(hex(&root.encode()), expected.replace(' ', ""));
    assert_eq!(Root::decode(&root.encode()).unwrap(), root);
}

/// A compaction's record also names the state it holds (§3.7): state 7
/// kept by a retention, the rest as in [`session_record_and_root`]'s.
#[test]
fn compaction_record_names_its_state() {
    let record = nightly_record(SessionKind::Compaction, 7);
    let top = SessionsTop { count: 1, forest: Vec::new(), pending: vec![record] };
    let mut e = codec::Encoder::default();
    top.encode(&mut e);
    let expected = concat!(
        "01000000 00 01",
        "01000000 202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
        "0200000000000000 0010000000000000 8813000000000000 00 00000000",
        "0000b8e6e83c7d18 0200 07000000 6e696768746c79",
        "0100000000000000 0000000000000000 0300000000000000 01 02000000 6b31",
        "0700000000000000",
    );
    assert_eq!(hex(&e.buf), expected.replace(' ', ""));
    let mut d = codec::Decoder::new(&e.buf, "sessions");
    assert_eq!(SessionsTop::decode(&mut d).unwrap(), top);
    // A compaction holding state 0 holds nothing a user made.
    let zero = hex(&e.buf).replace("0700000000000000", "0000000000000000");
    let bytes: Vec<u8> =
        (0..zero.len()).step_by(2).map(|i| u8::from_str_radix(&zero[i..i + 2], 16).unwrap()).collect();
    assert!(SessionsTop::decode(&mut codec::Decoder::new(&bytes, "sessions")).is_err());
}

/// The AADs of the three slot kinds (§3.3, §3.3b, §3.3c), as Python
/// built them from the spec: each label keeps its `v2` text, and
/// `version` is the slot layout's, `03 00`, in archives of version 3 and 4
/// alike (a compaction to version 4 keeps the slots byte for byte).
#[test]
fn slot_aads_hold_the_format_version() {
    assert_eq!((SLOT_AAD_VERSION, VERSION), (3, 4));
    let salt: [u8; KDF_SALT_LEN] = std::array::from_fn(|i| 0x30 + i as u8);
    let nonce: [u8; NONCE_LEN] = std::array::from_fn(|i| 0x50 + i as u8);
    let wrapped_key = [0; KEY_LEN + TAG_LEN];
    let password = PasswordSlot { m_kib: 8, t: 1, p: 1, salt, nonce, wrapped_key };
    assert_eq!(
        hex(&password.aad(&ID)),
        concat!(
            "72657661756c742d6c6f636b626f78207632206b657920736c6f74 894c424f580d0a1a 0300",
            "000102030405060708090a0b0c0d0e0f 01 08000000 01000000 01000000",
            "303132333435363738393a3b3c3d3e3f 505152535455565758595a5b",
        )
        .replace(' ', "")
    );
    assert_eq!(password.aad(&ID).len(), 94);
    let key_file = KeyFileSlot { salt, nonce, wrapped_key };
    assert_eq!(
        hex(&key_file.aad(&ID)),
        concat!(
            "72657661756c742d6c6f636b626f78207632206b65792d66696c6520736c6f74 894c424f580d0a1a 0300",
            "000102030405060708090a0b0c0d0e0f 03",
            "303132333435363738393a3b3c3d3e3f 505152535455565758595a5b",
        )
        .replace(' ', "")
    );
    assert_eq!(key_file.aad(&ID).len(), 87);
    assert_eq!(
        hex(&recipient_slot_aad(&ID)),
        concat!(
            "72657661756c742d6c6f636b626f7820763220726563697069656e7420736c6f74 894c424f580d0a1a 0300",
            "000102030405060708090a0b0c0d0e0f 02",
        )
        .replace(' ', "")
    );
    assert_eq!(recipient_slot_aad(&ID).len(), 60);
}

/// §3.6's table of counts: a count is read when the bytes after it hold
/// that many items of the smallest size (6, 49, 53), and refused as
/// larger than its node with one more, before anything is allocated, even
/// with `min − 1` bytes to spare.
#[test]
fn counts_are_bounded_by_their_smallest_items() {
    // `head || count u32 || item || spare zero bytes`
    let node = |head: &[u8], count: u32, item: &[u8], spare: usize| {
        let mut e = codec::Encoder::default();
        e.bytes(head).u32(count).bytes(item).bytes(&vec![0; spare]);
        e.buf
    };
    let mut deletion = codec::Encoder::default();
    deletion.u8(5).var_bytes(b"a");
    let mut page = codec::Encoder::default();
    page.u64(5000).u32(116).u32(100).u8(0).bytes(&[0; HASH_LEN]);
    let mut child = codec::Encoder::default();
    child.var_bytes(b"").u64(5000).u32(116).u32(100).u8(0).bytes(&[0; HASH_LEN]);
    type Decode = fn(&[u8]) -> Result<(), DecodeError>;
    let decoders: [(&[u8], &[u8], Decode); 3] = [
        (&[], &deletion.buf, |b| EntriesLeaf::decode(b).map(drop)),
        (&[0; 16], &page.buf, |b| PagesLeaf::decode(b).map(drop)),
        (&[0; 8], &child.buf, |b| Internal::decode(b).map(drop)),
    ];
    for (head, item, decode) in decoders {
        assert!(decode(&node(head, 1, item, 0)).is_ok(), "{} bytes", item.len());
        let err = decode(&node(head, 2, item, item.len() - 1)).unwrap_err();
        assert!(err.to_string().contains("count larger than the node"), "{err}");
    }
    assert_eq!((deletion.buf.len(), page.buf.len(), child.buf.len()), (6, 49, 53));
}

/// Format v4's chunked file (§3.5), chunk list record (§3.5c), chunk index
/// leaf (§3.6b) and a root's chunk index section (§3.7), byte for byte.
#[test]
fn chunked_file_chunk_list_and_chunk_index() {
    let entry = Entry {
        path: b"db".to_vec(),
        kind: EntryKind::File { size: 300, sha256: [0x44; 32] },
        meta: Metadata::new(0o644, 0, 0, 0, 0),
        extent: Some(Extent { chunks: 1, ..Extent::whole(4396, 300, false) }),
        sparse: None,
    };
    let leaf = EntriesLeaf::encode(&[Record::Put(entry.clone())]);
    let expected = concat!(
        "01000000 02 02000000 6462 a4010000 00000000 00000000 0000000000000000 00000000",
        "2c01000000000000 2c11000000000000",
        "4444444444444444444444444444444444444444444444444444444444444444 02 01000000",
    );
    assert_eq!(hex(&leaf), expected.replace(' ', ""));
    assert_eq!(EntriesLeaf::decode(&leaf).unwrap().entries, [Record::Put(entry)]);

    let id: [u8; 32] = std::array::from_fn(|i| 0xa0 + i as u8);
    let chunk = ChunkRef { offset: 4096, len: 300, id };
    let list = encode_chunk_list(&[chunk]);
    let expected =
        "0010000000000000 2c010000 a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf";
    assert_eq!(hex(&list), expected.replace(' ', ""));
    assert_eq!(decode_chunk_list(&list, 4396, 1, 300).unwrap(), [chunk]);

    let entries = [ChunkEntry { id: [0; 32], offset: 0, len: 1 }, ChunkEntry { id, offset: 4096, len: 300 }];
    let expected = concat!(
        "02000000",
        "0000000000000000000000000000000000000000000000000000000000000000 0000000000000000 01000000",
        "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf 0010000000000000 2c010000",
    );
    assert_eq!(hex(&ChunksLeaf::encode(&entries)), expected.replace(' ', ""));
    assert_eq!(ChunksLeaf::decode(&ChunksLeaf::encode(&entries)).unwrap().entries, entries);

    // The root of `session_record_and_root` with a chunk index of one leaf.
    let record = first_session_record();
    let leaf_child = Child {
        first_key: vec![0; 32],
        offset: 8192,
        stored_len: 120,
        plain_len: 92,
        codec: Codec::Zstd,
        hash: [0x33; 32],
    };
    let root = Root {
        page_count: 0,
        stream_len: 0,
        entry_count: 0,
        sessions: SessionsTop { count: 1, forest: Vec::new(), pending: vec![record] },
        runs: vec![Run {
            session: 0,
            salt: salt(),
            top: TreeTop::default(),
            chunks: TreeTop { height: 1, children: vec![leaf_child] },
        }],
    };
    let bytes = root.encode();
    let section = concat!(
        "01 01 01000000 20000000 0000000000000000000000000000000000000000000000000000000000000000",
        "0020000000000000 78000000 5c000000 01",
        "3333333333333333333333333333333333333333333333333333333333333333",
    )
    .replace(' ', "");
    assert!(hex(&bytes).ends_with(&section), "{}", hex(&bytes));
    assert_eq!(Root::decode(&bytes).unwrap(), root);
}
