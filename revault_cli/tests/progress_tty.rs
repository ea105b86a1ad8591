//! The progress bar as a terminal shows it (`script` gives lockbox a
//! pseudo-terminal for stdout and stderr): one vocabulary for every job,
//! "1 entry" not "1 entries", and none with `-q`.

use std::process::Command;

use crate::util::{skip, Need, CHEAP, PASSWORD};

/// What the terminal showed while `lockbox ARGS` ran under `script` in `dir`.
fn on_terminal(dir: &std::path::Path, args: &str) -> Option<String> {
    on_terminal_with(dir, args, &[])
}

/// [`on_terminal`] with `env` set too; `None` (skipped) without `script`.
pub fn on_terminal_with(dir: &std::path::Path, args: &str, env: &[(&str, &str)]) -> Option<String> {
    let line = format!("\"$LOCKBOX\" {args}");
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .current_dir(dir)
        .env("LOCKBOX", env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", PASSWORD)
        .envs(env.iter().copied())
        .output();
    match out {
        Ok(out) if out.status.success() => Some(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(out) => panic!("lockbox {args}: {}", String::from_utf8_lossy(&out.stdout)),
        Err(e) => {
            skip(Need::Tty, format!("script (util-linux) cannot run here ({e})"));
            None
        }
    }
}

#[test]
fn create_and_extract_count_entries_alike_and_quiet_shows_none() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("note"), b"x").unwrap();
    let create = format!("create {} -o a.lbox note", CHEAP.join(" "));
    let Some(shown) = on_terminal(work.path(), &create) else { return };
    assert!(shown.contains("1 entry") && !shown.contains("1 entries"), "{shown:?}");
    std::fs::create_dir(work.path().join("out")).unwrap();
    let Some(shown) = on_terminal(work.path(), "extract a.lbox -C out") else { return };
    assert!(shown.contains("1 entry") && !shown.contains("1 files"), "{shown:?}");
    let Some(shown) = on_terminal(work.path(), "extract -q --overwrite a.lbox -C out") else { return };
    assert!(!shown.contains("entry"), "-q draws no bar: {shown:?}");
}

/// The number in the last "N entries" (or "1 entry") the terminal showed.
fn last_count(shown: &str) -> u64 {
    let at = shown.rfind(" entr").unwrap_or_else(|| panic!("no count: {shown:?}"));
    let digits: String = shown[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().unwrap_or_else(|_| panic!("no count before {at}: {shown:?}"))
}

/// The bar's last frame ends its line (the prompt or the next output was
/// glued to it: "… 83731 entrieskernel.lbox: OK"), and create and extract
/// count the same entries for the same tree (extract counted files only:
/// "1501 entries" against "1403").
#[test]
fn the_last_frame_ends_its_line_and_create_and_extract_count_alike() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::create_dir_all(dir.join("d/sub")).unwrap();
    std::fs::write(dir.join("d/a"), vec![1u8; 100_000]).unwrap();
    std::fs::write(dir.join("d/sub/b"), b"b").unwrap();
    std::os::unix::fs::symlink("a", dir.join("d/link")).unwrap();
    std::fs::create_dir(dir.join("out")).unwrap();
    let create = format!("create {} -o a.lbox d; echo PROMPT", CHEAP.join(" "));
    let Some(created) = on_terminal(dir, &create) else { return };
    let Some(extracted) = on_terminal(dir, "extract a.lbox -C out; echo PROMPT") else { return };
    for shown in [&created, &extracted] {
        let before = &shown[..shown.rfind("PROMPT").unwrap()];
        assert!(before.ends_with('\n'), "the bar's last line runs into the next output: {shown:?}");
    }
    assert_eq!(last_count(&created), 5, "d, d/a, d/link, d/sub, d/sub/b: {created:?}");
    assert_eq!(last_count(&extracted), last_count(&created), "{extracted:?}");
}

#[test]
fn every_long_job_draws_the_same_bar_and_quiet_draws_none() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::write(dir.join("note"), vec![7u8; 300_000]).unwrap();
    std::fs::write(dir.join("more"), vec![9u8; 200_000]).unwrap();
    let created = crate::util::create_cmd(&dir.join("a.lbox"), dir, "note", &["-q"]).output().unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    // Jobs whose total is known before they start draw the bar with its
    // ETA (a repair reads every page first, as verify does).
    for job in
        ["add a.lbox more", "verify a.lbox", "export a.lbox -o out.tar", "compact a.lbox", "repair a.lbox"]
    {
        let Some(shown) = on_terminal(dir, job) else { return };
        assert!(shown.contains("ETA") && shown.contains("B/s") && shown.contains("entr"), "{job}: {shown:?}");
        assert!(!shown.contains("1 entries"), "{job}: {shown:?}");
    }
    // Those without one (an update, which finds what changed as it goes,
    // a removal) count entries and bytes, with no ETA.
    std::fs::write(dir.join("more"), vec![8u8; 250_000]).unwrap();
    for job in ["update a.lbox more", "rm a.lbox more"] {
        let Some(shown) = on_terminal(dir, job) else { return };
        assert!(shown.contains("B/s") && shown.contains("entr"), "{job}: {shown:?}");
        assert!(!shown.contains("ETA"), "{job}: {shown:?}");
    }
    for job in ["verify -q a.lbox", "compact -q a.lbox", "export -q a.lbox -o quiet.tar", "rm -q a.lbox note"]
    {
        let Some(shown) = on_terminal(dir, job) else { return };
        assert!(!shown.contains("B/s"), "-q draws no bar: {job}: {shown:?}");
    }
}

/// `mount`'s startup (the unlock and the opening) draws the stage "opening
/// ARCHIVE" on the terminal, then clears it while the mount serves.
#[test]
fn mount_startup_shows_the_opening_stage() {
    if !crate::mount_cli::have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::write(dir.join("note"), b"x").unwrap();
    let created = crate::util::create_cmd(&dir.join("a.lbox"), dir, "note", &["-q"]).output().unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let typescript = dir.join("typescript");
    // Mounted adds the mount point as `$1`; `script` draws the terminal.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "exec script -q -e -f -c \"$LOCKBOX mount a.lbox $1\" \"$TYPESCRIPT\"", "sh"])
        .current_dir(dir)
        .env("LOCKBOX", env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", PASSWORD)
        .env("TYPESCRIPT", &typescript)
        .stdout(std::process::Stdio::null());
    let mounted = crate::mount_cli::Mounted::spawn(cmd, dir);
    assert_eq!(std::fs::read(mounted.point.join("note")).unwrap(), b"x");
    let shown = String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).into_owned();
    assert!(shown.contains("opening a.lbox") && shown.contains('B'), "{shown:?}");
    drop(mounted);
}
