//! `--key-label TEXT` on `create` and `key add`: the label goes into the
//! slot's room for one (FORMAT.md §3.2, `label_len u8 || label` after the
//! body), `key list` shows it (text and JSON), a password change keeps it,
//! a bad label is a usage error that writes nothing, and a repeated
//! `--key-label` names each slot in order.

use std::fs;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::util::{code, lockbox, stderr, CHEAP};

fn ok(out: Output) -> Output {
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    out
}

fn key_list(archive: &Path) -> String {
    String::from_utf8(ok(lockbox().args(["key", "list"]).arg(archive).output().unwrap()).stdout).unwrap()
}

fn key_list_json(archive: &Path) -> Vec<Value> {
    let out = ok(lockbox().args(["key", "list", "--json"]).arg(archive).output().unwrap());
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn labels_name_slots_in_key_list_and_survive_a_password_change() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    fs::write(dir.join("note"), b"labelled").unwrap();
    let archive = dir.join("a.lbox");
    let create = lockbox()
        .args(["create", "-q", "--key-label", "laptop", "-o"])
        .arg(&archive)
        .args(CHEAP)
        .arg("-C")
        .arg(dir)
        .arg("note")
        .output();
    ok(create.unwrap());
    // The bytes FORMAT.md §3.2 gives: slot 0 at offset 32, kind 1, body_len
    // 88, the body, then label_len 6 and the label.
    let bytes = fs::read(&archive).unwrap();
    assert_eq!((bytes[32], u16::from_le_bytes([bytes[33], bytes[34]])), (1, 88));
    assert_eq!((bytes[35 + 88], &bytes[36 + 88..42 + 88]), (6, &b"laptop"[..]));
    assert!(key_list(&archive).starts_with(" 0  laptop  (password   Argon2id"), "{}", key_list(&archive));

    // A recipient added with a label of its own; the password keeps its.
    let id = dir.join("id.txt");
    let keygen = ok(lockbox().args(["keygen", "-o"]).arg(&id).output().unwrap());
    let recipient = String::from_utf8(keygen.stdout).unwrap().trim().to_owned();
    let add = lockbox()
        .args(["key", "add", "--key-label", "yubikey 5 (office)", "-r", &recipient])
        .arg(&archive)
        .output();
    ok(add.unwrap());
    let slots = key_list_json(&archive);
    assert_eq!((slots[0]["kind"].as_str(), slots[0]["label"].as_str()), (Some("password"), Some("laptop")));
    assert_eq!(
        (slots[1]["kind"].as_str(), slots[1]["label"].as_str()),
        (Some("recipient"), Some("yubikey 5 (office)"))
    );
    let listed = key_list(&archive);
    assert!(listed.contains(" 1  yubikey 5 (office)  (recipient  X25519)"), "{listed}");
    let cat = lockbox()
        .env_remove("LOCKBOX_PASSWORD")
        .arg("cat")
        .arg(&archive)
        .arg("note")
        .arg("-i")
        .arg(&id)
        .output();
    assert_eq!(ok(cat.unwrap()).stdout, b"labelled");

    // passwd writes the new password's slot with the old one's label.
    ok(lockbox().env("LOCKBOX_NEW_PASSWORD", "second").arg("passwd").arg(&archive).output().unwrap());
    let slots = key_list_json(&archive);
    let password = slots.iter().find(|s| s["kind"] == "password").expect("a password slot");
    assert_eq!(password["label"], "laptop", "{slots:?}");

    // Without --key-label, no label: the kind alone, no "label" in JSON.
    let plain = dir.join("plain.lbox");
    ok(crate::util::create_cmd(&plain, dir, "note", &["-q"]).output().unwrap());
    assert!(key_list(&plain).starts_with(" 0  password   Argon2id"), "{}", key_list(&plain));
    assert!(key_list_json(&plain)[0].get("label").is_none());
}

#[test]
fn a_bad_label_is_a_usage_error_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    fs::write(dir.join("note"), b"x").unwrap();
    let archive = dir.join("a.lbox");
    let long = "x".repeat(256);
    for bad in [long.as_str(), "tab\there", "new\nline"] {
        let out =
            lockbox().args(["create", "--key-label", bad, "-o"]).arg(&archive).arg(dir.join("note")).output();
        let out = out.unwrap();
        assert_eq!(code(&out), 2, "{bad:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("label"), "{}", stderr(&out));
        assert!(!archive.exists(), "nothing written for {bad:?}");
    }
    ok(crate::util::create_cmd(&archive, dir, "note", &["-q"]).output().unwrap());
    let before = fs::read(&archive).unwrap();
    let out = lockbox().args(["key", "add", "--password", "--key-label", "bell\x07"]).arg(&archive).output();
    let out = out.unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(fs::read(&archive).unwrap(), before);
}

