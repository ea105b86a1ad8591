//! age plugins through the real `lockbox` binary and a real plugin process:
//! `age-plugin-lockboxtest` (the workspace's `test-plugins/`, built by
//! `cargo test --workspace`), put on `PATH` here. Create with `-r
//! age1lockboxtest1…`, read with its `AGE-PLUGIN-LOCKBOXTEST-1…` identity;
//! a wrong identity, a plugin missing from `PATH` and a plugin that wants
//! a PIN with no terminal fail cleanly; the real `age` runs the same
//! plugin, so it is a real age plugin.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::util::{code, skip, stderr, Need};

/// The directory holding the test plugin's binary, beside `lockbox`; `None`
/// (skipped) when it was not built.
fn plugin_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_BIN_EXE_lockbox")).parent().unwrap().to_owned();
    if dir.join("age-plugin-lockboxtest").is_file() {
        return Some(dir);
    }
    skip(
        Need::Tools,
        "age-plugin-lockboxtest is not built (`cargo test --workspace` builds it; \
         or `cargo build -p age-plugin-lockboxtest`)",
    );
    None
}

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> OsString {
    let mut path = OsString::from(dir);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

/// `lockbox ARGS` in `work` with `PATH` = `path`, no password, no
/// controlling terminal (`setsid`: a question has no one to answer it).
fn lockbox(work: &Path, path: &OsString, args: &[&str]) -> Command {
    let mut cmd = Command::new("setsid");
    cmd.arg("-w")
        .arg(env!("CARGO_BIN_EXE_lockbox"))
        .args(args)
        .current_dir(work)
        .env("PATH", path)
        .env_remove("LOCKBOX_PASSWORD")
        .env_remove("LOCKBOX_NEW_PASSWORD")
        .env_remove("LOCKBOXTEST_MESSAGE")
        .env_remove("LOCKBOXTEST_PIN")
        .stdin(Stdio::null());
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("runs setsid and lockbox")
}

fn ok(out: Output) -> Output {
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    out
}

/// A new plugin identity file `work/NAME` and its recipient.
fn generate(plugins: &Path, work: &Path, name: &str) -> String {
    let out = Command::new(plugins.join("age-plugin-lockboxtest")).arg("--generate").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    fs::write(work.join(name), &text).unwrap();
    fs::set_permissions(work.join(name), fs::Permissions::from_mode(0o600)).unwrap();
    text.lines().find_map(|l| l.strip_prefix("# recipient: ")).unwrap().to_owned()
}

/// `work/src/secret.txt` archived to `work/a.lbox` for the plugin
/// recipient `recipient`.
fn create(work: &Path, path: &OsString, recipient: &str) -> Output {
    fs::create_dir_all(work.join("src")).unwrap();
    fs::write(work.join("src/secret.txt"), b"kept by a plugin\n").unwrap();
    run(lockbox(work, path, &["create", "-q", "-o", "a.lbox", "-C", "src", "-r", recipient, "secret.txt"])
        .env("LOCKBOXTEST_MESSAGE", "wrapping for lockbox"))
}

/// A work directory with a plugin identity `id.txt`: the plugins'
/// directory, `PATH` with it, the recipient. `None` when skipped.
struct Setup {
    dir: tempfile::TempDir,
    plugins: PathBuf,
    path: OsString,
    recipient: String,
}

fn setup() -> Option<Setup> {
    let plugins = plugin_dir()?;
    let dir = tempfile::tempdir().unwrap();
    let recipient = generate(&plugins, dir.path(), "id.txt");
    Some(Setup { path: path_with(&plugins), dir, plugins, recipient })
}

#[test]
fn a_plugin_recipient_round_trips_through_the_real_plugin() {
    let Some(Setup { dir, path, recipient, .. }) = setup() else { return };
    let work = dir.path();

    let made = ok(create(work, &path, &recipient));
    assert!(
        stderr(&made).contains("lockbox: age-plugin-lockboxtest: wrapping for lockbox"),
        "the plugin's message is shown: {}",
        stderr(&made)
    );
    let listed = ok(run(&mut lockbox(work, &path, &["key", "list", "a.lbox"])));
    assert!(String::from_utf8_lossy(&listed.stdout).contains("recipient  lockboxtest"), "{listed:?}");

    let cat = ok(run(lockbox(work, &path, &["-i", "id.txt", "cat", "a.lbox", "secret.txt"])
        .env("LOCKBOXTEST_MESSAGE", "\x1b[31mtouch your key")));
    assert_eq!(cat.stdout, b"kept by a plugin\n");
    let said = stderr(&cat);
    assert!(said.contains("lockbox: age-plugin-lockboxtest: \\033[31mtouch your key"), "{said:?}");
    assert!(!said.contains('\x1b'), "a plugin's text cannot drive the terminal: {said:?}");

    ok(run(&mut lockbox(work, &path, &["-i", "id.txt", "extract", "-q", "a.lbox", "-C", "."])));
    assert_eq!(fs::read(work.join("secret.txt")).unwrap(), b"kept by a plugin\n");
    ok(run(&mut lockbox(work, &path, &["-i", "id.txt", "list", "a.lbox"])));
}

/// `key add -r age1lockboxtest1…` to a password archive, with its own
/// label: the plugin's identity opens it, the password still does.
#[test]
fn key_add_gives_a_password_archive_a_plugin_slot() {
    let Some(Setup { dir, path, recipient, .. }) = setup() else { return };
    let work = dir.path();
    fs::write(work.join("pw"), "plugin test password\n").unwrap();
    fs::write(work.join("note"), b"added later\n").unwrap();
    let cheap = crate::util::CHEAP;
    let mut made = lockbox(work, &path, &["create", "-q", "--password-file", "pw", "-o", "a.lbox"]);
    ok(run(made.args(cheap).arg("note")));
    let add =
        ["key", "add", "--password-file", "pw", "-r", &recipient, "--key-label", "test plugin", "a.lbox"];
    ok(run(&mut lockbox(work, &path, &add)));
    let listed = ok(run(&mut lockbox(work, &path, &["key", "list", "a.lbox"])));
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.contains(" 1  test plugin  (recipient  lockboxtest)"), "{listed}");
    let cat = ok(run(&mut lockbox(work, &path, &["-i", "id.txt", "cat", "a.lbox", "note"])));
    assert_eq!(cat.stdout, b"added later\n");
    let cat = ok(run(&mut lockbox(work, &path, &["--password-file", "pw", "cat", "a.lbox", "note"])));
    assert_eq!(cat.stdout, b"added later\n");
}

