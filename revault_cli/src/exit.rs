//! The exit codes: each with its meaning and the cases that produce it, as
//! data, and the one place that picks a code for an outcome or an error.
//!
//! [`TABLE`] is the only copy of the table: the `--help` footer and the
//! man page's EXIT STATUS section are rendered from it, and a test checks
//! that README.md's table says the same.

use std::io;
use std::process::ExitCode;

use std::fmt;

use revault_lockbox_api::error::KeyError;
use revault_lockbox_api::Error;

/// A mistake in how lockbox was called, found after parsing (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// One exit code: what it means and what produces it.
pub struct Status {
    pub code: u8,
    /// Its name in the `--help` footer.
    pub short: &'static str,
    pub meaning: &'static str,
    pub cases: &'static [&'static str],
}

pub const SUCCESS: u8 = 0;
pub const FAILURE: u8 = 1;
pub const USAGE: u8 = 2;
pub const AUTH: u8 = 3;
/// What a shell reports for a process killed by SIGPIPE.
pub const BROKEN_PIPE: u8 = 141;
/// What a shell reports for a process a signal ended (128 + its number),
/// after `signals.rs` removed its temporary files.
pub const HANGUP: u8 = 129;
pub const INTERRUPTED: u8 = 130;
pub const QUIT: u8 = 131;
pub const TERMINATED: u8 = 143;

/// What a signal that ends lockbox leaves, for each of their rows.
const ENDED_BY_A_SIGNAL: &[&str] = &[
    "no temporary file is left",
    "an archive or export being written does not appear, or an existing one is kept as it was",
    "an archive being changed reads as before",
    "`extract` keeps the files it had placed",
];

pub const TABLE: &[Status] = &[
    Status {
        code: SUCCESS,
        short: "ok",
        meaning: "success",
        cases: &["also a command whose stdout was closed early (as by `| head`), but for `create -o -` and `export -o -`"],
    },
    Status {
        code: FAILURE,
        short: "failure",
        meaning: "any other failure",
        cases: &[
            "an I/O error (a full disk included)",
            "missing input (but a `create` PATH: exit 2)",
            "an existing file without `--overwrite`",
            "a path not in the archive",
            "an archive locked by another writer",
            "a path that would lie below a stored file",
            "`extract` of paths needing more directories the archive does not list than `--max-implicit-dirs` allows",
            "a malformed tar stream",
            "an unreadable `--files-from`, `--exclude-from`, key file or identity file",
            "an age plugin (`age-plugin-NAME`) not on `PATH`, or one that failed while wrapping",
            "object store: wrong credentials, a missing bucket or key, an existing key without `--overwrite`, an unreachable server",
            "`create`, `add` or `update` that skipped or stored a changed copy of something asked for (the archive is valid; see \"Files that change, vanish or cannot be read\")",
            "`diff` that found differences",
        ],
    },
    Status {
        code: USAGE,
        short: "usage error",
        meaning: "usage error",
        cases: &[
            "bad flags",
            "a `create` PATH that does not exist (the others are archived, as GNU tar does; none existing: no archive)",
            "no password",
            "an empty password for a new slot (`create`, `passwd`, `key add --password`: opening with an empty one is a wrong password, exit 3), or a new one whose repeat did not match in three tries",
            "an unlock of a kind the archive has no slot for (the message says how it is locked)",
            "an archive to or from a terminal",
            "a KDF cost out of range",
            "a malformed recipient, recipients file, identity file or key file (an SSH key given to `--key-file` included)",
            "a malformed `--signer`, or a `--signers` file that is missing, unreadable, lists no signer or has a bad line",
            "post-quantum and classical recipients together without `--allow-mixed-recipients`",
            "an invalid or non-UTF-8 pattern (`--exclude`, `--wildcards` NAMEs)",
            "a `--files-from` list naming no path",
            "`-` given twice",
            "`--json` with `-o -`",
            "`--same-owner` as a user other than root",
            "`key add` with nothing to add",
            "`man` of an unknown command",
            "a bad `s3://` location, a plain-HTTP endpoint without `--allow-http` or another unusable object-store configuration",
            "a command that rewrites in place (`key add`/`remove`, `passwd`, `add`, `update`, `rm`, `compact`, `repair`) on `s3://`",
            "a `--session`, `--at`, `--from` or `--to` that names no state of the archive",
            "any trouble in `diff` but an authentication failure (as `diff` and `cmp`: a missing directory, an I/O error)",
        ],
    },
    Status {
        code: AUTH,
        short: "wrong password or damaged archive",
        meaning: "authentication failure",
        cases: &[
            "a wrong password, key file or identity-file passphrase, no identity matched, an age plugin that refused its identity (a wrong PIN), a password slot over the KDF budget (`--kdf-budget`)",
            "an archive tampered with, malformed, truncated or of an unsupported version",
            "a checksum mismatch",
            "an unsafe path in the archive",
            "damaged entries reported by `extract --keep-going` or `verify`",
            "a salvaged archive (`extract --keep-going`, `verify`, `repair` of one cut or whose trailer, root, index or a data page is damaged), what could not be proven listed",
        ],
    },
    Status { code: HANGUP, short: "hang-up", meaning: "ended by SIGHUP", cases: ENDED_BY_A_SIGNAL },
    Status { code: INTERRUPTED, short: "interrupted", meaning: "ended by SIGINT (Ctrl-C)", cases: ENDED_BY_A_SIGNAL },
    Status { code: QUIT, short: "quit", meaning: "ended by SIGQUIT", cases: ENDED_BY_A_SIGNAL },
    Status {
        code: BROKEN_PIPE,
        short: "archive not delivered (stdout closed)",
        meaning: "broken pipe",
        cases: &["`create -o -` or `export -o -` whose stdout closed before the stream was complete"],
    },
    Status { code: TERMINATED, short: "terminated", meaning: "ended by SIGTERM", cases: ENDED_BY_A_SIGNAL },
];

