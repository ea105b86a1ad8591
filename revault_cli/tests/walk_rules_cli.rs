//! The walk rules an archive records (FORMAT.md §3.9b): `add` and
//! `update` walk as the archive was made (its excludes, `--exclude-vcs`,
//! `--xattrs`...) unless `--no-recorded-rules`, add the rules given on
//! their own command line, and a compaction carries them over. Before
//! they were recorded, the first `update` of a daily backup stored `.git/`
//! and `*.o` again and dropped the xattrs of what it stored again.

use std::fs;
use std::path::Path;
use std::process::Command as StdCommand;

use crate::append_cli::{list, ok, s};
use crate::util::{skip, Need, CHEAP};

/// `dir/tree`: sources, an object file and a git directory.
fn tree(dir: &Path) -> std::path::PathBuf {
    let tree = dir.join("tree");
    fs::create_dir_all(tree.join(".git/objects")).unwrap();
    fs::write(tree.join(".git/HEAD"), b"ref: refs/heads/main\n").unwrap();
    fs::write(tree.join("a.c"), b"int main;\n").unwrap();
    fs::write(tree.join("a.o"), b"\x7fELF").unwrap();
    tree
}

/// What a day's work adds to `tree`: new objects, a new git object, a new
/// source, an edited one (a later mtime, another size).
fn day_of_work(tree: &Path) {
    fs::write(tree.join(".git/objects/ab"), b"blob").unwrap();
    fs::write(tree.join("b.o"), b"\x7fELF2").unwrap();
    fs::write(tree.join("b.c"), b"int b;\n").unwrap();
    fs::write(tree.join("a.c"), b"int main(void) { return 0; }\n").unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    fs::File::options().write(true).open(tree.join("a.c")).unwrap().set_modified(later).unwrap();
}

fn left_out(names: &[String]) -> Vec<&String> {
    names.iter().filter(|n| n.contains(".git") || n.ends_with(".o")).collect()
}

#[test]
fn update_and_add_walk_by_the_rules_the_archive_was_made_with() {
    let work = tempfile::tempdir().unwrap();
    let tree = tree(work.path());
    let archive = work.path().join("a.lbox");
    let mut create = vec!["create", "-q", "-o", s(&archive), "-C", s(work.path())];
    create.extend(CHEAP);
    create.extend(["--exclude-vcs", "--exclude", "*.o", "tree"]);
    ok(&create);
    assert_eq!(left_out(&list(&archive)), Vec::<&String>::new(), "create");

    day_of_work(&tree);
    ok(&["update", "-q", s(&archive), "-C", s(work.path()), "tree"]);
    let names = list(&archive);
    assert_eq!(left_out(&names), Vec::<&String>::new(), "update stored what create left out");
    assert!(names.contains(&"tree/b.c".to_string()), "{names:?}");

    // `add` too, and a rule given to it adds to the recorded ones, which
    // the next update follows without being told.
    fs::write(tree.join("c.tmp"), b"scratch").unwrap();
    fs::write(tree.join("c.o"), b"obj").unwrap();
    ok(&["add", "-q", s(&archive), "-C", s(work.path()), "--exclude", "*.tmp", "tree"]);
    fs::write(tree.join("d.tmp"), b"scratch").unwrap();
    ok(&["update", "-q", s(&archive), "-C", s(work.path()), "tree"]);
    let names = list(&archive);
    assert_eq!(left_out(&names), Vec::<&String>::new(), "add or update stored what create left out");
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "the added rule was forgotten: {names:?}");

    // A compaction keeps the rules for the next update.
    ok(&["compact", "-q", s(&archive)]);
    fs::write(tree.join("e.o"), b"obj").unwrap();
    fs::write(tree.join("e.tmp"), b"tmp").unwrap();
    ok(&["update", "-q", s(&archive), "-C", s(work.path()), "tree"]);
    let names = list(&archive);
    assert_eq!(left_out(&names), Vec::<&String>::new(), "after compact");
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "after compact: {names:?}");

    // Told otherwise, an update walks by its own rules only.
    ok(&["add", "-q", s(&archive), "-C", s(work.path()), "--no-recorded-rules", "tree"]);
    let names = list(&archive);
    assert!(names.contains(&"tree/.git/HEAD".to_string()) && names.contains(&"tree/e.o".to_string()));
}

#[test]
fn update_keeps_the_xattrs_of_what_it_stores_again() {
    let work = tempfile::tempdir().unwrap();
    let tree = tree(work.path());
    let tagged = |value: &str| {
        StdCommand::new("setfattr")
            .args(["-n", "user.t", "-v", value])
            .arg(tree.join("a.c"))
            .status()
            .is_ok_and(|s| s.success())
    };
    if !tagged("one") {
        return skip(Need::Xattrs, "setfattr is missing or the file system takes no user xattrs");
    }
    let archive = work.path().join("a.lbox");
    let mut create = vec!["create", "-q", "-o", s(&archive), "-C", s(work.path())];
    create.extend(CHEAP);
    create.extend(["--exclude-vcs", "--xattrs", "--exclude", "*.o", "tree"]);
    ok(&create);
    day_of_work(&tree);
    assert!(tagged("two"));
    ok(&["update", "-q", s(&archive), "-C", s(work.path()), "tree"]);
    assert_eq!(left_out(&list(&archive)), Vec::<&String>::new());
    let dest = work.path().join("dest");
    fs::create_dir(&dest).unwrap();
    ok(&["extract", "-q", s(&archive), "-C", s(&dest), "--xattrs", "tree/a.c"]);
    let restored = dest.join("tree/a.c");
    assert_eq!(fs::read(&restored).unwrap(), b"int main(void) { return 0; }\n");
    let got =
        StdCommand::new("getfattr").args(["-n", "user.t", "--only-values"]).arg(&restored).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&got.stdout), "two", "the re-stored file lost its xattr");
}