#[test]
fn a_wrong_plugin_identity_is_refused() {
    let Some(Setup { dir, plugins, path, recipient }) = setup() else { return };
    let work = dir.path();
    generate(&plugins, work, "other.txt");
    ok(create(work, &path, &recipient));
    let wrong = run(&mut lockbox(work, &path, &["-i", "other.txt", "cat", "a.lbox", "secret.txt"]));
    assert_eq!(code(&wrong), 3, "{}", stderr(&wrong));
    assert!(stderr(&wrong).contains("no identity matched"), "{}", stderr(&wrong));
    assert!(wrong.stdout.is_empty());
}

#[test]
fn a_plugin_missing_from_path_is_one_clear_line() {
    let Some(Setup { dir, path, recipient, .. }) = setup() else { return };
    let work = dir.path();
    // PATH without the plugin's directory: sh and the usual tools only.
    let bare = OsString::from("/usr/bin:/bin");

    let refused = create(work, &bare, &recipient);
    assert_eq!(code(&refused), 1, "{}", stderr(&refused));
    let said = stderr(&refused);
    assert_eq!(said.lines().count(), 1, "one line: {said}");
    assert!(said.contains("age-plugin-lockboxtest") && said.contains("PATH"), "{said}");
    assert!(!work.join("a.lbox").exists(), "no archive left behind");
    let left: Vec<_> = fs::read_dir(work).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "only id.txt and src: {left:?}");

    ok(create(work, &path, &recipient));
    fs::create_dir(work.join("out")).unwrap();
    let refused = run(&mut lockbox(work, &bare, &["-i", "id.txt", "extract", "a.lbox", "-C", "out"]));
    assert_eq!(code(&refused), 1, "{}", stderr(&refused));
    let said = stderr(&refused);
    assert_eq!(said.lines().count(), 1, "one line: {said}");
    assert!(said.contains("age-plugin-lockboxtest") && said.contains("PATH"), "{said}");
    assert_eq!(fs::read_dir(work.join("out")).unwrap().count(), 0, "nothing extracted");
}

/// A plugin that asks for a PIN (a hardware key's request-secret) with no
/// terminal to ask on: the plugin's own refusal, exit 3, nothing read.
/// (The PIN typed on a terminal: `prompt_tty`.)
#[test]
fn a_plugin_asking_for_a_pin_without_a_terminal_fails_cleanly() {
    let Some(Setup { dir, path, recipient, .. }) = setup() else { return };
    let work = dir.path();
    ok(create(work, &path, &recipient));
    let refused =
        run(lockbox(work, &path, &["-i", "id.txt", "cat", "a.lbox", "secret.txt"])
            .env("LOCKBOXTEST_PIN", "1234"));
    assert_eq!(code(&refused), 3, "{}", stderr(&refused));
    let said = stderr(&refused);
    assert!(said.contains("age-plugin-lockboxtest") && said.contains("no PIN was given"), "{said}");
    assert!(refused.stdout.is_empty());
}

/// The real `age` encrypts to the same plugin recipient and decrypts with
/// the same identity: the test plugin is an age plugin, not a lockbox one.
#[test]
fn the_real_age_uses_the_same_plugin() {
    let Some(Setup { dir, path, recipient, .. }) = setup() else { return };
    let work = dir.path();
    fs::write(work.join("plain"), b"age and lockbox agree\n").unwrap();
    let age = |args: &[&str]| Command::new("age").args(args).current_dir(work).env("PATH", &path).output();
    let encrypted = match age(&["-r", &recipient, "-o", "plain.age", "plain"]) {
        Ok(out) => out,
        Err(e) => return skip(Need::Tools, format!("age cannot be run ({e})")),
    };
    assert!(encrypted.status.success(), "{}", stderr(&encrypted));
    let decrypted = age(&["-d", "-i", "id.txt", "plain.age"]).unwrap();
    assert!(decrypted.status.success(), "{}", stderr(&decrypted));
    assert_eq!(decrypted.stdout, b"age and lockbox agree\n");
}
