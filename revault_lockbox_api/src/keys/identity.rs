//! Identities: parsing identity files (`-i FILE`), asking for the
//! passphrase of a protected one through the caller's callback.

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use age::secrecy::SecretString;
use age::DecryptError;
use age_core::format::{FileKey, Stanza};
use zeroize::Zeroizing;

use super::hybrid::HybridIdentity;
use super::plugin::{PluginIdentity, PluginUi};
use super::recipient::{read_limited, RecipientKey};
use super::{KeyError, Recipient, RecipientKind, MAX_KEY_FILE_LEN, MAX_SCRYPT_LOG_N};
use crate::crypto::Locked;
use crate::crypto::Password;

/// The caller's way to get a passphrase for a protected identity: called
/// with a description of the key ("SSH key ~/.ssh/id_ed25519"), returns
/// the passphrase, or `None` if there is none to give. The library asks no
/// terminal itself.
pub type PassphraseFn<'a> = dyn FnMut(&str) -> Option<Password> + 'a;

/// A private key that can open slots wrapped to its recipient.
///
/// Parsed from an identity file's content with [`Identity::parse_file`]:
/// age identity files (`AGE-SECRET-KEY-1…`, `AGE-SECRET-KEY-PQ-1…` and age
/// plugins' `AGE-PLUGIN-NAME-1…` lines, `#` comments), passphrase-protected
/// age identity files (`age -p`, binary or armored), and OpenSSH ed25519
/// and RSA private keys, protected or not. The key is wiped on drop;
/// `Debug` shows only the public recipient (a plugin identity: its
/// plugin's name). A plugin identity runs `age-plugin-NAME` from `PATH`
/// when a slot is tried; give it a [`PluginUi`] with
/// [`with_plugin_ui`](Self::with_plugin_ui).
#[derive(Clone)]
pub struct Identity(IdentityKey);

#[derive(Clone)]
/// Each key in its own locked allocation (an RSA key's numbers are on the
/// heap of the `rsa` crate, beyond this lock).
enum IdentityKey {
    X25519(Locked<age::x25519::Identity>),
    Hybrid(Locked<HybridIdentity>),
    Ssh(Locked<SshIdentity>),
    /// The plugin's identity string is age's type, not locked nor wiped
    /// (for hardware keys it names the key, which stays in the device).
    Plugin(PluginIdentity),
}

#[derive(Clone)]
struct SshIdentity {
    key: age::ssh::Identity,
    public: age::ssh::Recipient,
}

const ARMOR_BEGIN: &[u8] = b"-----BEGIN AGE ENCRYPTED FILE-----";
const AGE_BINARY_BEGIN: &[u8] = b"age-encryption.org/";
const PEM_BEGIN: &[u8] = b"-----BEGIN ";

impl Identity {
    /// Parses the content of an identity file; see the type's docs for
    /// the formats. `passphrase` is asked only for a protected file.
    pub fn parse_file(content: &[u8], passphrase: &mut PassphraseFn<'_>) -> Result<Vec<Identity>, KeyError> {
        parse_named(content, None, passphrase)
    }

    /// Reads and parses an identity file of at most 1 MiB; the passphrase
    /// request names it.
    pub fn read_file(path: &Path, passphrase: &mut PassphraseFn<'_>) -> Result<Vec<Identity>, KeyError> {
        let content = Zeroizing::new(
            read_limited(path).map_err(|source| KeyError::Io { path: path.to_owned(), source })?,
        );
        parse_named(&content, Some(&crate::quote::Quoted::path(path).to_string()), passphrase)
    }

    /// The recipient this identity opens slots for; `None` for a plugin
    /// identity (only its plugin knows).
    pub fn to_recipient(&self) -> Option<Recipient> {
        Some(Recipient(match &self.0 {
            IdentityKey::X25519(i) => RecipientKey::X25519(i.to_public()),
            IdentityKey::Hybrid(i) => RecipientKey::Hybrid(Box::new(i.to_public())),
            IdentityKey::Ssh(ssh) => RecipientKey::Ssh(ssh.public.clone()),
            IdentityKey::Plugin(_) => return None,
        }))
    }

    /// Which kind of key this is.
    pub fn kind(&self) -> RecipientKind {
        match self.to_recipient() {
            Some(r) => r.kind(),
            None => RecipientKind::Plugin,
        }
    }

    /// The age plugin behind a plugin identity (`yubikey` for
    /// `age-plugin-yubikey`).
    pub fn plugin(&self) -> Option<&str> {
        match &self.0 {
            IdentityKey::Plugin(p) => Some(p.name()),
            _ => None,
        }
    }

