//! Usage errors found while the flags are parsed are one line `lockbox: …`
//! as every other failure, with clap's tip on a second line at most, exit
//! 2 (they were clap's block: the error, a tip, the usage line and "For
//! more information, try '--help'").

use crate::util::{code, lockbox, run, stderr};

/// `args`' stderr: exit 2, one or two lines each starting `lockbox: `,
/// the first naming `names`.
fn one_line(args: &[&str], names: &str) -> Vec<String> {
    let out = run(lockbox().args(args));
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{args:?}: {err}");
    let lines: Vec<String> = err.lines().map(str::to_owned).collect();
    assert!((1..=2).contains(&lines.len()), "{args:?}: {lines:?}");
    assert!(lines.iter().all(|l| l.starts_with("lockbox: ")), "{args:?}: {lines:?}");
    assert!(lines[0].contains(names), "{args:?}: {lines:?}");
    lines
}

#[test]
fn an_unknown_flag_is_one_line_and_its_tip() {
    let lines = one_line(&["list", "a.lbox", "--sesion", "2"], "'--sesion'");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[1].contains("tip:") && lines[1].contains("'--session'"), "{lines:?}");
    one_line(&["list", "--no-such-flag", "a.lbox"], "'--no-such-flag'");
}

#[test]
fn a_missing_value_is_one_line() {
    one_line(&["list", "a.lbox", "--session"], "--session");
}

#[test]
fn a_missing_argument_is_one_line() {
    let lines = one_line(&["extract"], "<ARCHIVE>");
    assert!(lines[0].contains("required"), "{lines:?}");
}

#[test]
fn a_bad_value_is_one_line() {
    one_line(&["create", "--profile", "speedy", "-o", "x.lbox", "."], "'speedy'");
    one_line(&["list", "--session", "many", "a.lbox"], "'many'");
}

#[test]
fn an_unknown_command_is_one_line() {
    one_line(&["creat"], "'creat'");
}
