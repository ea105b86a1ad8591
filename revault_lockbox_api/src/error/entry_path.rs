//! A path as stored in an archive, as errors name it.

use std::fmt;

use crate::quote::Quoted;

/// A path as stored in an archive: raw bytes, shown quoted ([`Quoted`]), so
/// that a hostile name cannot send control sequences to a terminal.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryPath(pub Vec<u8>);

impl EntryPath {
    /// The stored bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl From<&[u8]> for EntryPath {
    fn from(bytes: &[u8]) -> EntryPath {
        EntryPath(bytes.to_vec())
    }
}

impl fmt::Display for EntryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Quoted::bytes(&self.0).fmt(f)
    }
}

impl fmt::Debug for EntryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_without_control_bytes() {
        let p = EntryPath(b"a\x1b]0;x\x07\xff/b\\".to_vec());
        assert_eq!(p.to_string(), "a\\033]0;x\\a\\377/b\\\\");
        assert_eq!(EntryPath(b"caf\xc3\xa9".to_vec()).to_string(), "café");
    }
}
