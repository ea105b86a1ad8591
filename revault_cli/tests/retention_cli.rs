//! `compact --keep-sessions N` / `--keep-within DURATION` and the calendar
//! rules (`--keep-daily N` and the others, issue 48) through the real
//! binary (issue 25, item 4): the kept states list and extract as before
//! with their numbers, times and labels, the earlier ones are refused in
//! one line, the size falls by at least what `info` predicted, `--sign`
//! signs the rewrite, and bad values change nothing.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use revault_lockbox_api::keys::KeyFile;
use revault_lockbox_api::{ArchiveUpdater, UpdateOptions};
use serde_json::Value;

use crate::util::{code, lockbox, stderr};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `lockbox --key-file KEY ARGS...`.
fn run(key: &Path, args: &[&str]) -> Output {
    lockbox().arg("--key-file").arg(key).args(args).output().expect("runs lockbox")
}

fn ok(key: &Path, args: &[&str]) -> String {
    let out = run(key, args);
    assert_eq!(code(&out), 0, "lockbox {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `(state, created_ns, label, entries)` of each state `log --json` lists.
fn logged(key: &Path, archive: &Path) -> Vec<(u64, i64, String, u64)> {
    json_lines(&ok(key, &["log", "--json", s(archive)]))
        .into_iter()
        .filter(|l| l["type"] == "session" && !l["state"].is_null())
        .map(|l| {
            let label = l["label"].as_str().unwrap().to_string();
            (
                l["state"].as_u64().unwrap(),
                l["created_ns"].as_i64().unwrap(),
                label,
                l["entries"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// What state `n` lists and extracts: `list -l` and every extracted file.
fn state(key: &Path, archive: &Path, dir: &Path, n: u64) -> (String, BTreeMap<PathBuf, Vec<u8>>) {
    let n = n.to_string();
    let listed = ok(key, &["list", "-l", "--full-time", "--utc", "--session", &n, s(archive)]);
    let out = dir.join(format!("x{n}"));
    fs::create_dir(&out).unwrap();
    ok(key, &["extract", "-q", "--session", &n, s(archive), "-C", s(&out)]);
    let files = fs::read_dir(&out)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.strip_prefix(&out).unwrap().to_path_buf(), fs::read(&p).unwrap())
        })
        .collect();
    fs::remove_dir_all(&out).unwrap();
    (listed, files)
}

/// A key file and an archive of `n` single-file sessions (`f0000` first,
/// each labelled `add N`), the adds made through the library's updater.
fn many_sessions(dir: &Path, n: u32) -> (PathBuf, PathBuf) {
    let key = dir.join("k");
    let made = lockbox().args(["keygen", "--symmetric", "-o", s(&key)]).output().unwrap();
    assert_eq!(code(&made), 0, "{}", stderr(&made));
    let src = dir.join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("f0000"), b"file 0\n").unwrap();
    let archive = dir.join("a.lbox");
    ok(&key, &["create", "-q", "-m", "add 0", "-o", s(&archive), "-C", s(&src), "f0000"]);
    let key_file = KeyFile::read(&key).unwrap();
    for i in 1..n {
        let name = format!("f{i:04}");
        fs::write(src.join(&name), format!("file {i}\n").repeat(i as usize % 7 + 1)).unwrap();
        // Waits: a child another test forks holds our lock until it execs.
        let options = UpdateOptions::new().threads(1).wait(true).label(format!("add {i}"));
        ArchiveUpdater::open(&archive, &key_file, options).unwrap().add(&src, &[name.into()]).unwrap();
    }
    (key, archive)
}

/// Issue 25's check: 1,000 single-file adds, `compact --keep-sessions 5`.
#[test]
fn keeping_the_last_5_of_1000_states_reads_them_back_and_reclaims_what_info_said() {
    let dir = tempfile::tempdir().unwrap();
    let (key, archive) = many_sessions(dir.path(), 1000);
    let before = logged(&key, &archive);
    assert_eq!(before.len(), 1000);
    let states: Vec<_> = (996..=1000).map(|n| state(&key, &archive, dir.path(), n)).collect();
    let size = fs::metadata(&archive).unwrap().len();

    let info = json_lines(&ok(&key, &["info", "--json", "--keep-sessions", "5", s(&archive)]));
    let predicted = &info[0]["reclaimable"];
    assert_eq!(
        (predicted["first_state"].as_u64(), predicted["last_state"].as_u64()),
        (Some(996), Some(1000))
    );
    let predicted = predicted["bytes"].as_u64().unwrap();
    let text = ok(&key, &["info", "--keep-sessions", "5", s(&archive)]);
    let line = format!("at least {predicted} bytes by compact --keep-sessions 5 (keeps states 996 to 1000)");
    assert!(text.contains(&line), "{text}");

    let dry = json_lines(&ok(&key, &["compact", "-n", "--json", "--keep-sessions", "5", s(&archive)]));
    assert_eq!(fs::metadata(&archive).unwrap().len(), size, "a dry run writes nothing");
    let done = json_lines(&ok(&key, &["compact", "--json", "--keep-sessions", "5", s(&archive)]));
    let (reclaimed, after) =
        (done[0]["reclaimed"].as_u64().unwrap(), done[0]["bytes_after"].as_u64().unwrap());
    eprintln!(
        "{size} bytes, predicted at least {predicted} reclaimed, dry run {}, reclaimed {reclaimed}",
        dry[0]["reclaimed"]
    );
    assert_eq!(after, fs::metadata(&archive).unwrap().len());
    assert!(reclaimed >= predicted, "reclaimed {reclaimed}, info said at least {predicted}");
    assert!(predicted >= reclaimed / 100 * 95, "info's {predicted} is within 5% of {reclaimed}");
    assert!(dry[0]["bytes_after"].as_u64().unwrap().abs_diff(after) <= 256, "{dry:?} vs {after}");

    assert_eq!(
        logged(&key, &archive),
        before[995..],
        "states 996 to 1000 keep their numbers, times and labels"
    );
    for (n, was) in (996..=1000).zip(&states) {
        assert_eq!(&state(&key, &archive, dir.path(), n), was, "state {n}");
    }
    let log = ok(&key, &["log", s(&archive)]);
    assert!(log.starts_with("   -  states 1 to 995 were removed by a compaction\n"), "{log}");
    let first = log.lines().nth(1).unwrap();
    assert!(first.starts_with(" 996  ") && first.contains(") holding this state, 996 entries"), "{log}");
    for asked in ["995", "1"] {
        let refused = run(&key, &["list", "--session", asked, s(&archive)]);
        assert_eq!(code(&refused), 2, "{}", stderr(&refused));
        let err = stderr(&refused);
        assert_eq!(err.lines().count(), 1, "{err}");
        let want = format!("state {asked} was removed by a compaction: the archive holds states 996 to 1000");
        assert!(err.contains(&want), "{err}");
    }
    ok(&key, &["verify", s(&archive)]);

    // A plain compaction then holds the last state, numbered as before.
    ok(&key, &["compact", "-q", s(&archive)]);
    assert_eq!(logged(&key, &archive), before[999..]);
    let refused = run(&key, &["cat", "--session", "1", s(&archive), "f0000"]);
    assert_eq!(code(&refused), 2);
    assert!(stderr(&refused).contains("the archive holds state 1000 only"), "{}", stderr(&refused));
    assert_eq!(state(&key, &archive, dir.path(), 1000), states[4]);
}

/// `--keep-within`: sessions 2.5 s apart, a window that starts between
/// the second and the third state keeps states 2 to 4 (2 was current at
/// its start).
#[test]
fn keeping_a_window_keeps_the_state_live_at_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let (key, archive) = many_sessions(dir.path(), 1);
    let src = dir.path().join("src");
    for i in 1..4 {
        std::thread::sleep(std::time::Duration::from_millis(2500));
        let name = format!("g{i}");
        fs::write(src.join(&name), name.as_bytes()).unwrap();
        ok(&key, &["add", "-q", "-m", &name, s(&archive), "-C", s(&src), &name]);
    }
    let before = logged(&key, &archive);
    let states: Vec<_> = (2..=4).map(|n| state(&key, &archive, dir.path(), n)).collect();
    // Whole seconds from state 3 to now, and one more: state 2 is older.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    let window = format!("{}s", (now - before[2].1) / 1_000_000_000 + 2);
    let info = json_lines(&ok(&key, &["info", "--json", "--keep-within", &window, s(&archive)]));
    assert_eq!(info[0]["reclaimable"]["first_state"], 2, "{info:?}");
    ok(&key, &["compact", "-q", "--keep-within", &window, s(&archive)]);
    assert_eq!(logged(&key, &archive), before[1..]);
    for (n, was) in (2..=4).zip(&states) {
        assert_eq!(&state(&key, &archive, dir.path(), n), was, "state {n}");
    }
    // --at a time before the window: refused, as before the first state.
    let at = format!("@{}", before[0].1 / 1_000_000_000);
    let refused = run(&key, &["list", "--at", &at, s(&archive)]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
}

/// With `--sign` the rewrite is signed; without, `verify --signer` says
/// plainly that it is not.
#[test]
fn a_retention_signs_with_sign_and_is_unsigned_without() {
    let dir = tempfile::tempdir().unwrap();
    let (key, archive) = many_sessions(dir.path(), 4);
    let author = dir.path().join("author.key");
    let made = lockbox().args(["keygen", "--sign", "-o", s(&author)]).output().unwrap();
    assert_eq!(code(&made), 0, "{}", stderr(&made));
    let public = format!("{}.pub", s(&author));
    ok(
        &key,
        &["compact", "-q", "--keep-sessions", "3", "--sign", s(&author), "--adopt-unsigned", s(&archive)],
    );
    let verified = ok(&key, &["verify", "--signer", &public, s(&archive)]);
    assert!(!verified.contains("unsigned"), "{verified}");
    ok(&key, &["compact", "-q", "--keep-sessions", "2", s(&archive)]);
    let unsigned = run(&key, &["verify", "--signer", &public, s(&archive)]);
    assert_eq!(code(&unsigned), 3, "{}", stderr(&unsigned));
    assert!(stderr(&unsigned).contains("is not signed"), "{}", stderr(&unsigned));
}

/// `--keep-sessions 0`, a malformed number or duration, a calendar count
/// of 0, negative or not a number, a rule given twice: one line, exit 2,
/// the archive byte for byte as it was.
#[test]
fn bad_retention_values_are_refused_in_one_line_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (key, archive) = many_sessions(dir.path(), 3);
    let bytes = fs::read(&archive).unwrap();
    let cases: [(&[&str], &str); 14] = [
        (&["--keep-sessions", "0"], "invalid --keep-sessions '0': expected a number of states, 1 or more"),
        (&["--keep-sessions", "five"], "invalid --keep-sessions 'five'"),
        (&["--keep-sessions", "1.5"], "invalid --keep-sessions '1.5'"),
        (&["--keep-sessions", "-3"], "invalid --keep-sessions '-3'"),
        (&["--keep-within", "7m"], "--keep-within: invalid duration '7m': expected NUMBER UNIT"),
        (&["--keep-within", "soon"], "invalid duration 'soon'"),
        (&["--keep-within", ""], "invalid duration ''"),
        (&["--keep-daily", "0"], "invalid --keep-daily '0': expected a number of days, 1 or more"),
        (&["--keep-weekly", "-1"], "invalid --keep-weekly '-1': expected a number of weeks, 1 or more"),
        (&["--keep-monthly=-2"], "invalid --keep-monthly '-2': expected a number of months"),
        (&["--keep-hourly", "1h"], "invalid --keep-hourly '1h': expected a number of hours"),
        (&["--keep-yearly", ""], "invalid --keep-yearly '': expected a number of years"),
        // A good rule beside a bad one changes nothing either.
        (&["--keep-sessions", "2", "--keep-daily", "x"], "invalid --keep-daily 'x'"),
        (&["--keep-daily", "2", "--keep-daily", "3"], "--keep-daily"),
    ];
    for (flags, want) in cases {
        for command in ["compact", "info"] {
            let out = run(&key, &[&[command][..], flags, &[s(&archive)]].concat());
            let err = stderr(&out);
            assert_eq!(code(&out), 2, "{command} {flags:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{command} {flags:?}: {err}");
            assert!(err.contains(want), "{command} {flags:?}: {err}");
        }
    }
    assert!(fs::read(&archive).unwrap() == bytes, "the archive is unchanged");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3, "no file left beside it");
}

/// A fixed zone in which it is about noon now (`Etc/GMT-5` is UTC+5), so
/// that states made within seconds fall in one local hour and day
/// whatever the time the test runs.
fn noon_zone() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let hour = (secs / 3600 % 24) as i64;
    let east = if 12 - hour >= -12 { 12 - hour } else { 12 - hour + 24 };
    // Etc/GMT's sign is POSIX's: west of Greenwich is positive.
    match east {
        0 => "Etc/GMT".into(),
        e if e > 0 => format!("Etc/GMT-{e}"),
        e => format!("Etc/GMT+{}", -e),
    }
}