impl Status {
    /// The meaning and the cases in one sentence, as README's table and the
    /// man page write them.
    pub fn text(&self) -> String {
        format!("{}: {}", self.meaning, self.cases.join("; "))
    }
}

/// The `--help` footer.
pub fn help_footer() -> String {
    let codes: Vec<String> = TABLE.iter().map(|s| format!("{} {}", s.code, s.short)).collect();
    format!(
        "Password: --password-file FILE, else $LOCKBOX_PASSWORD, else a prompt on the terminal.\n\
         Exit codes: {}.",
        codes.join(", ")
    )
}

/// `text` safe in roff: backslashes, hyphens (as `\-`, so that flags
/// copy and paste) and quotes escaped, and no line starting with a dot.
pub fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-").replace('\'', "\\*(Aq");
    match escaped.strip_prefix('.') {
        Some(rest) => format!("\\&.{rest}"),
        None => escaped,
    }
}

/// The man page's EXIT STATUS section, in roff.
pub fn man_section() -> String {
    let mut roff = String::from(".SH \"EXIT STATUS\"\n");
    for status in TABLE {
        roff.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", status.code, roff_text(&status.text())));
    }
    roff
}

/// How a command that ran to its end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// The archive was written and is valid, but misses or holds a changed
    /// copy of something asked for (as tar).
    Incomplete,
    /// `diff` found differences (exit 1, as `diff` and `cmp`).
    Different,
    /// `create` archived what exists of its PATHs and warned of the others
    /// (exit 2, as GNU tar).
    MissingInput,
    /// Damaged entries were reported (`verify`, `extract --keep-going`),
    /// or an archive was salvaged (those and `repair`).
    Damaged,
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> ExitCode {
        ExitCode::from(match outcome {
            Outcome::Success => SUCCESS,
            Outcome::Incomplete | Outcome::Different => FAILURE,
            Outcome::MissingInput => USAGE,
            Outcome::Damaged => AUTH,
        })
    }
}

/// The code for a failed command. `streams_archive`: the command writes an
/// archive or tar stream to stdout, so a broken pipe means it was not
/// delivered; for any other command it means a reader such as `head` had
/// enough.
pub fn of_error(err: &anyhow::Error, streams_archive: bool) -> u8 {
    if is_broken_pipe(err) {
        return if streams_archive { BROKEN_PIPE } else { SUCCESS };
    }
    // What the caller asked for that the archive cannot give.
    let asked = library_error(err).is_some_and(|e| {
        matches!(
            e,
            Error::NoSuchState { .. }
                | Error::NoStateAt { .. }
                | Error::RecoveryUnavailable { .. }
                | Error::InvalidRecovery { .. }
        )
    });
    if err.downcast_ref::<UsageError>().is_some() || is_key_usage(err) || asked {
        USAGE
    } else if library_error(err).is_some_and(Error::is_authentication) {
        AUTH
    } else {
        FAILURE
    }
}

