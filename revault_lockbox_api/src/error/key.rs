//! The key material's error: what went wrong parsing a recipient, an
//! identity or a key file, or wrapping and unwrapping a slot.

use std::path::PathBuf;

use crate::quote::Quoted;

/// What went wrong parsing keys or reading a slot.
///
/// Messages never include secret material: a bad identity line is named by
/// its number, not its content.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A key file is malformed (the text never appears in the message).
    #[error("invalid key file: {0}")]
    InvalidKeyFile(&'static str),
    /// A signing key file is malformed (the key never appears in the message).
    #[error("invalid signing key file: {0}")]
    InvalidSigningKey(&'static str),
    /// A signing public key (or its `.pub` file) is malformed.
    #[error("invalid signing public key: {0}")]
    InvalidSigningPublicKey(&'static str),
    /// A signer's fingerprint (`lbsig1…`) is malformed.
    #[error("invalid signer fingerprint {shown}: {reason}")]
    InvalidFingerprint {
        /// The start of the string, for the message.
        shown: String,
        /// Why it was refused.
        reason: String,
    },
    /// A session signature is not well formed.
    #[error("invalid session signature: {0}")]
    InvalidSignature(&'static str),
    /// Argon2id could not derive the key of a passphrase-protected signing key.
    #[error("deriving the key from the passphrase")]
    Kdf(#[source] std::io::Error),
    /// A recipient string is not one of the supported kinds or is malformed.
    #[error("invalid recipient {shown}: {reason}")]
    InvalidRecipient {
        /// The start of the string, for the message.
        shown: String,
        /// Why it was refused.
        reason: String,
    },
    /// A line of a recipients file is not a valid recipient.
    #[error("{source_name}, line {line}: {reason}")]
    RecipientsFile {
        /// The file (or "recipients" when it has no name).
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// Why the line was refused.
        reason: String,
    },
    /// A line of a trusted signers file (`--signers`) names no signer.
    #[error("{source_name}, line {line}: {reason}")]
    SignersFile {
        /// The file.
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// Why the line was refused.
        reason: String,
    },
    /// An identity is malformed or of a kind not supported.
    #[error("invalid identity{}: {reason}", line.map(|l| format!(" on line {l}")).unwrap_or_default())]
    InvalidIdentity {
        /// 1-based line number in an age identity file, when there is one.
        line: Option<usize>,
        /// Why it was refused (never the key itself).
        reason: String,
    },
    /// A file holds no recipient or no identity.
    #[error("{0} holds no keys")]
    Empty(String),
    /// A passphrase-protected identity needs a passphrase and none was given.
    #[error("identity is passphrase-protected and no passphrase was given")]
    PassphraseRequired,
    /// The passphrase did not decrypt the identity.
    #[error("wrong passphrase or corrupted identity")]
    WrongPassphrase,
    /// Post-quantum and classical-only recipients were given together.
    #[error(
        "post-quantum recipients ({pq}) cannot be mixed with classical-only recipients ({classical}): \
         the archive would open with a key a quantum computer can break; allow mixing explicitly to do it anyway"
    )]
    MixedRecipients {
        /// How many hybrid recipients.
        pq: usize,
        /// How many classical-only recipients.
        classical: usize,
    },
    /// A slot body would not fit the archive's slot room.
    #[error("key slot body of {len} bytes exceeds the {max}-byte limit")]
    SlotTooLarge {
        /// The body's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A slot body is not well formed.
    #[error("malformed recipient key slot: {0}")]
    MalformedSlot(&'static str),
    /// Wrapping a key to a recipient failed.
    #[error("cannot wrap key for recipient: {0}")]
    Wrap(String),
    /// The program an age plugin recipient or identity needs
    /// (`age-plugin-NAME`) is not on `PATH`.
    #[error("age plugin {binary} not found on PATH")]
    MissingPlugin {
        /// The plugin's binary name.
        binary: String,
    },
    /// An age plugin reported an error for its identity while opening a
    /// slot (a wrong PIN, a key that is not there, a refused request).
    #[error("{binary}: {message}")]
    PluginRefused {
        /// The plugin's binary name.
        binary: String,
        /// What it said, quoted.
        message: String,
    },
    /// Reading a key file failed.
    #[error("reading {}", Quoted::path(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The system's random generator failed.
    #[error("random generator failed")]
    Random(#[source] std::io::Error),
}
