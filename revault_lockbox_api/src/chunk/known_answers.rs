//! The chunker's known-answer vectors (docs/DEDUP.md, "The chunker and
//! chunk ids"), checked against the code. The numbers were computed by an
//! independent implementation written from the spec, in Python
//! (`scripts/chunk-vectors.py`).

use super::*;

/// 8 MiB: the BLAKE3 XOF (hash mode) of this ASCII string.
const INPUT_SEED: &[u8] = b"revault-lockbox chunker test vector";
const INPUT_LEN: usize = 8 << 20;
/// Content key 00 01 .. 1f; archive id a0 a1 .. af.
fn content_key(first: u8) -> [u8; 32] {
    std::array::from_fn(|i| first + i as u8)
}
const ARCHIVE_ID: [u8; 16] =
    [0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf];

fn input() -> Vec<u8> {
    let mut data = vec![0; INPUT_LEN];
    blake3::Hasher::new().update(INPUT_SEED).finalize_xof().fill(&mut data);
    data
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Cuts `data` fed in `slice`-byte slices; returns each chunk's end and id.
fn chunk(keys: &ChunkKeys, params: ChunkParams, data: &[u8], slice: usize) -> Vec<(u64, ChunkId)> {
    let mut ids = ChunkIds::new(keys);
    let mut chunker = Chunker::new(keys, params);
    for part in data.chunks(slice) {
        chunker.feed(part, &mut ids);
    }
    chunker.finish(&mut ids);
    ids.chunks
}

#[test]
fn keys_input_cut_points_and_ids() {
    let data = input();
    assert_eq!(
        hex(blake3::hash(&data).as_bytes()),
        "c6776c395759deefff25d78fb8d4d542bfb523021b4a9262cd5e400d82a4ef14"
    );
    let keys = ChunkKeys::from_key_bytes(&content_key(0), &ARCHIVE_ID);
    assert_eq!(
        keys.gear()[..4],
        [0x2fb173b270ee321a, 0x9943133b3c583518, 0x1f8a69242b225aef, 0xfe8775f5812f5221]
    );
    assert_eq!(hex(keys.id_key()), "cffb6fa094abfd69f9729a4b901f0a7920792aea7ecea9e046e1e8d6f002a5f3");

    // Whole, in 1 MiB reads, and in odd slices: the same chunks.
    let default_ends = [
        305289, 715381, 979678, 1661960, 2139145, 2406106, 2682982, 3038429, 3325066, 3506183, 3928099,
        4240499, 4557812, 4720168, 5025837, 5348936, 5728884, 5999082, 6276890, 6615086, 7020626, 7244246,
        7577225, 7995060, 8226848, 8388608,
    ];
    let default_ids = [
        "eb9894f27807400b3583961b489d7d4b96c0440114a5a41c0a3904fbbfa02a64",
        "f4f077000e26c2371315b2d73006b63db47ca865227543d894521b6e9610590a",
        "45f6e2acaccac725420f32caf46ca70abac3d506a65113dea74941e22035f8c6",
    ];
    let large = ChunkParams::new(256 << 10, 1 << 20, 4 << 20).unwrap();
    let large_ends = [1230596, 2406106, 3506183, 4720168, 5999082, 7244246, 8388608];
    let large_ids = [
        "797a72eebf282a9467b36405dee8eb68d70180977bce63dc5f77f1a2e1b0b40a",
        "962781dc4536f64c216217c222772e734aee4bbfa9a3e5258cbbcfe3b7c05572",
        "944d6e8a4d4bbc554dc6cf4cf1b410942f25250ae5f779844bdbc786274f2202",
    ];
    for (params, ends, ids) in
        [(ChunkParams::default(), &default_ends[..], default_ids), (large, &large_ends[..], large_ids)]
    {
        for slice in [INPUT_LEN, 1 << 20, 65_537] {
            let chunks = chunk(&keys, params, &data, slice);
            assert_eq!(chunks.iter().map(|c| c.0).collect::<Vec<_>>(), ends, "{params} in slices of {slice}");
            for (got, want) in chunks.iter().zip(ids) {
                assert_eq!(got.1.to_string(), want);
            }
        }
    }

    let small = ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap();
    let chunks = chunk(&keys, small, &data[..64 << 10], 4096);
    let small_ends = [
        3905, 10687, 15559, 22959, 24778, 29516, 33903, 38579, 44990, 49964, 51538, 55680, 60107, 62529,
        65536,
    ];
    assert_eq!(chunks.iter().map(|c| c.0).collect::<Vec<_>>(), small_ends);
    let small_ids = [
        "ce47361a27ff040e7ce1b7245b8d41eba0d8300b1e6e06bd5cbe44a28d075a4d",
        "26d95f7128c0cbe4f37f370002b78a9b72d1ccd688cd6575f2481c41c1701bc4",
        "b66e20070b57ecd254283f82632a852b31f0fca3db36fb766f101622ef850a3c",
    ];
    for (got, want) in chunks.iter().zip(small_ids) {
        assert_eq!(got.1.to_string(), want);
    }

    let zeros = chunk(&keys, small, &[0; 20 << 10], 1000);
    assert_eq!(zeros.iter().map(|c| c.0).collect::<Vec<_>>(), [16384, 20480], "no cut: at max");
}

#[test]
fn another_content_key_gives_other_cut_points_and_ids() {
    let data = input();
    let keys = ChunkKeys::from_key_bytes(&content_key(1), &ARCHIVE_ID);
    let chunks = chunk(&keys, ChunkParams::default(), &data, 1 << 20);
    let ends = chunks.iter().map(|c| c.0).collect::<Vec<_>>();
    assert_eq!(
        ends,
        [
            233302, 558996, 766620, 1123743, 1416027, 1747187, 2210965, 2506400, 3006445, 3341868, 3661681,
            4019445, 4286867, 4620550, 4881122, 5197833, 5552075, 5828664, 6131678, 6399283, 6734675,
            7028696, 7309462, 7629740, 7918491, 8229132, 8388608
        ]
    );
    assert_ne!(chunks[0].1.to_string(), "eb9894f27807400b3583961b489d7d4b96c0440114a5a41c0a3904fbbfa02a64");
}
