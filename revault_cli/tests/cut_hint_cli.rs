//! A cut archive (its trailer gone, so nothing commits to its pages):
//! `list`, `info`, `log` and plain `extract` fail in one line that says
//! which commands recover what can be proven (they said "trailer …
//! failed authentication" and nothing more, while a flipped byte in a
//! data page got its hint).

use std::fs;

use crate::util::{code, create_cmd, lockbox, ok, run, stderr};

#[test]
fn a_cut_archive_names_the_commands_that_recover_it() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir(&src).unwrap();
    for i in 0..20 {
        fs::write(src.join(format!("f{i:02}")), format!("file {i}\n").repeat(500)).unwrap();
    }
    let whole = work.path().join("whole.lbox");
    ok(run(&mut create_cmd(&whole, &src, ".", &[])));
    let bytes = fs::read(&whole).unwrap();
    let cut = work.path().join("cut.lbox");
    fs::write(&cut, &bytes[..bytes.len() - 200]).unwrap();
    let out = work.path().join("out");
    fs::create_dir(&out).unwrap();
    let commands: [&[&str]; 4] = [&["list"], &["info"], &["log"], &["extract", "-C", out.to_str().unwrap()]];
    for args in commands {
        let failed = run(lockbox().args(args).arg(&cut));
        let err = stderr(&failed);
        assert_eq!(code(&failed), 3, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("trailer"), "{args:?}: {err}");
        for recovers in ["verify", "extract --keep-going", "repair"] {
            assert!(err.contains(recovers), "{args:?} names {recovers}: {err}");
        }
    }
    // What the hint promises: the scan gets round the cut.
    let kept = run(lockbox().args(["extract", "--keep-going", "-C"]).arg(&out).arg(&cut));
    assert_eq!(code(&kept), 3, "{}", stderr(&kept));
    assert!(
        fs::read_dir(&out).unwrap().count() > 0,
        "extract --keep-going restored nothing: {}",
        stderr(&kept)
    );
}
