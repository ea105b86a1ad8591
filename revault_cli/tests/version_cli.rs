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
