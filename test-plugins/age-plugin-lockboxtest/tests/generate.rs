//! `--generate` prints an identity file as age plugins do: a `# recipient:`
//! line and an `AGE-PLUGIN-LOCKBOXTEST-1…` identity, fresh each time; a
//! bad invocation is a usage error. (Being an integration test also makes
//! `cargo test --workspace` build the binary that lockbox's plugin tests
//! put on PATH.)

use std::process::Command;

const PLUGIN: &str = env!("CARGO_BIN_EXE_age-plugin-lockboxtest");

fn generate() -> String {
    let out = Command::new(PLUGIN).arg("--generate").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn generate_prints_a_recipient_and_an_identity() {
    let text = generate();
    let recipient = text.lines().find_map(|l| l.strip_prefix("# recipient: ")).expect("a recipient line");
    assert!(recipient.starts_with("age1lockboxtest1"), "{text}");
    let identity = text.lines().find(|l| !l.starts_with('#')).expect("an identity line");
    assert!(identity.starts_with("AGE-PLUGIN-LOCKBOXTEST-1"), "{text}");
    assert_ne!(generate(), text, "a fresh key each time");
}

#[test]
fn unknown_arguments_are_a_usage_error() {
    let out = Command::new(PLUGIN).arg("--frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
}