    /// Sends what a plugin identity's plugin says and asks to `ui` (by
    /// default it is dropped and refused); other identities ignore it.
    pub fn with_plugin_ui(mut self, ui: std::sync::Arc<dyn PluginUi>) -> Identity {
        if let IdentityKey::Plugin(p) = &mut self.0 {
            p.with_ui(ui);
        }
        self
    }

    /// The age identity behind this one, for those age implements in
    /// process (all but plugins).
    pub(super) fn native(&self) -> Option<&dyn age::Identity> {
        match &self.0 {
            IdentityKey::X25519(i) => Some(&**i),
            IdentityKey::Hybrid(i) => Some(&**i),
            IdentityKey::Ssh(ssh) => Some(&ssh.key),
            IdentityKey::Plugin(_) => None,
        }
    }

    /// age's answer for one slot's stanzas (`None`: not this identity); a
    /// plugin identity runs its plugin, whose own errors are `Err`.
    pub(super) fn unwrap_stanzas(
        &self,
        stanzas: &[Stanza],
    ) -> Result<Option<Result<FileKey, DecryptError>>, KeyError> {
        match (&self.0, self.native()) {
            (IdentityKey::Plugin(p), _) => p.unwrap(stanzas),
            (_, Some(age)) => Ok(age.unwrap_stanzas(stanzas)),
            (_, None) => Ok(None),
        }
    }

    pub(super) fn from_hybrid(i: HybridIdentity) -> Identity {
        Identity(IdentityKey::Hybrid(Locked::new(i)))
    }

    pub(super) fn from_x25519(i: age::x25519::Identity) -> Identity {
        Identity(IdentityKey::X25519(Locked::new(i)))
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.to_recipient(), self.plugin()) {
            (Some(r), _) => write!(f, "Identity({r:?})"),
            (None, plugin) => write!(f, "Identity(age plugin {})", plugin.unwrap_or("?")),
        }
    }
}

fn parse_named(
    content: &[u8],
    name: Option<&str>,
    passphrase: &mut PassphraseFn<'_>,
) -> Result<Vec<Identity>, KeyError> {
    let start = content.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(content.len());
    let head = &content[start..];
    if head.starts_with(ARMOR_BEGIN) || head.starts_with(AGE_BINARY_BEGIN) {
        let inner = decrypt_age_identity_file(content, name, passphrase)?;
        return parse_age_lines(&inner, name);
    }
    if head.starts_with(PEM_BEGIN) {
        return parse_ssh(content, name, passphrase).map(|i| vec![i]);
    }
    parse_age_lines(content, name)
}

fn parse_age_lines(content: &[u8], name: Option<&str>) -> Result<Vec<Identity>, KeyError> {
    let text = std::str::from_utf8(content)
        .map_err(|_| KeyError::InvalidIdentity { line: None, reason: "not UTF-8 text".into() })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |reason: &str| KeyError::InvalidIdentity { line: Some(i + 1), reason: reason.to_owned() };
        let id = if line.starts_with("AGE-SECRET-KEY-PQ-") {
            HybridIdentity::parse(line).map(Identity::from_hybrid).map_err(bad)?
        } else if line.starts_with("AGE-SECRET-KEY-1") {
            age::x25519::Identity::from_str(line).map(Identity::from_x25519).map_err(bad)?
        } else if line.starts_with("AGE-PLUGIN-") {
            PluginIdentity::parse(line).map(|p| Identity(IdentityKey::Plugin(p))).map_err(|e| bad(&e))?
        } else {
            return Err(bad(
                "not an age identity (AGE-SECRET-KEY-1…, AGE-SECRET-KEY-PQ-1…) nor an OpenSSH private key",
            ));
        };
        out.push(id);
    }
    if out.is_empty() {
        return Err(KeyError::Empty(name.unwrap_or("identity file").to_owned()));
    }
    Ok(out)
}

fn ask(passphrase: &mut PassphraseFn<'_>, what: &str) -> Result<SecretString, KeyError> {
    let p = passphrase(what).ok_or(KeyError::PassphraseRequired)?;
    let s = std::str::from_utf8(p.expose()).map_err(|_| KeyError::WrongPassphrase)?;
    Ok(SecretString::from(s.to_owned()))
}