/// A key given in a form lockbox refuses: the caller's input, as a bad
/// recipient is.
fn is_key_usage(err: &anyhow::Error) -> bool {
    let key = find::<KeyError>(err).or_else(|| match library_error(err) {
        Some(Error::Key(key)) => Some(key),
        _ => None,
    });
    matches!(key, Some(KeyError::MixedRecipients { .. } | KeyError::InvalidKeyFile(_)))
}

pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// The library error in `err`'s chain, also when it travelled inside an
/// `io::Error` (as `EntryReader` reports a checksum mismatch).
pub fn library_error(err: &anyhow::Error) -> Option<&Error> {
    find(err)
}

/// The first `E` in `err`'s chain, also inside an `io::Error`.
pub fn find<E: std::error::Error + 'static>(err: &anyhow::Error) -> Option<&E> {
    err.chain().find_map(|cause| {
        cause.downcast_ref::<E>().or_else(|| {
            cause
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<E>())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_table() {
        assert_eq!(of_error(&Error::WrongPassword.into(), true), AUTH);
        let inside_io = io::Error::other(Error::ChecksumMismatch { path: b"a"[..].into() });
        assert_eq!(of_error(&anyhow::Error::new(inside_io).context("reading a"), true), AUTH);
        assert_eq!(of_error(&UsageError("no".into()).into(), true), USAGE);
        let mixed = Error::Key(KeyError::MixedRecipients { pq: 1, classical: 1 });
        assert_eq!(of_error(&anyhow::Error::new(mixed).context("creating a"), true), USAGE);
        let bad_key_file = anyhow::Error::new(KeyError::InvalidKeyFile("no key line")).context("reading k");
        assert_eq!(of_error(&bad_key_file, false), USAGE);
        assert_eq!(of_error(&Error::AlreadyExists { path: "x".into() }.into(), true), FAILURE);
        let no_state = anyhow::Error::new(Error::NoStateAt { at_ns: 0, first_ns: 1 }).context("opening a");
        assert_eq!(of_error(&no_state, false), USAGE);
        assert_eq!(of_error(&Error::NoSuchState { asked: 9, first: 1, states: 2 }.into(), false), USAGE);
        let removed = Error::NoSuchState { asked: 1, first: 3, states: 7 };
        assert_eq!(of_error(&removed.into(), false), USAGE);
        let pipe = Error::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(of_error(&anyhow::Error::new(pipe).context("writing"), true), BROKEN_PIPE);
        let pipe = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(of_error(&pipe, false), SUCCESS);
        for status in TABLE {
            assert!(TABLE.iter().filter(|s| s.code == status.code).count() == 1);
        }
    }

    /// README.md's exit-code table, row by row: `| code | text |`, with
    /// `\|` standing for `|`.
    fn readme_table() -> Vec<(u8, String)> {
        let readme = include_str!("../../README.md");
        let section = readme.split("### Exit codes").nth(1).expect("README has an exit-code section");
        section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .map(|line| {
                let cells: Vec<String> = line
                    .replace("\\|", "\u{0}")
                    .split('|')
                    .map(|cell| cell.trim().replace('\u{0}', "|"))
                    .collect();
                (cells[1].parse().expect("a code"), cells[2].clone())
            })
            .collect()
    }

    #[test]
    fn readme_table_is_the_code_table() {
        let code: Vec<(u8, String)> = TABLE.iter().map(|s| (s.code, s.text())).collect();
        assert_eq!(readme_table(), code, "README.md's exit codes differ from src/exit.rs's TABLE");
    }

    #[test]
    fn help_and_man_show_every_code() {
        let (footer, man) = (help_footer(), man_section());
        for status in TABLE {
            assert!(footer.contains(&format!("{} {}", status.code, status.short)));
            assert!(man.contains(&format!("\\fB{}\\fR\n", status.code)));
        }
    }
}
