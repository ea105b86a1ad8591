//! Secret types: zeroized on drop, never printed.

use std::fmt;
use zeroize::Zeroizing;

use crate::format::KEY_LEN;

/// A password. Wiped from memory on drop; `Debug` prints no content.
#[derive(Clone)]
pub struct Password(Zeroizing<Vec<u8>>);

impl Password {
    /// Takes ownership of the password bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Password {
        Password(Zeroizing::new(bytes.into()))
    }

    /// Compares two passwords in constant time (for "enter it again").
    pub fn ct_eq(&self, other: &Password) -> bool {
        use subtle::ConstantTimeEq;
        self.0.len() == other.0.len() && bool::from(self.0.as_slice().ct_eq(other.0.as_slice()))
    }

    /// Whether the password is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl From<&str> for Password {
    fn from(s: &str) -> Password {
        Password::new(s.as_bytes())
    }
}

impl From<String> for Password {
    fn from(s: String) -> Password {
        Password::new(s.into_bytes())
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password([redacted])")
    }
}

/// The random 256-bit key all of an archive's subkeys derive from.
pub(crate) struct ContentKey(pub(crate) Zeroizing<[u8; KEY_LEN]>);

impl ContentKey {
    pub(crate) fn random() -> std::io::Result<ContentKey> {
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        random_bytes(key.as_mut())?;
        Ok(ContentKey(key))
    }
}

impl fmt::Debug for ContentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ContentKey([redacted])")
    }
}

/// Fills `buf` from the operating system's CSPRNG.
pub(crate) fn random_bytes(buf: &mut [u8]) -> std::io::Result<()> {
    getrandom::fill(buf).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_secrets() {
        let p = Password::from("hunter2");
        assert!(!format!("{p:?}").contains("hunter2"));
        let k = ContentKey(Zeroizing::new([0x41; KEY_LEN]));
        assert!(!format!("{k:?}").contains("65"));
        assert!(!format!("{k:?}").contains('A'));
    }
}