/// `--key-label` repeated: one per key, in order (the recipients of `-r`,
/// then of `-R` files line by line; a key file first), shown by `key list`
/// slot by slot; `key add` pairs the same way; another count is a usage
/// error that writes nothing.
#[test]
fn repeated_labels_name_each_slot_in_order() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    fs::write(dir.join("note"), b"team").unwrap();
    let recipient = |name: &str| {
        let out = ok(lockbox().args(["keygen", "-o"]).arg(dir.join(name)).output().unwrap());
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let (alice, bob, carol) = (recipient("alice"), recipient("bob"), recipient("carol"));
    fs::write(dir.join("team.txt"), format!("# the team\n{bob}\n\n{carol}\n")).unwrap();
    ok(lockbox().args(["keygen", "--symmetric", "-o"]).arg(dir.join("kf")).output().unwrap());
    let archive = dir.join("team.lbox");
    let create = |archive: &Path, labels: &[&str]| {
        let mut cmd = lockbox();
        cmd.args(["create", "-q", "-o"]).arg(archive).arg("-C").arg(dir);
        cmd.args(["--key-file", "kf", "-r", &alice, "-R", "team.txt"]).current_dir(dir);
        for label in labels {
            cmd.args(["--key-label", label]);
        }
        cmd.arg("note").output().unwrap()
    };
    ok(create(&archive, &["scripts", "alice", "bob", "carol"]));
    let listed = key_list(&archive);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 4, "{listed}");
    assert!(lines[0].starts_with(" 0  scripts  (key file)"), "{listed}");
    for (i, name) in ["alice", "bob", "carol"].iter().enumerate() {
        assert!(lines[i + 1].starts_with(&format!(" {}  {name}  (recipient  X25519)", i + 1)), "{listed}");
    }
    // Each label is on its own key's slot: bob's identity opens the archive,
    // and the slot it opened is the one named bob.
    let mut cat = lockbox();
    cat.env_remove("LOCKBOX_PASSWORD").arg("-i").arg(dir.join("bob")).arg("cat");
    assert_eq!(ok(cat.arg(&archive).arg("note").output().unwrap()).stdout, b"team");
    let slots = key_list_json(&archive);
    let labels: Vec<&str> = slots.iter().filter_map(|s| s["label"].as_str()).collect();
    assert_eq!(labels, ["scripts", "alice", "bob", "carol"]);

    // key add pairs the same way: a password first, then the recipient.
    let dave = recipient("dave");
    let mut add = lockbox();
    add.args(["key", "add", "--key-file", "kf", "--new-password-file", "pw", "--password"])
        .args(["-r", &dave, "--key-label", "desk", "--key-label", "dave"])
        .arg(&archive)
        .current_dir(dir);
    fs::write(dir.join("pw"), "second password\n").unwrap();
    ok(add.output().unwrap());
    let slots = key_list_json(&archive);
    let tail: Vec<(&str, &str)> =
        slots[4..6].iter().map(|s| (s["kind"].as_str().unwrap(), s["label"].as_str().unwrap())).collect();
    assert_eq!(tail, [("password", "desk"), ("recipient", "dave")]);

    // Two labels for four keys: a usage error naming the counts, nothing written.
    let other = dir.join("other.lbox");
    let refused = create(&other, &["alice", "bob"]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("2 key labels for 4 keys"), "{}", stderr(&refused));
    assert!(!other.exists());
    let before = fs::read(&archive).unwrap();
    let refused = lockbox()
        .args(["key", "add", "--key-file", "kf", "-r", &dave, "-r", &alice])
        .args(["--key-label", "a", "--key-label", "b", "--key-label", "c"])
        .arg(&archive)
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert_eq!(fs::read(&archive).unwrap(), before, "nothing written");
    // With a new password to add, refused before it is asked for.
    let refused = lockbox()
        .args(["key", "add", "--password", "-r", &dave, "--key-label", "a", "--key-label", "b"])
        .args(["--key-label", "c"])
        .arg(&archive)
        .env_remove("LOCKBOX_NEW_PASSWORD")
        .output()
        .unwrap();
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("3 key labels for 2 keys"), "{}", stderr(&refused));
    assert_eq!(fs::read(&archive).unwrap(), before, "nothing written");
}
