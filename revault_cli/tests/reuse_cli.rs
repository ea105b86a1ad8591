//! What deduplication saves, through the real binary (issue 48, item 6):
//! `info` counts what the last state's copies share, `log --stats` what
//! each session reused from earlier ones; plain `log` reads no more than
//! the sessions tree and shows neither.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::util::{code, lockbox, noise, stderr, CHEAP};

fn ok(args: &[&str]) -> String {
    let out = lockbox().args(args).output().expect("runs lockbox");
    assert_eq!(code(&out), 0, "lockbox {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn info_and_log_stats_show_what_copies_and_later_sessions_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir(&src).unwrap();
    // Several chunks at the default sizes (64 KiB the smallest).
    let data = noise(0x9e37_79b9_7f4a_7c15, 300 << 10);
    let len = data.len() as u64;
    fs::write(src.join("a"), &data).unwrap();
    fs::write(src.join("b"), &data).unwrap();
    let archive = dir.path().join("a.lbox");
    let create = [&["create", "-q"][..], &CHEAP, &["-o", s(&archive), "-C", s(&src), "a", "b"]].concat();
    ok(&create);
    let info = &json_lines(&ok(&["info", "--json", s(&archive)]))[0];
    assert_eq!(info["content_bytes"], 2 * len, "{info}");
    assert_eq!(info["deduplicated_bytes"], len, "b is a's chunks: {info}");
    let text = ok(&["info", s(&archive)]);
    assert!(text.contains(&format!("deduplicated       {len} bytes")), "{text}");

    fs::write(src.join("c"), &data).unwrap();
    ok(&["add", "-q", s(&archive), "-C", s(&src), "c"]);
    let sessions: Vec<Value> = json_lines(&ok(&["log", "--stats", "--json", s(&archive)]))
        .into_iter()
        .filter(|l| l["type"] == "session")
        .collect();
    let reused: Vec<&Value> = sessions.iter().map(|l| &l["reused_bytes"]).collect();
    assert_eq!(reused, [&Value::from(0), &Value::from(len)], "{sessions:?}");
    let written = sessions[1]["bytes_written"].as_u64().unwrap();
    assert!(written < len / 4, "the copy stored its list and entry, not its content: {written}");
    let plain = json_lines(&ok(&["log", "--json", s(&archive)]));
    assert!(plain.iter().all(|l| l.get("reused_bytes").is_none()), "{plain:?}");
    let text = ok(&["log", "--stats", s(&archive)]);
    assert!(text.lines().nth(1).unwrap().ends_with(&format!("bytes (reused {len})")), "{text}");
    let info = &json_lines(&ok(&["info", "--json", s(&archive)]))[0];
    assert_eq!(info["deduplicated_bytes"], 2 * len, "{info}");
}

/// Every regular file under `dir`, by its path below it.
fn files_under(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                files.insert(name, fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Files below the smallest chunk are in the chunk index too: a renamed
/// directory of them stores no content again, and every state still
/// extracts as it was.
#[test]
fn a_renamed_directory_of_small_files_is_reused_and_each_state_extracts() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let docs = src.join("tree/docs");
    fs::create_dir_all(&docs).unwrap();
    let mut total = 0u64;
    for i in 0..30u64 {
        let data = noise(i + 1, 1000 * (i as usize + 1));
        total += data.len() as u64;
        fs::write(docs.join(format!("f{i:02}")), &data).unwrap();
    }
    let archive = dir.path().join("a.lbox");
    let a = s(&archive);
    ok(&[&["create", "-q"][..], &CHEAP, &["-o", a, "-C", s(&src), "tree"]].concat());
    let first = files_under(&src);

    fs::rename(&docs, src.join("tree/manual")).unwrap();
    ok(&["update", "-q", a, "-C", s(&src), "--delete-missing", "tree"]);
    let sessions: Vec<Value> = json_lines(&ok(&["log", "--stats", "--json", a]))
        .into_iter()
        .filter(|l| l["type"] == "session")
        .collect();
    assert_eq!(sessions[1]["reused_bytes"], total, "{sessions:?}");
    // Its header, 30 entries with their 44-byte lists, a deletion, the
    // index nodes and the trailer: no file's content.
    let written = sessions[1]["bytes_written"].as_u64().unwrap();
    assert!(written < 12 << 10, "the rename stored {written} bytes for {total} of files");
    ok(&["verify", "-q", a]);
    for (state, want) in [("1", &first), ("2", &files_under(&src))] {
        let out = dir.path().join(format!("out{state}"));
        fs::create_dir(&out).unwrap();
        ok(&["extract", "-q", "--session", state, a, "-C", s(&out)]);
        assert!(files_under(&out) == *want, "state {state} extracts as it was");
    }
}
