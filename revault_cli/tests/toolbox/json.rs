//! `--json` on list, verify, extract, create, info and key list: every
//! line parsed with serde_json, a `"type"` on each, the summary last.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;

use serde_json::Value;

use super::*;

/// Parses every line of `stdout` as a JSON object with a string `"type"`;
/// checks that the last, and only the last, is the summary of `command`.
fn lines(stdout: &[u8], command: &str) -> Vec<Value> {
    let text = std::str::from_utf8(stdout).expect("JSON output is UTF-8");
    assert!(text.ends_with('\n'), "{text}");
    let all: Vec<Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    for (i, v) in all.iter().enumerate() {
        let kind = v["type"].as_str().unwrap_or_else(|| panic!("no type in {v}"));
        assert_eq!(kind == "summary", i == all.len() - 1, "summary must come last, once: {text}");
    }
    assert_eq!(all.last().unwrap()["command"], command, "{text}");
    all
}

fn json_of(args: &[&OsStr], command: &str) -> Vec<Value> {
    let out = run(lockbox().args(args));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    lines(&out.stdout, command)
}

#[test]
fn list_json_describes_every_entry_and_keeps_non_utf8_names() {
    let work = tempfile::tempdir().unwrap();
    let tree = small_tree(work.path());
    fs::write(tree.join(OsStr::from_bytes(NON_UTF8)), b"x").unwrap();
    fs::hard_link(tree.join("a.txt"), tree.join("hard")).unwrap();
    let archive = archive_tree(work.path(), &[]);
    let all = json_of(&["list".as_ref(), "--json".as_ref(), archive.as_os_str()], "list");
    let entries = &all[..all.len() - 1];
    assert_eq!(entries.len(), 8);
    let by_path = |p: &str| entries.iter().find(|e| e["path"] == p).unwrap_or_else(|| panic!("{p} missing"));
    let file = by_path("tree/a.txt");
    assert_eq!(
        (file["kind"].as_str(), file["size"].as_u64(), file["mode"].as_u64()),
        (Some("file"), Some(6), Some(0o644))
    );
    // SHA-256 of "alpha\n" (sha256sum).
    assert_eq!(file["sha256"], "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060");
    assert!(file["mtime"].as_i64().is_some() && file["mtime_nanos"].as_u64().is_some());
    assert_eq!(by_path("tree/link")["target"], "a.txt");
    assert_eq!(by_path("tree/sub")["kind"], "dir");
    let hard = by_path("tree/hard");
    assert_eq!((hard["kind"].as_str(), hard["target"].as_str()), (Some("hardlink"), Some("tree/a.txt")));
    // The name that is not UTF-8: lossy in "path", exact in "path_base64".
    let odd = entries.iter().find(|e| e.get("path_base64").is_some()).expect("a base64 name");
    assert_eq!(odd["path"], "tree/caf\u{fffd}.txt");
    use base64::Engine as _;
    let exact =
        base64::engine::general_purpose::STANDARD.decode(odd["path_base64"].as_str().unwrap()).unwrap();
    assert_eq!(exact, [b"tree/", NON_UTF8].concat());
    assert_eq!(entries.iter().filter(|e| e.get("path_base64").is_some()).count(), 1);
    let summary = all.last().unwrap();
    assert_eq!(
        [&summary["entries"], &summary["files"], &summary["dirs"], &summary["hardlinks"]],
        [8, 4, 2, 1]
    );
}

