//! `lockbox --version` names the ChaCha20 backend that seals and opens
//! pages, and the binary the workspace builds has the AVX-512 one where the
//! CPU does: checked against the CPU's own flags in /proc/cpuinfo, not
//! against the library's detection.

use crate::util::{code, lockbox, run};

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

    // `-V` stays the one-line version scripts parse.
    let short = run(lockbox().arg("-V"));
    assert_eq!(
        String::from_utf8(short.stdout).unwrap(),
        concat!("lockbox ", env!("CARGO_PKG_VERSION"), "\n")
    );
}
