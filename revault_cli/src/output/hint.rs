//! Advice added to an error message: what to type to get past it. The
//! library says what went wrong; only the CLI knows its flags and
//! commands, so every hint is chosen here, keyed on the error.

use revault_lockbox_api::error::KeyError;
use revault_lockbox_api::read::is_salvageable;
use revault_lockbox_api::s3::S3Error;
use revault_lockbox_api::Error;

use crate::exit::{find, library_error};

/// A hint, and the words that show a message already gives it.
pub struct Hint {
    pub text: &'static str,
    pub marker: &'static str,
}

const fn hint(text: &'static str, marker: &'static str) -> Option<Hint> {
    Some(Hint { text, marker })
}

/// A command that stops at the first damaged page or content whose
/// SHA-256 fails, where another command restores what is intact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopsAtDamage {
    /// A command with no such remedy (or one that reports damage and goes on).
    No,
    /// `extract` without `--keep-going`.
    Extract,
    /// `compact`, which copies every file's content.
    Compact,
}

/// The hint for `err`, if it has one; `stops`: what the command does at
/// damage to some pages.
pub fn for_error(err: &anyhow::Error, stops: StopsAtDamage) -> Option<Hint> {
    if let Some(S3Error::AlreadyExists { .. }) = find::<S3Error>(err) {
        return hint("use --overwrite to replace it", "--overwrite");
    }
    if let Some(S3Error::Raced { .. }) = find::<S3Error>(err) {
        return hint("run it again, or give --wait to write it again on the new state", "--wait");
    }
    if let Some(S3Error::Config { reason, .. }) = find::<S3Error>(err) {
        if reason.contains("plain HTTP") {
            return hint("--allow-http allows it", "--allow-http");
        }
    }
    match find::<KeyError>(err) {
        Some(KeyError::MixedRecipients { .. }) => return mixed(),
        Some(KeyError::InvalidKeyFile(_)) => return key_file(),
        _ => {}
    }
    match library_error(err)? {
        Error::Key(KeyError::MixedRecipients { .. }) => mixed(),
        Error::Key(KeyError::InvalidKeyFile(_)) => key_file(),
        Error::AlreadyExists { .. } => hint("use --overwrite to replace it", "--overwrite"),
        Error::DamagedPage { .. } | Error::ChecksumMismatch { .. } | Error::StoredForm { .. } => {
            match stops {
                StopsAtDamage::No => None,
                StopsAtDamage::Extract => {
                    hint("--keep-going restores the entries that are intact", "--keep-going")
                }
                StopsAtDamage::Compact => hint(
                    "`lockbox repair` rewrites it without the damaged files; \
                     `lockbox extract --keep-going` restores the entries that are intact",
                    "--keep-going",
                ),
            }
        }
        // A cut archive, or a damaged trailer, root or index: the commands
        // that scan the sessions get round it.
        e if is_salvageable(e) => hint(
            "`lockbox verify`, `extract --keep-going` and `repair` recover what can be proven",
            "--keep-going",
        ),
        Error::Locked { .. } => hint("--wait waits for it", "--wait"),
        Error::TooManyImplicitDirs { .. } => hint("--max-implicit-dirs N allows more", "--max-implicit-dirs"),
        Error::KdfOverBudget { .. } => {
            hint("if that is your archive's own slot, --kdf-budget N allows N MiB × passes", "--kdf-budget")
        }
        Error::SlotNotInUse { .. } => hint("see `lockbox key list`", "key list"),
        Error::TooManySessions { .. } => hint("`lockbox compact` merges them", "lockbox compact"),
        Error::ParentInInput { .. } => hint("use -C to change directory instead", "use -C"),
        // tar's warning: "Pattern matching characters used in file names".
        Error::NotFound { path } if path.0.iter().any(|b| b"*?[".contains(b)) => {
            hint("names are matched as patterns only with --wildcards", "--wildcards")
        }
        _ => None,
    }
}

fn mixed() -> Option<Hint> {
    hint("--allow-mixed-recipients allows it", "--allow-mixed-recipients")
}

fn key_file() -> Option<Hint> {
    hint(
        "a key file comes from `lockbox keygen --symmetric`; SSH and age keys go to -r and -i",
        "keygen --symmetric",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(err: Error, strict_extract: bool) -> Option<&'static str> {
        let stops = if strict_extract { StopsAtDamage::Extract } else { StopsAtDamage::No };
        for_error(&anyhow::Error::new(err).context("doing it"), stops).map(|h| h.text)
    }

    #[test]
    fn hints_follow_the_error() {
        assert_eq!(text(Error::Locked { path: "a".into() }, false), Some("--wait waits for it"));
        assert_eq!(
            text(Error::AlreadyExists { path: "a".into() }, false),
            Some("use --overwrite to replace it")
        );
        assert_eq!(text(Error::DamagedPage { number: 1 }, false), None);
        assert!(text(Error::DamagedPage { number: 1 }, true).is_some());
        assert_eq!(text(Error::WrongPassword, true), None);
        assert!(text(Error::Tampered { what: "trailer".into() }, false).is_some_and(|t| t.contains("repair")));
        // A page that authenticates but whose stored form is wrong is
        // damage as any other: the intact entries can still be restored.
        let stored_form = || Error::StoredForm { what: "page 1".into(), why: "trailing bytes" };
        assert_eq!(text(stored_form(), false), None);
        assert_eq!(text(stored_form(), true), text(Error::DamagedPage { number: 1 }, true));
        // `compact` cannot skip a damaged file; extract can.
        let compact = for_error(&Error::DamagedPage { number: 1 }.into(), StopsAtDamage::Compact);
        assert!(compact.is_some_and(|h| h.text.contains("extract --keep-going")));
    }

    #[test]
    fn a_message_that_gives_the_hint_gets_no_second_one() {
        let hint = for_error(&Error::Locked { path: "a".into() }.into(), StopsAtDamage::No).unwrap();
        let message = Error::Locked { path: "a".into() }.to_string();
        assert_eq!(message.contains(hint.marker), message.contains("--wait"));
    }
}
