//! Key files for scripts: a random 256-bit key in a small text file, no
//! password KDF.
//!
//! ```text
//! # created: 2026-11-30T15:00:00Z      (comment lines start with '#')
//! LOCKBOX-KEY-1 <64 lowercase hex digits>
//! ```

use std::fmt;
use std::path::Path;

use zeroize::Zeroizing;

use super::{random_bytes, KeyError, MAX_KEY_FILE_LEN};
use crate::crypto::Locked;

const PREFIX: &str = "LOCKBOX-KEY-1 ";

/// A random 256-bit key read from (or written to) a key file. In memory
/// locked against swapping where the system allows, wiped on drop; `Debug` prints nothing of it.
#[derive(Clone)]
pub struct KeyFile(pub(crate) Locked<Zeroizing<[u8; 32]>>);

impl KeyFile {
    /// A new random key.
    pub fn generate() -> Result<KeyFile, KeyError> {
        let mut key = Locked::<Zeroizing<[u8; 32]>>::zeroed();
        random_bytes(&mut key[..])?;
        Ok(KeyFile(key))
    }

    /// The key file's text: a comment line and the key line.
    pub fn to_text(&self) -> Zeroizing<String> {
        let hex: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        Zeroizing::new(format!("# lockbox key file: keep it secret, like a password\n{PREFIX}{hex}\n"))
    }

    /// Parses a key file's text: `#` comments and blank lines, then exactly
    /// one key line.
    pub fn parse(text: &[u8]) -> Result<KeyFile, KeyError> {
        let bad = |why| KeyError::InvalidKeyFile(why);
        let text = std::str::from_utf8(text).map_err(|_| bad("not UTF-8 text"))?;
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
        let line = lines.next().ok_or(bad("no key line"))?;
        if lines.next().is_some() {
            return Err(bad("more than one key line"));
        }
        let hex = line.strip_prefix(PREFIX).ok_or(bad("the key line does not start with LOCKBOX-KEY-1"))?;
        if hex.len() != 64 {
            return Err(bad("the key is not 64 hex digits"));
        }
        let mut key = Locked::<Zeroizing<[u8; 32]>>::zeroed();
        for (byte, pair) in key.iter_mut().zip(hex.as_bytes().chunks(2)) {
            let digits = std::str::from_utf8(pair).map_err(|_| bad("the key is not hex"))?;
            *byte = u8::from_str_radix(digits, 16).map_err(|_| bad("the key is not hex"))?;
        }
        Ok(KeyFile(key))
    }

    /// Reads and parses the key file at `path`.
    pub fn read(path: &Path) -> Result<KeyFile, KeyError> {
        let io = |source| KeyError::Io { path: path.to_path_buf(), source };
        let len = std::fs::metadata(path).map_err(io)?.len();
        if len > MAX_KEY_FILE_LEN {
            return Err(KeyError::InvalidKeyFile("larger than 1 MiB"));
        }
        let text = Zeroizing::new(std::fs::read(path).map_err(io)?);
        KeyFile::parse(&text)
    }
}

impl fmt::Debug for KeyFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyFile([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_round_trip_and_bad_ones_are_named() {
        let key = KeyFile::generate().unwrap();
        assert_eq!(*KeyFile::parse(key.to_text().as_bytes()).unwrap().0, *key.0);
        assert_eq!(format!("{key:?}"), "KeyFile([redacted])");
        for bad in [
            &b""[..],
            b"# only\n",
            b"LOCKBOX-KEY-1 abc\n",
            b"AGE-SECRET-KEY-1XYZ\n",
            b"LOCKBOX-KEY-1 zz00000000000000000000000000000000000000000000000000000000000000\n",
        ] {
            assert!(matches!(KeyFile::parse(bad), Err(KeyError::InvalidKeyFile(_))), "{bad:?}");
        }
    }
}
