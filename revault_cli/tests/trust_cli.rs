//! What a hostile archive's author (or anyone who can change the file) can
//! make a reader pay or believe, through the real `lockbox` binary on real
//! files: the KDF cost of an unauthenticated slot table (issue 27, case 3).

use std::fs;
use std::path::Path;

use tempfile::TempDir;

use crate::util::{code, create_cmd, lockbox, ok, run, stderr};

/// Offset of the key-slot table, and of `slot_len` in the header (FORMAT.md §3.1).
const SLOTS_AT: usize = 32;
const SLOT_LEN_AT: usize = 30;

/// A small archive at the cheap KDF cost, its password slot in slot 0.
fn archive(work: &TempDir) -> std::path::PathBuf {
    fs::write(work.path().join("a.txt"), b"hello").unwrap();
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, work.path(), "a.txt", &[])));
    archive
}

/// Rewrites the slot table of `archive` without the password, as anyone who
/// can write the file can: slots 0 to `dear - 1` become copies of the real
/// password slot with Argon2id cost `m_kib` × `t` (their wrapped keys no
/// longer open, since the parameters are bound into the slot's AAD), and
/// the real slot moves to slot `dear`.
fn raise_slot_costs(archive: &Path, dear: usize, m_kib: u32, t: u32) {
    let mut bytes = fs::read(archive).unwrap();
    let slot_len = usize::from(u16::from_le_bytes([bytes[SLOT_LEN_AT], bytes[SLOT_LEN_AT + 1]]));
    let real = bytes[SLOTS_AT..SLOTS_AT + slot_len].to_vec();
    assert_eq!(real[0], 1, "slot 0 is the password slot");
    let mut hostile = real.clone();
    // kind u8 || body_len u16 || m_kib u32 || t u32 || p u32 || ...
    hostile[3..7].copy_from_slice(&m_kib.to_le_bytes());
    hostile[7..11].copy_from_slice(&t.to_le_bytes());
    for i in 0..dear {
        bytes[SLOTS_AT + i * slot_len..SLOTS_AT + (i + 1) * slot_len].copy_from_slice(&hostile);
    }
    bytes[SLOTS_AT + dear * slot_len..SLOTS_AT + (dear + 1) * slot_len].copy_from_slice(&real);
    fs::write(archive, bytes).unwrap();
}