fn parse_ssh(
    content: &[u8],
    name: Option<&str>,
    passphrase: &mut PassphraseFn<'_>,
) -> Result<Identity, KeyError> {
    let parsed = age::ssh::Identity::from_buffer(content, name.map(str::to_owned))
        .map_err(|e| KeyError::InvalidIdentity { line: None, reason: format!("OpenSSH private key: {e}") })?;
    let key = match parsed {
        age::ssh::Identity::Unencrypted(k) => age::ssh::Identity::Unencrypted(k),
        age::ssh::Identity::Encrypted(enc) => {
            let what = match name {
                Some(n) => format!("SSH key {n}"),
                None => "SSH key".to_owned(),
            };
            let secret = ask(passphrase, &what)?;
            age::ssh::Identity::Unencrypted(enc.decrypt(secret).map_err(|_| KeyError::WrongPassphrase)?)
        }
        age::ssh::Identity::Unsupported(u) => {
            let reason = match u {
                age::ssh::UnsupportedKey::Type(t) => format!("unsupported SSH key type {t}"),
                age::ssh::UnsupportedKey::Hardware(t) => format!("hardware SSH keys ({t}) are not supported"),
                age::ssh::UnsupportedKey::EncryptedSsh(c) => {
                    format!("SSH key encrypted with unsupported cipher {c}")
                }
                other => format!("unsupported SSH key ({other:?})"),
            };
            return Err(KeyError::InvalidIdentity { line: None, reason });
        }
    };
    let public = age::ssh::Recipient::try_from(key.clone()).map_err(|e| KeyError::InvalidIdentity {
        line: None,
        reason: format!("SSH key has no usable public key ({e:?})"),
    })?;
    Ok(Identity(IdentityKey::Ssh(Locked::new(SshIdentity { key, public }))))
}

