//! Recipients: parsing `-r` strings and `-R` files.

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use age::ssh::ParseRecipientKeyError;

use age_core::format::{FileKey, Stanza};

use super::hybrid::HybridRecipient;
use super::plugin::{PluginRecipient, PluginUi};
use super::{KeyError, MAX_KEY_FILE_LEN, MAX_RECIPIENT_LEN};

/// The kinds of public keys an archive can be encrypted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecipientKind {
    /// age X25519 (`age1…`).
    X25519,
    /// age v1.3 ML-KEM-768 + X25519 hybrid, post-quantum (`age1pq1…`).
    Hybrid,
    /// An OpenSSH ed25519 public key.
    SshEd25519,
    /// An OpenSSH RSA public key (2048 to 4096 bits).
    SshRsa,
    /// An age plugin's (`age1NAME1…`), wrapped by `age-plugin-NAME`.
    Plugin,
}

impl fmt::Display for RecipientKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecipientKind::X25519 => "X25519",
            RecipientKind::Hybrid => "ML-KEM-768 + X25519",
            RecipientKind::SshEd25519 => "ssh-ed25519",
            RecipientKind::SshRsa => "ssh-rsa",
            RecipientKind::Plugin => "age plugin",
        })
    }
}

/// A public key an archive's content key can be wrapped to.
///
/// Parsed from a string with [`str::parse`]: `age1…`, `age1pq1…`,
/// `ssh-ed25519 AAAA… [comment]`, `ssh-rsa AAAA… [comment]` or an age
/// plugin's `age1NAME1…` (wrapping runs `age-plugin-NAME` from `PATH`; give
/// it a [`PluginUi`] with [`with_plugin_ui`](Self::with_plugin_ui)). `Display`
/// gives the canonical form (SSH keys without their comment).
#[derive(Clone)]
pub struct Recipient(pub(super) RecipientKey);

#[derive(Clone)]
pub(super) enum RecipientKey {
    X25519(age::x25519::Recipient),
    Hybrid(Box<HybridRecipient>),
    Ssh(age::ssh::Recipient),
    Plugin(PluginRecipient),
}

impl Recipient {
    /// Which kind of key this is.
    pub fn kind(&self) -> RecipientKind {
        match &self.0 {
            RecipientKey::X25519(_) => RecipientKind::X25519,
            RecipientKey::Hybrid(_) => RecipientKind::Hybrid,
            RecipientKey::Ssh(age::ssh::Recipient::SshEd25519(..)) => RecipientKind::SshEd25519,
            RecipientKey::Ssh(age::ssh::Recipient::SshRsa(..)) => RecipientKind::SshRsa,
            RecipientKey::Plugin(_) => RecipientKind::Plugin,
        }
    }

    /// The age plugin that wraps to this recipient (`yubikey` for
    /// `age-plugin-yubikey`), for a plugin recipient.
    pub fn plugin(&self) -> Option<&str> {
        match &self.0 {
            RecipientKey::Plugin(p) => Some(p.name()),
            _ => None,
        }
    }

    /// Sends what a plugin recipient's plugin says and asks to `ui` (by
    /// default it is dropped and refused); other recipients ignore it.
    pub fn with_plugin_ui(self, ui: std::sync::Arc<dyn PluginUi>) -> Recipient {
        match self.0 {
            RecipientKey::Plugin(p) => Recipient(RecipientKey::Plugin(p.with_ui(ui))),
            other => Recipient(other),
        }
    }

    /// Whether wrapping to this recipient resists a quantum computer.
    pub fn is_post_quantum(&self) -> bool {
        self.kind() == RecipientKind::Hybrid
    }

    /// The age stanzas wrapping `file_key` to this recipient (a plugin
    /// recipient runs its plugin).
    pub(super) fn wrap_file_key(&self, file_key: &FileKey) -> Result<Vec<Stanza>, KeyError> {
        let age: &dyn age::Recipient = match &self.0 {
            RecipientKey::X25519(r) => r,
            RecipientKey::Hybrid(r) => r.as_ref(),
            RecipientKey::Ssh(r) => r,
            RecipientKey::Plugin(p) => return p.wrap(file_key),
        };
        let (stanzas, _labels) = age.wrap_file_key(file_key).map_err(|e| KeyError::Wrap(e.to_string()))?;
        Ok(stanzas)
    }
}