#[test]
fn verify_and_extract_json_report_damage_as_objects() {
    let work = tempfile::tempdir().unwrap();
    let tree = small_tree(work.path());
    // Incompressible, so that a flipped byte early in the data lands in a page.
    let noise: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    fs::write(tree.join("noise.bin"), &noise).unwrap();
    let archive = archive_tree(work.path(), &[]);
    let all = json_of(&["verify".as_ref(), "--json".as_ref(), archive.as_os_str()], "verify");
    assert_eq!(all.len(), 1);
    assert_eq!((all[0]["ok"].as_bool(), all[0]["files"].as_u64()), (Some(true), Some(4)));
    let dest = work.path().join("out");
    fs::create_dir(&dest).unwrap();
    let x = json_of(
        &["extract".as_ref(), "--json".as_ref(), archive.as_os_str(), "-C".as_ref(), dest.as_os_str()],
        "extract",
    );
    assert_eq!(
        (x[0]["ok"].as_bool(), x[0]["entries"].as_u64(), x[0]["bytes"].as_u64()),
        (Some(true), Some(7), Some(200_017))
    );

    // Damage one data page: verify and extract --keep-going list what it hit.
    let mut bytes = fs::read(&archive).unwrap();
    // Data pages start after the header and the 16 key slots of 256 bytes
    // that a password needs (docs/FORMAT.md).
    let data_start = 32 + 16 * 256;
    bytes[data_start + 1000] ^= 1;
    let damaged = work.path().join("damaged.lbox");
    fs::write(&damaged, bytes).unwrap();
    let out = run(lockbox().args(["verify", "--json"]).arg(&damaged));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let all = lines(&out.stdout, "verify");
    assert!(
        all.iter().any(|v| v["type"] == "damaged" && v["path"].is_string() && v["reason"].is_string()),
        "{all:?}"
    );
    assert_eq!(all.last().unwrap()["ok"], false);
    let dest = work.path().join("salvage");
    fs::create_dir(&dest).unwrap();
    let out = run(lockbox().args(["extract", "--json", "--keep-going"]).arg(&damaged).arg("-C").arg(&dest));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let all = lines(&out.stdout, "extract");
    assert!(all.last().unwrap()["damaged_entries"].as_u64().unwrap() >= 1, "{all:?}");
}

#[test]
fn create_info_and_key_list_json() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    fs::create_dir(work.path().join("tree/fifo-dir")).unwrap();
    let fifo = work.path().join("tree/fifo-dir/pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let archive = work.path().join("a.lbox");
    let out = run(lockbox()
        .arg("create")
        .arg("--json")
        .args(CHEAP)
        .arg("-o")
        .arg(&archive)
        .arg("-C")
        .arg(work.path())
        .arg("tree"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "warnings go to the JSON: {}", stderr(&out));
    let all = lines(&out.stdout, "create");
    assert_eq!(all[0]["type"], "warning");
    assert!(all[0]["message"].as_str().unwrap().contains("FIFO ignored"), "{all:?}");
    let summary = all.last().unwrap();
    assert_eq!((summary["entries"].as_u64(), summary["warnings"].as_u64()), (Some(7), Some(1)));
    assert_eq!(summary["archive_bytes"].as_u64(), Some(fs::metadata(&archive).unwrap().len()));
    assert_eq!(summary["archive"], archive.to_str().unwrap());

    let info = json_of(&["info".as_ref(), "--json".as_ref(), archive.as_os_str()], "info");
    assert_eq!((info[0]["files"].as_u64(), info[0]["kdf"][0]["memory_kib"].as_u64()), (Some(3), Some(1024)));

    let slots =
        json_of(&["key".as_ref(), "list".as_ref(), "--json".as_ref(), archive.as_os_str()], "key list");
    assert_eq!(slots.len(), 2);
    assert_eq!(
        (slots[0]["type"].as_str(), slots[0]["slot"].as_u64(), slots[0]["kind"].as_str()),
        (Some("slot"), Some(0), Some("password"))
    );
    assert_eq!(slots[0]["kdf"]["passes"], 1);
    assert_eq!(slots[1]["slots"], 1);
}

#[test]
fn json_with_the_archive_on_stdout_is_a_usage_error() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let out = run(lockbox()
        .current_dir(work.path())
        .arg("create")
        .arg("--json")
        .args(CHEAP)
        .args(["-o", "-", "tree"]));
    assert_fails(&out, 2, "--json writes to stdout");
    assert!(out.stdout.is_empty());
    // Errors stay one line on stderr, with nothing on stdout.
    let out = run(lockbox().current_dir(work.path()).args(["list", "--json", "missing.lbox"]));
    assert_fails(&out, 1, "missing.lbox");
    assert!(out.stdout.is_empty());
}
