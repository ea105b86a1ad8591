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