impl FromStr for Recipient {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Recipient, KeyError> {
        parse_one(s.trim()).map_err(|reason| KeyError::InvalidRecipient { shown: shorten(s.trim()), reason })
    }
}

impl fmt::Display for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            RecipientKey::X25519(r) => r.fmt(f),
            RecipientKey::Hybrid(r) => r.fmt(f),
            RecipientKey::Ssh(r) => r.fmt(f),
            RecipientKey::Plugin(r) => r.fmt(f),
        }
    }
}

impl fmt::Debug for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Recipient({}, {})", self.kind(), shorten(&self.to_string()))
    }
}

impl PartialEq for Recipient {
    fn eq(&self, other: &Recipient) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Recipient {}

/// First characters of a (public) key string, for messages; nothing of a
/// secret key pasted by mistake.
fn shorten(s: &str) -> String {
    const SHOWN: usize = 24;
    if s.to_ascii_uppercase().starts_with("AGE-SECRET-KEY") {
        return "`AGE-SECRET-KEY-…`".to_owned();
    }
    match s.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("`{}…`", crate::quote::Quoted::bytes(&s.as_bytes()[..at])),
        None => format!("`{}`", crate::quote::Quoted::bytes(s.as_bytes())),
    }
}

fn parse_one(s: &str) -> Result<Recipient, String> {
    if s.len() > MAX_RECIPIENT_LEN {
        return Err(format!("longer than {MAX_RECIPIENT_LEN} bytes"));
    }
    if s.starts_with("age1pq1") {
        return HybridRecipient::parse(s)
            .map(|r| Recipient(RecipientKey::Hybrid(Box::new(r))))
            .map_err(str::to_owned);
    }
    if let Some(data) = s.strip_prefix("age1") {
        // Bech32 data never holds a `1`: a second one marks a plugin
        // recipient (`age1name1…`).
        if data.contains('1') {
            return PluginRecipient::parse(s).map(|r| Recipient(RecipientKey::Plugin(r)));
        }
        return match age::x25519::Recipient::from_str(s) {
            Ok(r) => Ok(Recipient(RecipientKey::X25519(r))),
            Err(e) => Err(e.to_owned()),
        };
    }
    if s.starts_with("ssh-") || s.starts_with("ecdsa-") || s.starts_with("sk-") {
        return match age::ssh::Recipient::from_str(s) {
            Ok(r) => Ok(Recipient(RecipientKey::Ssh(r))),
            Err(ParseRecipientKeyError::RsaModulusTooLarge) => Err("RSA key larger than 4096 bits".into()),
            Err(ParseRecipientKeyError::RsaModulusTooSmall) => Err("RSA key smaller than 2048 bits".into()),
            Err(ParseRecipientKeyError::Unsupported(kind)) => Err(format!("unsupported SSH key type {kind}")),
            Err(ParseRecipientKeyError::Invalid(why)) => Err(why.to_owned()),
            Err(_) => Err("unsupported SSH key".into()),
        };
    }
    if s.starts_with("AGE-SECRET-KEY-") {
        return Err("this is a secret key (an identity), not a recipient".into());
    }
    Err("expected age1…, age1pq1…, age1PLUGIN1…, ssh-ed25519 or ssh-rsa".into())
}

/// Parses a recipients file: one recipient a line; blank lines and lines
/// starting with `#` are ignored. `source_name` names the file in errors,
/// which give the 1-based line number. A file with no recipient is an error.
pub fn parse_recipients(text: &str, source_name: &str) -> Result<Vec<Recipient>, KeyError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let r = parse_one(line).map_err(|reason| KeyError::RecipientsFile {
            source_name: source_name.to_owned(),
            line: i + 1,
            reason,
        })?;
        out.push(r);
    }
    if out.is_empty() {
        return Err(KeyError::Empty(source_name.to_owned()));
    }
    Ok(out)
}

