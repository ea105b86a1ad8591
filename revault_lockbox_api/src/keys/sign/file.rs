//! The signing key files (docs/KEYS.md, "Signing keys"): the secret key,
//! in the clear or under a passphrase (Argon2id at the slot defaults, then
//! ChaCha20-Poly1305), and the `.pub` file with the full public key.

use std::path::Path;

use base64::prelude::{Engine, BASE64_STANDARD};
use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};
use zeroize::Zeroizing;

use super::key::{SigningKey, VerifyingKey, SECRET_LEN};
use crate::crypto::{KdfParams, Password};
use crate::keys::keygen::created_now;
use crate::keys::{random_bytes, KeyError, PassphraseFn, MAX_KEY_FILE_LEN};

/// The key line of a secret key in the clear: then 128 hex digits.
const SECRET_PREFIX: &str = "LOCKBOX-SIGNING-KEY-1 ";
/// The key line of a passphrase-protected secret key.
const PROTECTED_PREFIX: &str = "LOCKBOX-SIGNING-KEY-ARGON2ID-1 ";
/// The key line of a public key: then the 1984 bytes in padded base64.
pub(super) const PUBLIC_PREFIX: &str = "LOCKBOX-SIGNING-PUBLIC-KEY-1 ";
/// Argon2id salt length in a protected key.
const SALT_LEN: usize = 16;
/// The sealed secret: 64 bytes and the 16-byte tag.
const SEALED_LEN: usize = SECRET_LEN + 16;

impl SigningKey {
    /// The secret key file's text: comment lines (created, fingerprint),
    /// then the key line; with `passphrase`, the secret is sealed under a
    /// key Argon2id derives from it with `kdf` (the slot defaults:
    /// [`KdfParams::default`]).
    pub fn to_file_text(
        &self,
        passphrase: Option<(&Password, KdfParams)>,
    ) -> Result<Zeroizing<String>, KeyError> {
        let comments = format!(
            "# lockbox signing key (Ed25519 + ML-DSA-65): keep it secret\n# created: {}\n# fingerprint: {}\n",
            created_now(),
            self.fingerprint()
        );
        let line = match passphrase {
            None => Zeroizing::new(format!("{SECRET_PREFIX}{}", hex(self.seeds()).as_str())),
            Some((passphrase, kdf)) => Zeroizing::new(protect(self.seeds(), passphrase, kdf)?),
        };
        Ok(Zeroizing::new(format!("{comments}{}\n", line.as_str())))
    }

    /// Parses a secret key file: `#` comments and blank lines, then one key
    /// line. A protected key asks `passphrase` (with a prompt naming it);
    /// `None` there is [`KeyError::PassphraseRequired`], a wrong one
    /// [`KeyError::WrongPassphrase`].
    pub fn parse_file(text: &[u8], passphrase: &mut PassphraseFn<'_>) -> Result<SigningKey, KeyError> {
        let bad = KeyError::InvalidSigningKey;
        let line = key_line(text).map_err(bad)?;
        let seeds = if let Some(digits) = line.strip_prefix(SECRET_PREFIX) {
            unhex::<SECRET_LEN>(digits).ok_or(bad("the key is not 128 hex digits"))?
        } else if let Some(fields) = line.strip_prefix(PROTECTED_PREFIX) {
            unprotect(line, fields, passphrase)?
        } else {
            return Err(bad("the key line does not start with LOCKBOX-SIGNING-KEY-1"));
        };
        Ok(SigningKey::from_seeds(&seeds))
    }

    /// Reads and parses the secret key file at `path`.
    pub fn read_file(path: &Path, passphrase: &mut PassphraseFn<'_>) -> Result<SigningKey, KeyError> {
        SigningKey::parse_file(&read_bounded(path)?, passphrase)
    }
}

impl VerifyingKey {
    /// The `.pub` file's text: comment lines, then the key line.
    pub fn to_file_text(&self) -> String {
        format!(
            "# lockbox signing public key (Ed25519 + ML-DSA-65)\n# fingerprint: {}\n{PUBLIC_PREFIX}{}\n",
            self.fingerprint(),
            BASE64_STANDARD.encode(self.as_bytes())
        )
    }

    /// Parses a `.pub` file: `#` comments and blank lines, then one key line.
    pub fn parse_file(text: &[u8]) -> Result<VerifyingKey, KeyError> {
        let bad = KeyError::InvalidSigningPublicKey;
        let line = key_line(text).map_err(bad)?;
        let b64 = line
            .strip_prefix(PUBLIC_PREFIX)
            .ok_or(bad("the key line does not start with LOCKBOX-SIGNING-PUBLIC-KEY-1"))?;
        let bytes = BASE64_STANDARD.decode(b64).map_err(|_| bad("the key is not canonical base64"))?;
        VerifyingKey::from_bytes(&bytes)
    }

    /// Reads and parses the `.pub` file at `path`.
    pub fn read_file(path: &Path) -> Result<VerifyingKey, KeyError> {
        VerifyingKey::parse_file(&read_bounded(path)?)
    }
}

/// The one key line among `#` comments and blank lines.
fn key_line(text: &[u8]) -> Result<&str, &'static str> {
    let text = std::str::from_utf8(text).map_err(|_| "not UTF-8 text")?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
    let line = lines.next().ok_or("no key line")?;
    if lines.next().is_some() {
        return Err("more than one key line");
    }
    Ok(line)
}