/// `lockbox --key-file KEY ARGS...` in `zone`, succeeding.
fn ok_in(zone: &str, key: &Path, args: &[&str]) -> String {
    let out = lockbox().env("TZ", zone).arg("--key-file").arg(key).args(args).output().unwrap();
    assert_eq!(code(&out), 0, "lockbox {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Calendar rules through the binary: states made within seconds are one
/// day and one hour, so a day's rule keeps the newest alone, whatever N;
/// rules combine as a union; `info` gives the union's reclaim, then each
/// rule's, and the states each keeps. (Gaps between kept states, weeks
/// across a year and chosen times: the library's `calendar_tests` and
/// `retention::tests`.)
#[test]
fn calendar_rules_keep_the_newest_state_of_each_period_and_combine() {
    let dir = tempfile::tempdir().unwrap();
    let (key, archive) = many_sessions(dir.path(), 4);
    let zone = noon_zone();
    let before = logged(&key, &archive);
    let info = |flags: &[&str]| {
        let args = [&["info", "--json"][..], flags, &[s(&archive)]].concat();
        json_lines(&ok_in(&zone, &key, &args)).remove(0)
    };
    let daily = info(&["--keep-daily", "30"]);
    assert_eq!(daily["reclaimable"]["kept_states"], serde_json::json!([4]), "{daily}");
    assert!(daily.get("reclaimable_by_rule").is_none(), "one rule: {daily}");
    let both = info(&["--keep-sessions", "2", "--keep-hourly", "5", "--keep-yearly", "1"]);
    assert_eq!(both["reclaimable"]["kept_states"], serde_json::json!([3, 4]), "{both}");
    assert_eq!(both["reclaimable"]["policy"], "--keep-sessions 2 --keep-hourly 5 --keep-yearly 1");
    let rules: Vec<(String, Value)> = both["reclaimable_by_rule"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["policy"].as_str().unwrap().to_string(), r["kept_states"].clone()))
        .collect();
    let want = [
        ("--keep-sessions 2", serde_json::json!([3, 4])),
        ("--keep-hourly 5", serde_json::json!([4])),
        ("--keep-yearly 1", serde_json::json!([4])),
    ];
    assert_eq!(rules, want.map(|(p, k)| (p.to_string(), k)), "{both}");
    let by_rule = both["reclaimable_by_rule"].as_array().unwrap();
    assert!(by_rule[1]["bytes"].as_u64() >= by_rule[0]["bytes"].as_u64(), "one state reclaims more: {both}");
    let text = ok_in(&zone, &key, &["info", "--keep-sessions", "2", "--keep-daily", "3", s(&archive)]);
    assert!(text.contains("by compact --keep-sessions 2 --keep-daily 3 (keeps states 3 to 4)"), "{text}");
    assert!(text.contains("by compact --keep-daily 3 (keeps state 4)"), "{text}");

    let kept = state(&key, &archive, dir.path(), 3);
    ok_in(&zone, &key, &["compact", "-q", "--keep-weekly", "8", "--keep-sessions", "2", s(&archive)]);
    assert_eq!(logged(&key, &archive), before[2..], "states 3 and 4 keep their numbers, times, labels");
    assert_eq!(state(&key, &archive, dir.path(), 3), kept);
    ok_in(&zone, &key, &["compact", "-q", "--keep-monthly", "12", s(&archive)]);
    assert_eq!(logged(&key, &archive), before[3..]);
    ok(&key, &["verify", s(&archive)]);
}
