//! `lockbox --version` names the AEAD implementation that seals and opens
//! pages and the ChaCha20 backend under RustCrypto's, and the binary the
//! workspace builds has the AVX-512 one where the CPU does: checked against
//! the CPU's own flags in /proc/cpuinfo, not against the library's
//! detection. Archives written on one AEAD backend read on the other,
//! the golden ones included.

use std::path::{Path, PathBuf};

use crate::util::{code, create_cmd, lockbox, ok, run, stderr};

/// The x86 flags of the first CPU in /proc/cpuinfo, or `None` off x86 or
/// Linux.
fn cpu_flags() -> Option<Vec<String>> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("flags"))?;
    Some(line.split_once(':')?.1.split_whitespace().map(str::to_owned).collect())
}

#[test]
fn version_names_the_chacha20_backend_and_it_is_avx512_where_the_cpu_has_it() {
    let out = run(lockbox().arg("--version"));
    assert_eq!(code(&out), 0);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(concat!("lockbox ", env!("CARGO_PKG_VERSION"))));
    let aead = lines.next().expect("an AEAD line");
    let backend = lines.next().expect("a backend line");
    assert!(backend.ends_with("(built with the AVX-512 backend)"), "{backend}");

    let Some(flags) = cpu_flags() else {
        println!("skipped: no x86 flags in /proc/cpuinfo to check the backend against");
        return;
    };
    let has = |f: &str| flags.iter().any(|g| g == f);
    let want = if has("avx512f") && has("avx512vl") {
        "avx512"
    } else if has("avx2") {
        "avx2"
    } else {
        "sse2"
    };
    assert_eq!(backend, format!("chacha20 backend: {want} (built with the AVX-512 backend)"));
    let ring = if has("avx2") && has("bmi2") { "ring (avx2)" } else { "ring (sse4.1)" };
    assert_eq!(aead, format!("page AEAD: {ring}"));
    for (forced, named) in [("ring", ring.to_owned()), ("rustcrypto", format!("chacha20poly1305 ({want})"))] {
        let out = run(lockbox().env("LOCKBOX_AEAD", forced).arg("--version"));
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.lines().nth(1), Some(&*format!("page AEAD: {named}")), "LOCKBOX_AEAD={forced}");
    }

    // `-V` stays the one-line version scripts parse.
    let short = run(lockbox().arg("-V"));
    assert_eq!(
        String::from_utf8(short.stdout).unwrap(),
        concat!("lockbox ", env!("CARGO_PKG_VERSION"), "\n")
    );
}

/// `lockbox ARGS` on AEAD backend `aead`, which must succeed.
fn on(aead: &str, args: &[&str]) -> std::process::Output {
    ok(run(lockbox().env("LOCKBOX_AEAD", aead).args(args)))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An archive written with one backend extracts and verifies with the
/// other, for random (raw) and text (zstd) pages and small files.
#[test]
fn each_aead_backend_reads_what_the_other_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    corpora::write_text_file(&src.join("text"), 1, (2 << 20) + 7).unwrap();
    corpora::write_random_file(&src.join("random"), 2, (3 << 20) + 12_345).unwrap();
    std::fs::write(src.join("small"), b"a small file").unwrap();
    for (writer, reader) in [("ring", "rustcrypto"), ("rustcrypto", "ring")] {
        let archive = dir.path().join(format!("{writer}.lbox"));
        let out = run(create_cmd(&archive, &src, ".", &[]).env("LOCKBOX_AEAD", writer));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        on(reader, &["verify", "-q", s(&archive)]);
        let restore = dir.path().join(format!("from-{writer}"));
        std::fs::create_dir(&restore).unwrap();
        on(reader, &["extract", s(&archive), "-C", s(&restore)]);
        for name in ["text", "random", "small"] {
            let (want, got) =
                (std::fs::read(src.join(name)).unwrap(), std::fs::read(restore.join(name)).unwrap());
            assert!(want == got, "{name}: written on {writer}, read on {reader}");
        }
    }
}