#[test]
fn slots_raised_to_the_kdf_caps_cost_nothing_before_the_cheap_real_slot() {
    let work = TempDir::new().unwrap();
    let archive = archive(&work);
    // Four slots at the caps: 1 GiB × 4 passes each, 12.5 s and 1 GiB
    // before "wrong password" when tried in table order; the real slot is
    // the fifth, which a reader trying four in order never reached.
    raise_slot_costs(&archive, 4, 1 << 20, 4);
    let out = ok(run(lockbox().arg("list").arg(&archive)));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a.txt\n");

    let out = run(lockbox().env("LOCKBOX_PASSWORD", "wrong").arg("list").arg(&archive));
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    assert!(err.contains("password slot 0 asks for 1024 MiB × 4 passes"), "{err}");
    assert!(err.contains("budget of 1024 MiB × passes") && err.contains("--kdf-budget"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line, the hint in it: {err}");
}

#[test]
fn kdf_budget_lets_an_open_pay_for_a_dearer_slot() {
    let work = TempDir::new().unwrap();
    let archive = archive(&work);
    // 64 MiB × 17 passes: just over the default budget of 1024 MiB × passes.
    raise_slot_costs(&archive, 1, 64 << 10, 17);
    for command in ["list", "verify", "info"] {
        let out = run(lockbox().env("LOCKBOX_PASSWORD", "wrong").arg(command).arg(&archive));
        assert_eq!(code(&out), 3, "{command}: {}", stderr(&out));
        assert!(stderr(&out).contains("password slot 0 asks for 64 MiB × 17 passes"), "{}", stderr(&out));
    }
    // With room for it the slot is tried (and fails: its cost was changed).
    let out =
        run(lockbox().env("LOCKBOX_PASSWORD", "wrong").args(["--kdf-budget", "1100", "list"]).arg(&archive));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("wrong password"), "{}", stderr(&out));
    // The right password opens the real slot, the cheapest, whatever the budget.
    ok(run(lockbox().args(["list", "--kdf-budget", "1"]).arg(&archive)));
    let out = run(lockbox().args(["list", "--kdf-budget", "0"]).arg(&archive));
    assert_eq!(code(&out), 2, "a budget of 0 is refused: {}", stderr(&out));
}

/// Archives (password `hostile`) whose entry at the path given `cat`
/// printed with exit code 0 where `list`, `verify` and `extract` exit 3;
/// made by the library's `lookup_vectors` (issue 27, case 4).
const LOOKUP_VECTORS: [(&str, &str); 5] = [
    ("lookup-below-symlink", "d/x"),
    ("lookup-below-file", "f/x"),
    ("lookup-link-to-later", "h"),
    ("lookup-overlap", "b"),
    ("lookup-descending", "d"),
];

#[test]
fn a_lookup_refuses_what_a_walk_refuses_on_its_way() {
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../revault_lockbox_api/tests/vectors/hostile");
    let work = TempDir::new().unwrap();
    for (name, path) in LOOKUP_VECTORS {
        let archive = vectors.join(format!("{name}.lbox"));
        let dst = work.path().join(name);
        fs::create_dir(&dst).unwrap();
        let runs: [(&str, Vec<&std::ffi::OsStr>); 4] = [
            ("cat", vec![path.as_ref()]),
            ("extract", vec![path.as_ref(), "-C".as_ref(), dst.as_os_str()]),
            ("list", vec![]),
            ("verify", vec![]),
        ];
        for (command, args) in runs {
            let out =
                run(lockbox().env("LOCKBOX_PASSWORD", "hostile").arg(command).arg(&archive).args(&args));
            let err = stderr(&out);
            assert_eq!(code(&out), 3, "{name} {command}: {err}");
            assert!(err.starts_with("lockbox: ") && err.lines().count() == 1, "{name} {command}: {err}");
            if command == "cat" {
                let why = ["lies below", "hard link", "overlap"];
                assert!(why.iter().any(|w| err.contains(w)), "{name}: refused for another reason: {err}");
                assert!(out.stdout.is_empty(), "{name}: cat printed {:?}", out.stdout);
            }
        }
        assert_eq!(fs::read_dir(&dst).unwrap().count(), 0, "{name}: extract wrote something");
    }
}

#[test]
fn implicit_parents_are_bounded_by_the_archive_size() {
    let archive = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../revault_lockbox_api/tests/vectors/hostile/implicit-parents.lbox");
    let work = TempDir::new().unwrap();
    let hostile = || {
        let mut cmd = lockbox();
        cmd.env("LOCKBOX_PASSWORD", "hostile");
        cmd
    };
    let out = run(hostile().arg("extract").arg(&archive).arg("-C").arg(work.path()));
    let err = stderr(&out);
    assert_eq!(code(&out), 1, "{err}");
    assert!(
        err.contains("more than 4096 directories it does not list") && err.contains("--max-implicit-dirs"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(fs::read_dir(work.path()).unwrap().count(), 0, "nothing written");
    ok(run(hostile()
        .args(["extract", "--max-implicit-dirs", "8192", "--no-sync"])
        .arg(&archive)
        .arg("-C")
        .arg(work.path())));
    assert_eq!(fs::read_dir(work.path()).unwrap().count(), 8, "t0 to t7");
}

/// A few-KB archive declaring a sparse file of `size` bytes with 4 KiB of
/// data at each end, written with the library as a hostile author (or
/// anyone) can.
fn huge_sparse(work: &TempDir, size: u64) -> std::path::PathBuf {
    use revault_lockbox_api::create::Metadata;
    use revault_lockbox_api::read::SparseMap;
    use revault_lockbox_api::{ArchiveWriter, CreateOptions, KdfParams, Password};
    let password = Password::from(crate::util::PASSWORD);
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
    let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
    let map = SparseMap::new(vec![(0, 4096), (size - 4096, 4096)], size).unwrap();
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    w.add_sparse_file("huge", &Metadata::new(0o644, 0, 0, 0, 0), map, size, false, &data[..]).unwrap();
    let archive = work.path().join("huge.lbox");
    fs::write(&archive, w.finish().unwrap()).unwrap();
    archive
}

/// Issue 27 case 2: verify, extract and cat of a small archive declaring a
/// 1 PiB sparse file cost what it stores (the digest covers the map and
/// the stored bytes, not the holes); cat still emits the logical bytes.
/// Before, each hashed 1 PiB of zeros (weeks at 0.7 GB/s).
#[test]
fn a_small_archive_declaring_a_1_pib_sparse_file_costs_what_it_stores() {
    let work = TempDir::new().unwrap();
    const PIB: u64 = 1 << 50;
    let archive = huge_sparse(&work, PIB);
    let len = fs::metadata(&archive).unwrap().len();
    assert!(len < 16 << 10, "{len} bytes");
    let started = std::time::Instant::now();
    ok(run(lockbox().arg("verify").arg(&archive)));
    // cat emits the logical bytes: the first 4 KiB of data, then zeros.
    let script = format!(
        "LOCKBOX_PASSWORD='{}' {} cat {} huge | head -c 1048576 | od -An -tx1 | sort -u | wc -l",
        crate::util::PASSWORD,
        env!("CARGO_BIN_EXE_lockbox"),
        archive.display()
    );
    let out = std::process::Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let distinct: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(distinct > 2, "data then zeros: {distinct} distinct lines");
    // Extract writes holes as holes: a 1 PiB file where the file system
    // takes one (tmpfs), else one clear line ("File too large") and
    // nothing left behind.
    let dest = work.path().join("dest");
    fs::create_dir(&dest).unwrap();
    let out = run(lockbox().arg("extract").arg("-C").arg(&dest).arg(&archive));
    if code(&out) == 0 {
        assert_eq!(fs::metadata(dest.join("huge")).unwrap().len(), PIB);
    } else {
        assert_eq!(code(&out), 1, "{}", stderr(&out));
        assert!(
            stderr(&out).contains("File too large") && stderr(&out).lines().count() == 1,
            "{}",
            stderr(&out)
        );
        assert_eq!(fs::read_dir(&dest).unwrap().count(), 0, "nothing left behind");
    }
    let elapsed = started.elapsed();
    assert!(elapsed.as_secs() < 60, "{elapsed:?}: in proportion to what is stored");
}

/// Extraction of a sparse file an ordinary file system holds (8 TiB):
/// holes stay holes, the data lands at its offsets, and the stored
/// digest is not `sha256sum` of the file (README says so).
#[test]
fn an_8_tib_sparse_file_extracts_as_holes_at_once() {
    let work = TempDir::new().unwrap();
    const SIZE: u64 = 8 << 40;
    let archive = huge_sparse(&work, SIZE);
    let dest = work.path().join("dest");
    fs::create_dir(&dest).unwrap();
    ok(run(lockbox().arg("extract").arg("-C").arg(&dest).arg(&archive)));
    let file = dest.join("huge");
    let md = fs::metadata(&file).unwrap();
    assert_eq!(md.len(), SIZE);
    assert!(std::os::unix::fs::MetadataExt::blocks(&md) * 512 < 1 << 20, "holes written as holes");
    let mut tail = [0u8; 4096];
    std::os::unix::fs::FileExt::read_exact_at(&fs::File::open(&file).unwrap(), &mut tail, SIZE - 4096)
        .unwrap();
    let want: Vec<u8> = (4096..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    assert_eq!(&tail[..], &want[..]);
}