/// Decrypts an `age -p` identity file (binary or armored) with the
/// passphrase; refuses one that asks for more than 2^MAX_SCRYPT_LOG_N work.
fn decrypt_age_identity_file(
    content: &[u8],
    name: Option<&str>,
    passphrase: &mut PassphraseFn<'_>,
) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    let malformed = |what: &str| KeyError::InvalidIdentity {
        line: None,
        reason: format!("encrypted age identity file: {what}"),
    };
    let decryptor = age::Decryptor::new_buffered(age::armor::ArmoredReader::new(content))
        .map_err(|e| malformed(&e.to_string()))?;
    if !decryptor.is_scrypt() {
        return Err(malformed("not protected by a passphrase"));
    }
    let what = match name {
        Some(n) => format!("age identity file {n}"),
        None => "age identity file".to_owned(),
    };
    let mut scrypt = age::scrypt::Identity::new(ask(passphrase, &what)?);
    scrypt.set_max_work_factor(MAX_SCRYPT_LOG_N);
    let mut reader =
        decryptor.decrypt(std::iter::once(&scrypt as &dyn age::Identity)).map_err(|e| match e {
            DecryptError::ExcessiveWork { required, .. } => {
                malformed(&format!("asks for scrypt work 2^{required}, more than 2^{MAX_SCRYPT_LOG_N}"))
            }
            DecryptError::InvalidHeader | DecryptError::UnknownFormat | DecryptError::Io(_) => {
                malformed(&e.to_string())
            }
            _ => KeyError::WrongPassphrase,
        })?;
    let mut inner = Zeroizing::new(Vec::new());
    (&mut reader)
        .take(MAX_KEY_FILE_LEN + 1)
        .read_to_end(&mut inner)
        .map_err(|_| KeyError::WrongPassphrase)?;
    if inner.len() as u64 > MAX_KEY_FILE_LEN {
        return Err(malformed("too large"));
    }
    Ok(inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::keygen;
    use std::io::Write;

    const X25519_ID: &str = "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0";

    fn no_passphrase() -> impl FnMut(&str) -> Option<Password> {
        |_| panic!("no passphrase should be asked")
    }

    /// `inner` encrypted to a passphrase, like `age -p [-a]`, at a cheap
    /// scrypt cost.
    fn passphrase_protected(inner: &[u8], passphrase: &str, armored: bool) -> Vec<u8> {
        let mut r = age::scrypt::Recipient::new(SecretString::from(passphrase.to_owned()));
        r.set_work_factor(10);
        let e = age::Encryptor::with_recipients(std::iter::once(&r as &dyn age::Recipient)).unwrap();
        let format = if armored { age::armor::Format::AsciiArmor } else { age::armor::Format::Binary };
        let armor = age::armor::ArmoredWriter::wrap_output(Vec::new(), format).unwrap();
        let mut w = e.wrap_output(armor).unwrap();
        w.write_all(inner).unwrap();
        w.finish().unwrap().finish().unwrap()
    }

    #[test]
    fn age_identity_file_with_comments_and_both_kinds() {
        let (pq, _) = keygen(true).unwrap();
        let text = format!("# created: x\n\n{X25519_ID}\n{}", pq.as_str());
        let ids = Identity::parse_file(text.as_bytes(), &mut no_passphrase()).unwrap();
        let kinds: Vec<_> = ids.iter().map(Identity::kind).collect();
        assert_eq!(kinds, [RecipientKind::X25519, RecipientKind::Hybrid]);
        for id in &ids {
            let shown = format!("{id:?}");
            assert!(!shown.contains("SECRET-KEY"), "{shown}");
            assert!(shown.contains("age1"), "{shown}");
        }
    }

    #[test]
    fn plugin_identities_parse_without_running_their_plugin() {
        let line = "AGE-PLUGIN-LOCKBOXTEST-1UNKCA0V2K69NZVR83Y284JK6J57ATDUK8VPWF26QEVV7M2RX7NESQYJHWR";
        let ids =
            Identity::parse_file(format!("# a key\n{line}\n").as_bytes(), &mut no_passphrase()).unwrap();
        assert_eq!((ids[0].kind(), ids[0].plugin()), (RecipientKind::Plugin, Some("lockboxtest")));
        assert!(ids[0].to_recipient().is_none());
        let shown = format!("{:?}", ids[0]);
        assert!(shown.contains("lockboxtest") && !shown.contains("UNKCA0"), "{shown}");
    }

    #[test]
    fn bad_identity_files_name_the_line_not_the_content() {
        let text = format!("# c\n{X25519_ID}\nAGE-SECRET-KEY-1QQQQ-oops\n");
        let err = Identity::parse_file(text.as_bytes(), &mut no_passphrase()).unwrap_err();
        assert!(matches!(err, KeyError::InvalidIdentity { line: Some(3), .. }), "{err}");
        assert!(!err.to_string().contains("oops"), "{err}");
        let truncated = &X25519_ID[..X25519_ID.len() - 5];
        let err = Identity::parse_file(truncated.as_bytes(), &mut no_passphrase()).unwrap_err();
        assert!(matches!(err, KeyError::InvalidIdentity { line: Some(1), .. }), "{err}");
        for (bad, want) in [
            (&b"age1xmwwc06ly3ee5rytxm9mflaz2u56jjj36s0mypdrwsvlul66mv4q47ryef\n"[..], "not an age identity"),
            (b"AGE-PLUGIN-YUBIKEY-1QQQQ\n", "age plugin identity"),
            (b"\xff\xfe\n", "UTF-8"),
        ] {
            let err = Identity::parse_file(bad, &mut no_passphrase()).unwrap_err();
            assert!(err.to_string().contains(want), "{err}");
        }
        assert!(matches!(Identity::parse_file(b"# only\n\n", &mut no_passphrase()), Err(KeyError::Empty(_))));
        let pem = b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n";
        let err = Identity::parse_file(pem, &mut no_passphrase()).unwrap_err();
        assert!(matches!(err, KeyError::InvalidIdentity { line: None, .. }), "{err}");
    }

    #[test]
    fn passphrase_protected_age_identity_files() {
        let (inner, public) = keygen(true).unwrap();
        for armored in [false, true] {
            let file = passphrase_protected(inner.as_bytes(), "pass phrase", armored);
            let mut asked = 0;
            let ids = Identity::parse_file(&file, &mut |what| {
                asked += 1;
                assert!(what.contains("age identity file"), "{what}");
                Some(Password::from("pass phrase"))
            })
            .unwrap();
            assert_eq!(asked, 1);
            assert_eq!(ids[0].to_recipient().unwrap().to_string(), public);

            let wrong = Identity::parse_file(&file, &mut |_| Some(Password::from("nope")));
            assert!(matches!(wrong, Err(KeyError::WrongPassphrase)), "{wrong:?}");
            let none = Identity::parse_file(&file, &mut |_| None);
            assert!(matches!(none, Err(KeyError::PassphraseRequired)), "{none:?}");
        }
    }

    #[test]
    fn age_identity_file_asking_too_much_scrypt_work_is_refused() {
        let mut file = passphrase_protected(X25519_ID.as_bytes(), "p", false);
        let at = file.windows(4).position(|w| w == b" 10\n").expect("work factor in the header");
        file[at + 1..at + 3].copy_from_slice(b"21");
        let err = Identity::parse_file(&file, &mut |_| Some(Password::from("p"))).unwrap_err();
        assert!(err.to_string().contains("scrypt work"), "{err}");
    }
}
