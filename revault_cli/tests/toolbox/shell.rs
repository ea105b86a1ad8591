//! `lockbox completions` and `lockbox man`, checked by the real shell and
//! the real formatter.

use std::io::Write;
use std::process::{Command as Process, Stdio};

use super::*;
use crate::util::{skip, Need};

/// Whether `tool` runs on this machine.
fn have(tool: &str) -> bool {
    Process::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// Runs `argv` with `input` on its stdin; returns its exit status and stderr.
fn feed(argv: &[&str], input: &[u8]) -> (bool, String) {
    let mut child = Process::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn stdout_of(args: &[&str]) -> Vec<u8> {
    let out = run(lockbox().args(args));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    out.stdout
}

#[test]
fn bash_completion_parses_and_completes_commands_and_flags() {
    let script = stdout_of(&["completions", "bash"]);
    let (ok, err) = feed(&["bash", "-n"], &script);
    assert!(ok, "bash -n: {err}");
    // Sourced in a real bash, it completes `lockbox cr` and `lockbox create --ov`.
    let probe =
        b"COMP_WORDS=(lockbox cr); COMP_CWORD=1; _lockbox lockbox cr lockbox; echo \"${COMPREPLY[@]}\"\n\
COMP_WORDS=(lockbox create --ov); COMP_CWORD=2; _lockbox lockbox --ov create; echo \"${COMPREPLY[@]}\"\n";
    let mut all = script.clone();
    all.extend_from_slice(probe);
    let out = Process::new("bash").arg("-c").arg(String::from_utf8(all).unwrap()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().next().is_some_and(|l| l.split(' ').any(|w| w == "create")), "{text}");
    assert!(text.contains("--overwrite"), "{text}");
}

#[test]
fn zsh_and_fish_completions_name_every_command() {
    for shell in ["zsh", "fish"] {
        let script = String::from_utf8(stdout_of(&["completions", shell])).unwrap();
        for command in ["create", "extract", "export", "verify", "completions"] {
            assert!(script.contains(command), "{shell} script lacks {command}");
        }
        if have(shell) {
            let check = if shell == "zsh" { ["zsh", "-n"] } else { ["fish", "--no-execute"] };
            let (ok, err) = feed(&check, script.as_bytes());
            assert!(ok, "{shell}: {err}");
        } else {
            skip(
                Need::Tools,
                format!("{shell} is not installed; its script was only checked for the command names"),
            );
        }
    }
}

#[test]
fn manual_pages_render_without_warnings() {
    if !have("groff") {
        panic!("groff is missing: run scripts/test.sh, which installs it (apt-get install groff-base)");
    }
    for page in [vec!["man"], vec!["man", "create"], vec!["man", "export"]] {
        let roff = stdout_of(&page);
        let (ok, err) = feed(&["groff", "-k", "-man", "-Tutf8", "-ww", "-z"], &roff);
        assert!(ok && err.is_empty(), "groff on {page:?}: {err}");
    }
    if have("man") {
        let roff = stdout_of(&["man", "create"]);
        let out = Process::new("sh")
            .args(["-c", "man -l - | cat"])
            .env("MANPAGER", "cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                child.stdin.take().unwrap().write_all(&roff)?;
                child.wait_with_output()
            })
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("SYNOPSIS") && text.contains("--overwrite"), "{text}");
    } else {
        skip(Need::Tools, "man is not installed; the pages were only checked by groff");
    }
}

#[test]
fn unknown_shell_or_page_is_a_usage_error() {
    let out = run(lockbox().args(["completions", "tcsh"]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_fails(&run(lockbox().args(["man", "nope"])), 2, "no command \"nope\"");
}