/// The frozen v3 archives verify, and give the same listing, on both
/// backends.
#[test]
fn the_golden_archives_verify_on_both_aead_backends() {
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../revault_lockbox_api/tests/golden");
    let mut checked = 0;
    for entry in std::fs::read_dir(&golden).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !name.starts_with("v3-") {
            continue;
        }
        let listings: Vec<Vec<u8>> = ["ring", "rustcrypto"]
            .iter()
            .map(|aead| {
                let verify = run(lockbox()
                    .env("LOCKBOX_AEAD", aead)
                    .env("LOCKBOX_PASSWORD", "golden v3")
                    .args(["verify", "-q", s(&path)]));
                assert_eq!(code(&verify), 0, "{name} on {aead}: {}", stderr(&verify));
                let list = run(lockbox()
                    .env("LOCKBOX_AEAD", aead)
                    .env("LOCKBOX_PASSWORD", "golden v3")
                    .args(["list", "-l", s(&path)]));
                assert_eq!(code(&list), 0, "{name} on {aead}: {}", stderr(&list));
                list.stdout
            })
            .collect();
        assert_eq!(listings[0], listings[1], "{name}");
        checked += 1;
    }
    assert!(checked >= 7, "{checked} golden v3 archives");
}

/// The format version of the archive at `path` as `lockbox info` shows it.
fn info_version(path: &Path, password: &str) -> String {
    let out = ok(run(lockbox().env("LOCKBOX_PASSWORD", password).args(["info", s(path)])));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("format version")).expect("a format version line");
    line.rsplit(' ').next().unwrap().to_owned()
}

/// `info` names the archive's format version: 3 for a golden archive, and
/// still after an append to it; 4 for a new archive and after `compact`.
/// A version this lockbox does not read is refused in one line that names
/// it and the versions it reads (exit 3), with nothing left behind.
#[test]
fn info_names_the_format_version_and_a_newer_one_is_refused_in_one_line() {
    let work = tempfile::tempdir().unwrap();
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../revault_lockbox_api/tests/golden");
    let v3 = work.path().join("v3.lbox");
    std::fs::copy(golden.join("v3-balanced.lbox"), &v3).unwrap();
    assert_eq!(info_version(&v3, "golden v3"), "3");
    let src = work.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("new.txt"), "new").unwrap();
    ok(run(lockbox().env("LOCKBOX_PASSWORD", "golden v3").args(["add", s(&v3), "-C", s(&src), "new.txt"])));
    assert_eq!(info_version(&v3, "golden v3"), "3", "an append keeps version 3");
    ok(run(lockbox().env("LOCKBOX_PASSWORD", "golden v3").args(["compact", s(&v3)])));
    assert_eq!(info_version(&v3, "golden v3"), "4", "compact rewrites as version 4");

    let new = work.path().join("new.lbox");
    ok(run(&mut create_cmd(&new, &src, ".", &[])));
    assert_eq!(info_version(&new, crate::util::PASSWORD), "4");

    // A version 5 archive: its prefix and its trailer say 5 (a prefix alone
    // that says 5 is damage, read through the header copy, FORMAT.md §3.11).
    let mut bytes = std::fs::read(&new).unwrap();
    bytes[8..10].copy_from_slice(&5u16.to_le_bytes());
    let trailer = bytes.len() - 216;
    bytes[trailer + 8..trailer + 10].copy_from_slice(&5u16.to_le_bytes());
    let v5 = work.path().join("v5.lbox");
    std::fs::write(&v5, &bytes).unwrap();
    for command in ["info", "list", "verify"] {
        let out = run(lockbox().args([command, s(&v5)]));
        assert_eq!(code(&out), 3, "{command}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{command}: {err}");
        assert!(
            err.contains("unsupported archive format version 5 (this lockbox reads versions 3 and 4"),
            "{command}: {err}"
        );
    }
    let dest = work.path().join("out");
    let out = run(lockbox().args(["extract", s(&v5), "-C"]).arg(&dest));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(!dest.exists() || std::fs::read_dir(&dest).unwrap().next().is_none(), "extract left files");
}