/// Reads a recipients file (`-R FILE`) of at most 1 MiB; see
/// [`parse_recipients`].
pub fn read_recipients_file(path: &Path) -> Result<Vec<Recipient>, KeyError> {
    let io_err = |source| KeyError::Io { path: path.to_owned(), source };
    let text = read_limited(path).map_err(io_err)?;
    let text = String::from_utf8(text)
        .map_err(|_| io_err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text")))?;
    parse_recipients(&text, &crate::quote::Quoted::path(path).to_string())
}

/// Reads a whole key file, refusing one over [`MAX_KEY_FILE_LEN`].
pub(super) fn read_limited(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    std::fs::File::open(path)?.take(MAX_KEY_FILE_LEN + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_KEY_FILE_LEN {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {MAX_KEY_FILE_LEN} bytes"),
        ));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    const X25519: &str = "age1xmwwc06ly3ee5rytxm9mflaz2u56jjj36s0mypdrwsvlul66mv4q47ryef";

    #[test]
    fn kinds_are_recognised() {
        let r: Recipient = X25519.parse().unwrap();
        assert_eq!(r.kind(), RecipientKind::X25519);
        assert_eq!(r.to_string(), X25519);
        assert!(!r.is_post_quantum());
        let r: Recipient = format!("  {X25519}\n").parse().unwrap();
        assert_eq!(r.to_string(), X25519);
    }

    #[test]
    fn plugin_recipients_are_recognised_and_bad_ones_refused() {
        let plugin = "age1lockboxtest1gfxq5wltx98rvpxjp2e9qdx9kr6g2e246lgh7esw96sw7wc5da2ql6e8r8";
        let r: Recipient = plugin.parse().unwrap();
        assert_eq!((r.kind(), r.plugin()), (RecipientKind::Plugin, Some("lockboxtest")));
        assert_eq!(r.to_string(), plugin);
        assert!(!r.is_post_quantum(), "counts as classical-only");
        let x: Recipient = X25519.parse().unwrap();
        assert_eq!(x.plugin(), None);
        let bad_checksum = plugin.replace("r8", "r9");
        let err = bad_checksum.parse::<Recipient>().unwrap_err().to_string();
        assert!(err.contains("age plugin recipient"), "{err}");
    }

    #[test]
    fn a_recipient_with_terminal_escapes_is_quoted_in_its_error() {
        let err = "age1\x1b]0;x\x07".parse::<Recipient>().unwrap_err().to_string();
        assert!(err.contains("`age1\\033]0;x\\a`") && !err.contains('\x1b'), "{err:?}");
    }

    #[test]
    fn malformed_strings_are_refused_with_a_reason() {
        for bad in [
            "",
            "age1",
            "age1xmwwc06ly3ee5rytxm9mflaz2u56jjj36s0mypdrwsvlul66mv4q47ryeg",
            "age1pq1qqqq",
            "ssh-ed25519 AAAA",
            "ssh-dss AAAAB3NzaC1kc3MAAACBAP",
            "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0",
            "hello",
        ] {
            let err = bad.parse::<Recipient>().unwrap_err();
            assert!(matches!(err, KeyError::InvalidRecipient { .. }), "{bad}: {err}");
            assert!(!err.to_string().contains("EGTZ"), "secret echoed: {err}");
        }
        let long = "age1".to_owned() + &"q".repeat(MAX_RECIPIENT_LEN);
        assert!(long.parse::<Recipient>().unwrap_err().to_string().contains("longer than"));
    }

    #[test]
    fn recipients_file_comments_blanks_and_line_numbers() {
        let text = format!("# team\n\n{X25519}\n   \n# end\n");
        let rs = parse_recipients(&text, "team.txt").unwrap();
        assert_eq!(rs.len(), 1);
        let err = parse_recipients(&format!("{X25519}\n# c\nnot-a-key\n"), "team.txt").unwrap_err();
        match &err {
            KeyError::RecipientsFile { line, source_name, .. } => {
                assert_eq!(*line, 3);
                assert_eq!(source_name, "team.txt");
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().starts_with("team.txt, line 3: "), "{err}");
        assert!(matches!(parse_recipients("# nothing\n\n", "f"), Err(KeyError::Empty(_))));
    }
}
