//! Secret types: in locked memory (where the system allows), zeroized on
//! drop, never printed.

use std::fmt;
use std::io::{self, Read};

use zeroize::{Zeroize, Zeroizing};

use super::locked::{Locked, SecretBytes};
use crate::format::KEY_LEN;

/// A password. Held in memory locked against swapping where the system
/// allows, wiped on drop; `Debug` prints no content.
#[derive(Clone)]
pub struct Password(SecretBytes);

impl Password {
    /// Takes the password bytes: they are copied into locked memory and
    /// the given buffer is wiped.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Password {
        let mut bytes = bytes.into();
        let password = Password(SecretBytes::copy_of(&bytes));
        bytes.zeroize();
        password
    }

    /// Reads a password up to the first `\n` (a `\r` before it is dropped
    /// too) or the end of `source`, straight into a locked buffer of
    /// `max_len` bytes (and room for that `\r`) that never grows, so no
    /// partial copy is left behind. It reads one byte at a time, so that
    /// what follows the line stays in `source` (a pipe carrying two
    /// passwords). A line longer than `max_len` is an
    /// [`io::ErrorKind::InvalidData`] error.
    pub fn read_line(source: &mut dyn Read, max_len: usize) -> io::Result<Password> {
        let too_long = || {
            io::Error::new(io::ErrorKind::InvalidData, format!("the password is longer than {max_len} bytes"))
        };
        let mut buf = SecretBytes::with_capacity(max_len + 1);
        loop {
            if buf.spare().is_empty() {
                // Full: only the end of the line may follow.
                let mut next = Zeroizing::new([0u8; 1]);
                if read_some(source, next.as_mut())? == 0 || next[0] == b'\n' {
                    break;
                }
                return Err(too_long());
            }
            if read_some(source, &mut buf.spare()[..1])? == 0 || buf.spare()[0] == b'\n' {
                break;
            }
            buf.add_len(1);
        }
        if buf.as_slice().last() == Some(&b'\r') {
            buf.truncate(buf.as_slice().len() - 1);
        }
        if buf.as_slice().len() > max_len {
            return Err(too_long());
        }
        Ok(Password(buf))
    }

    /// Compares two passwords in constant time (for "enter it again").
    pub fn ct_eq(&self, other: &Password) -> bool {
        use subtle::ConstantTimeEq;
        let (a, b) = (self.0.as_slice(), other.0.as_slice());
        a.len() == b.len() && bool::from(a.ct_eq(b))
    }

    /// Whether the password is empty.
    pub fn is_empty(&self) -> bool {
        self.0.as_slice().is_empty()
    }

    pub(crate) fn expose(&self) -> &[u8] {
        self.0.as_slice()
    }
}

/// One `read`, retried when interrupted.
fn read_some(source: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match source.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
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

/// The random 256-bit key all of an archive's subkeys derive from, in
/// locked memory, wiped on drop.
pub(crate) struct ContentKey(Locked<Zeroizing<[u8; KEY_LEN]>>);

impl ContentKey {
    pub(crate) fn random() -> std::io::Result<ContentKey> {
        let mut key = ContentKey(Locked::zeroed());
        random_bytes(key.0.as_mut())?;
        Ok(key)
    }

    /// A copy of `bytes` (the caller wipes its own).
    pub(crate) fn from_bytes(bytes: &[u8; KEY_LEN]) -> ContentKey {
        let mut key = ContentKey(Locked::zeroed());
        key.0.copy_from_slice(bytes);
        key
    }

    pub(crate) fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl fmt::Debug for ContentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ContentKey([redacted])")
    }
}

/// Fills `buf` from the operating system's CSPRNG.
pub(crate) fn random_bytes(buf: &mut [u8]) -> std::io::Result<()> {
    #[cfg(feature = "fuzzing")]
    if super::seam::fixed_random(buf) {
        return Ok(());
    }
    getrandom::fill(buf).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_secrets() {
        let p = Password::from("hunter2");
        assert!(!format!("{p:?}").contains("hunter2"));
        let k = ContentKey::from_bytes(&[0x41; KEY_LEN]);
        assert!(!format!("{k:?}").contains("65"));
        assert!(!format!("{k:?}").contains('A'));
    }

    #[test]
    fn read_line_takes_the_first_line_into_a_fixed_buffer() {
        let read = |input: &[u8], max| Password::read_line(&mut &input[..], max).map(|p| p.expose().to_vec());
        assert_eq!(read(b"secret\nmore\n", 64).unwrap(), b"secret");
        assert_eq!(read(b"secret\r\n", 64).unwrap(), b"secret");
        assert_eq!(read(b"no newline", 64).unwrap(), b"no newline");
        assert_eq!(read(b" spaces kept \n", 64).unwrap(), b" spaces kept ");
        assert_eq!(read(b"\n", 64).unwrap(), b"");
        assert_eq!(read(b"", 64).unwrap(), b"");
        assert_eq!(read(b"\xff\xfe\n", 64).unwrap(), b"\xff\xfe");
        assert_eq!(read(b"12345678", 8).unwrap(), b"12345678");
        assert_eq!(read(b"12345678\nrest", 8).unwrap(), b"12345678");
        let err = read(b"123456789\n", 8).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("longer than 8 bytes"), "{err}");
        assert_eq!(read(b"12345678\r\n", 8).unwrap(), b"12345678");
        assert_eq!(read(b"1234567890\n", 8).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    /// A reader that hands out one byte per call, as a slow pipe does.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some((&b, rest)) = self.0.split_first() else { return Ok(0) };
            buf[0] = b;
            self.0 = rest;
            Ok(1)
        }
    }

    /// Two passwords on one pipe (`passwd` reading the old and the new one
    /// from `/dev/stdin`): the first read must leave the second line.
    #[test]
    fn read_line_leaves_what_follows_the_line() {
        let mut input: &[u8] = b"old\nnew\n";
        assert_eq!(Password::read_line(&mut input, 64).unwrap().expose(), b"old");
        assert_eq!(input, b"new\n");
        assert_eq!(Password::read_line(&mut input, 64).unwrap().expose(), b"new");
    }

    #[test]
    fn read_line_from_a_trickling_pipe() {
        let long = vec![b'x'; 3000];
        let input = [&long[..], b"\nnext"].concat();
        let password = Password::read_line(&mut Trickle(&input), 4096).unwrap();
        assert_eq!(password.expose(), &long[..]);
    }
}
