//! Archives on stdin (`-`), and `create` refusing an existing archive.

use std::fs;

use super::*;

#[test]
fn every_reading_command_takes_the_archive_on_stdin() {
    let (work, archive) = archived_tree();
    let bytes = fs::read(&archive).unwrap();
    let piped = |args: &[&str]| run(lockbox().args(args).write_stdin(bytes.clone()));
    let listed = piped(&["list", "-"]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    assert_eq!(
        String::from_utf8(listed.stdout).unwrap(),
        "tree\ntree/a.txt\ntree/link\ntree/sub\ntree/sub/b.log\ntree/sub/c.txt\n"
    );
    let cat = piped(&["cat", "-", "tree/sub/c.txt"]);
    assert_eq!(cat.stdout, b"gamma\n", "{}", stderr(&cat));
    let verified = piped(&["verify", "-"]);
    assert_eq!(code(&verified), 0, "{}", stderr(&verified));
    let info = piped(&["info", "-"]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("files"), "{}", stderr(&info));
    let exported = piped(&["export", "-", "tree/a.txt", "-o", "-"]);
    assert_eq!(code(&exported), 0, "{}", stderr(&exported));
    assert!(exported.stdout.windows(6).any(|w| w == b"alpha\n"), "the tar holds a.txt's content");
    let slots = piped(&["key", "list", "-"]);
    assert!(String::from_utf8_lossy(&slots.stdout).contains("password"), "{}", stderr(&slots));
    let dest = work.path().join("out");
    fs::create_dir(&dest).unwrap();
    let x = run(lockbox().args(["extract", "-", "-C"]).arg(&dest).write_stdin(bytes.clone()));
    assert_eq!(code(&x), 0, "{}", stderr(&x));
    assert_eq!(fs::read(dest.join("tree/sub/b.log")).unwrap(), b"beta\n");
    // No spooled copy is left in TMPDIR.
    let tmp = work.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let out = run(lockbox().args(["list", "-"]).env("TMPDIR", &tmp).write_stdin(bytes));
    assert_eq!(code(&out), 0);
    assert!(dir_names(&tmp).is_empty(), "{:?}", dir_names(&tmp));
}

#[test]
fn stdin_redirected_from_a_file_is_read_in_place() {
    let (_work, archive) = archived_tree();
    let out = run(lockbox().args(["list", "-"]).pipe_stdin(&archive).unwrap());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(), 6);
}

#[test]
fn damaged_or_empty_stdin_fails_cleanly() {
    let (_work, archive) = archived_tree();
    let mut bytes = fs::read(&archive).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    // Wherever the flip lands, verify exits 3 and names the archive on
    // stdin (first, or in its closing line after what it lost: a flip in
    // the chunk index, say), each finding a line.
    let out = run(lockbox().args(["verify", "-"]).write_stdin(bytes));
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    let (first, last) = (err.lines().next().unwrap_or(""), err.lines().last().unwrap_or(""));
    assert!(first.contains("archive on stdin") || last.contains("verifying archive on stdin"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.lines().all(|line| line.starts_with("lockbox: ")), "{err}");
    let half = fs::read(&archive).unwrap()[..100].to_vec();
    assert_fails(&run(lockbox().args(["list", "-"]).write_stdin(half)), 3, "opening archive on stdin");
    assert_fails(&run(lockbox().args(["list", "-"]).write_stdin(Vec::new())), 3, "opening archive on stdin");
}

#[test]
fn create_refuses_an_existing_archive_unless_overwrite() {
    let (work, archive) = archived_tree();
    let before = fs::read(&archive).unwrap();
    let create = |extra: &[&str]| create_tree(work.path(), &archive, extra);
    let out = create(&[]);
    assert_fails(&out, 1, "already exists (use --overwrite to replace it)");
    assert_eq!(fs::read(&archive).unwrap(), before, "the old archive is untouched");
    assert_eq!(dir_names(work.path()), ["a.lbox", "tree"], "no temporary file left");
    fs::write(work.path().join("tree/new.txt"), b"new").unwrap();
    let out = create(&["--overwrite"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = run(lockbox().arg("list").arg(&archive));
    assert!(String::from_utf8(listed.stdout).unwrap().contains("tree/new.txt"));
    // A dangling symbolic link in the archive's place counts as existing.
    let link = work.path().join("dangling.lbox");
    std::os::unix::fs::symlink("nowhere", &link).unwrap();
    let out =
        run(lockbox().arg("create").args(CHEAP).arg("-o").arg(&link).arg("-C").arg(work.path()).arg("tree"));
    assert_fails(&out, 1, "already exists");
    assert!(!work.path().join("nowhere").exists());
}