/// The file at `path`, at most [`MAX_KEY_FILE_LEN`] bytes, wiped on drop.
fn read_bounded(path: &Path) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    use std::io::Read;
    let io = |source| KeyError::Io { path: path.to_path_buf(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut text = Zeroizing::new(Vec::new());
    file.take(MAX_KEY_FILE_LEN + 1).read_to_end(&mut text).map_err(io)?;
    if text.len() as u64 > MAX_KEY_FILE_LEN {
        return Err(KeyError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "larger than 1 MiB"),
        });
    }
    Ok(text)
}

/// `PROTECTED_PREFIX m_kib t p salt_hex sealed_hex`: the secret sealed
/// under Argon2id(passphrase, salt), the line before the sealed field as AAD.
fn protect(seeds: &[u8; SECRET_LEN], passphrase: &Password, kdf: KdfParams) -> Result<String, KeyError> {
    let mut salt = [0u8; SALT_LEN];
    random_bytes(&mut salt)?;
    let head = format!("{PROTECTED_PREFIX}{} {} {} {}", kdf.m_kib, kdf.t, kdf.p, hex(&salt).as_str());
    let key = derive(passphrase, kdf, &salt)?;
    let mut sealed = Zeroizing::new([0u8; SEALED_LEN]);
    sealed[..SECRET_LEN].copy_from_slice(seeds);
    let tag = cipher(&key)
        .encrypt_inout_detached(&Nonce::default(), head.as_bytes(), (&mut sealed[..SECRET_LEN]).into())
        .expect("64-byte message");
    sealed[SECRET_LEN..].copy_from_slice(&tag);
    Ok(format!("{head} {}", hex(sealed.as_ref()).as_str()))
}

/// Opens a protected key line; `fields` is the line after its prefix.
fn unprotect(
    line: &str,
    fields: &str,
    passphrase: &mut PassphraseFn<'_>,
) -> Result<Zeroizing<[u8; SECRET_LEN]>, KeyError> {
    let bad = KeyError::InvalidSigningKey;
    let parts: Vec<&str> = fields.split(' ').collect();
    let [m_kib, t, p, salt, sealed] = parts[..] else {
        return Err(bad("the protected key line does not have its five fields"));
    };
    let number = |s: &str| s.parse::<u32>().map_err(|_| bad("an Argon2id parameter is not a number"));
    let kdf = KdfParams { m_kib: number(m_kib)?, t: number(t)?, p: number(p)? };
    // A hostile key file must not make the reader allocate or compute without bound.
    kdf.check().map_err(|_| bad("the Argon2id parameters are out of range"))?;
    let salt = unhex::<SALT_LEN>(salt).ok_or(bad("the salt is not 32 hex digits"))?;
    let mut secret = unhex::<SEALED_LEN>(sealed).ok_or(bad("the sealed key is not 160 hex digits"))?;
    let head = &line[..line.len() - sealed.len() - 1];
    let passphrase = passphrase("Passphrase for the signing key").ok_or(KeyError::PassphraseRequired)?;
    let key = derive(&passphrase, kdf, &salt)?;
    let tag = Tag::try_from(&secret[SECRET_LEN..]).expect("16-byte tag");
    cipher(&key)
        .decrypt_inout_detached(&Nonce::default(), head.as_bytes(), (&mut secret[..SECRET_LEN]).into(), &tag)
        .map_err(|_| KeyError::WrongPassphrase)?;
    let mut seeds = Zeroizing::new([0u8; SECRET_LEN]);
    seeds.copy_from_slice(&secret[..SECRET_LEN]);
    Ok(seeds)
}

/// The sealing key: Argon2id of the passphrase. The nonce can be fixed
/// (zero) because the salt is fresh for every file written.
fn derive(
    passphrase: &Password,
    kdf: KdfParams,
    salt: &[u8; SALT_LEN],
) -> Result<Zeroizing<[u8; 32]>, KeyError> {
    kdf.derive(passphrase.expose(), salt).map_err(|e| KeyError::Kdf(std::io::Error::from(e)))
}

fn cipher(key: &[u8; 32]) -> ChaCha20Poly1305 {
    ChaCha20Poly1305::new(&Key::from(*key))
}

/// Lowercase hex, built in place (no temporary strings of secret digits).
pub(super) fn hex(bytes: &[u8]) -> Zeroizing<String> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Zeroizing::new(String::with_capacity(2 * bytes.len()));
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// Exactly `N` bytes from `2N` lowercase hex digits.
fn unhex<const N: usize>(digits: &str) -> Option<Zeroizing<[u8; N]>> {
    let digits = digits.as_bytes();
    if digits.len() != 2 * N || !digits.iter().all(|d| d.is_ascii_digit() || (b'a'..=b'f').contains(d)) {
        return None;
    }
    let mut out = Zeroizing::new([0u8; N]);
    let value = |d: u8| if d.is_ascii_digit() { d - b'0' } else { d - b'a' + 10 };
    for (byte, pair) in out.iter_mut().zip(digits.chunks(2)) {
        *byte = value(pair[0]) << 4 | value(pair[1]);
    }
    Some(out)
}
