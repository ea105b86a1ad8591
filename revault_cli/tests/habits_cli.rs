//! tar's and restic's habits a new user brings: `create -f ARCHIVE` (clap
//! answered with its tip "to pass '-f' as a value, use '-- -f'").

use crate::util::{code, lockbox, run, stderr, CHEAP};

#[test]
fn create_takes_f_for_the_archive_as_tar_does() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("note"), b"x").unwrap();
    let archive = work.path().join("x.lbox");
    let out = run(lockbox()
        .arg("create")
        .args(CHEAP)
        .arg("-f")
        .arg(&archive)
        .arg("-C")
        .arg(work.path())
        .arg("note"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = run(lockbox().arg("list").arg(&archive));
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "note\n", "{}", stderr(&listed));
}
