//! The walk rules a session was written with, sealed at the end of its
//! session header's body (FORMAT.md §3.9b), so that a later `add` or
//! `update` walks the tree as the archive was made: the same excludes,
//! the same links followed, xattrs kept. Absent when there are none, so
//! that a session written without rules keeps its old bytes.
//!
//! ```text
//! walk    = flags u8 || count u16 || pattern[count] || tags u16 || tag[tags]
//! pattern = var(4096)          UTF-8, not empty
//! tag     = var(255)           a file name: not empty, no `/` or NUL
//! ```
//! Flags: bit 0 exclude-vcs, bit 1 exclude-caches, bit 2 one-file-system,
//! bit 3 dereference, bit 4 xattrs, bit 5 strict; other bits, and a
//! record that sets nothing, are refused.

use super::codec::{malformed, Decoder, Encoder};
use super::DecodeError;

/// Longest encoded walk record in a session header.
pub(crate) const MAX_WALK_RULES_LEN: usize = 64 << 10;
/// Longest exclude pattern in a walk record (a path's length, PATH_MAX).
pub(crate) const MAX_WALK_PATTERN_LEN: usize = 4096;
/// Longest tag file name (a file name's length, NAME_MAX).
pub(crate) const MAX_WALK_TAG_LEN: usize = 255;

const VCS: u8 = 1;
const CACHES: u8 = 2;
const ONE_FILE_SYSTEM: u8 = 4;
const DEREFERENCE: u8 = 8;
const XATTRS: u8 = 16;
const STRICT: u8 = 32;
const ALL_FLAGS: u8 = VCS | CACHES | ONE_FILE_SYSTEM | DEREFERENCE | XATTRS | STRICT;

const WHAT: &str = "session header walk rules";

/// The walk rules of a session, as the format holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WalkRecord {
    pub(crate) exclude_vcs: bool,
    pub(crate) exclude_caches: bool,
    pub(crate) one_file_system: bool,
    pub(crate) dereference: bool,
    pub(crate) xattrs: bool,
    pub(crate) strict: bool,
    /// `--exclude` patterns, in the order given.
    pub(crate) excludes: Vec<String>,
    /// `--exclude-if-present` file names.
    pub(crate) tags: Vec<Vec<u8>>,
}

impl WalkRecord {
    /// Whether the record sets nothing (and so is not written).
    pub(crate) fn is_empty(&self) -> bool {
        *self == WalkRecord::default()
    }

    fn flags(&self) -> u8 {
        [
            (self.exclude_vcs, VCS),
            (self.exclude_caches, CACHES),
            (self.one_file_system, ONE_FILE_SYSTEM),
            (self.dereference, DEREFERENCE),
            (self.xattrs, XATTRS),
            (self.strict, STRICT),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |flags, (_, bit)| flags | bit)
    }

    /// The record's bytes, or why it cannot be held: a pattern or tag
    /// empty or too long, a tag that is no file name, too many of them, or
    /// more than [`MAX_WALK_RULES_LEN`] bytes in all.
    pub(crate) fn encode(&self) -> Result<Vec<u8>, &'static str> {
        let mut e = Encoder::default();
        let count = |n: usize| u16::try_from(n).map_err(|_| "more than 65535 excludes or tags");
        e.u8(self.flags()).u16(count(self.excludes.len())?);
        for p in &self.excludes {
            check_pattern(p.as_bytes())?;
            e.var_bytes(p.as_bytes());
        }
        e.u16(count(self.tags.len())?);
        for t in &self.tags {
            check_tag(t)?;
            e.var_bytes(t);
        }
        match e.buf.len() <= MAX_WALK_RULES_LEN {
            true => Ok(e.buf),
            false => Err("excludes and tags longer than 64 KiB together"),
        }
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<WalkRecord, DecodeError> {
        let bad = |why| malformed(WHAT, why);
        let mut d = Decoder::new(bytes, WHAT);
        let flags = d.u8()?;
        if flags & !ALL_FLAGS != 0 {
            return Err(bad("unknown flags"));
        }
        let mut excludes = Vec::new();
        for _ in 0..d.u16()? {
            let p = d.var_bytes(MAX_WALK_PATTERN_LEN)?;
            check_pattern(p).map_err(bad)?;
            excludes.push(std::str::from_utf8(p).map_err(|_| bad("pattern not UTF-8"))?.to_owned());
        }
        let mut tags = Vec::new();
        for _ in 0..d.u16()? {
            let t = d.var_bytes(MAX_WALK_TAG_LEN)?;
            check_tag(t).map_err(bad)?;
            tags.push(t.to_vec());
        }
        d.finish()?;
        let record = WalkRecord {
            exclude_vcs: flags & VCS != 0,
            exclude_caches: flags & CACHES != 0,
            one_file_system: flags & ONE_FILE_SYSTEM != 0,
            dereference: flags & DEREFERENCE != 0,
            xattrs: flags & XATTRS != 0,
            strict: flags & STRICT != 0,
            excludes,
            tags,
        };
        match record.is_empty() {
            true => Err(bad("sets nothing")),
            false => Ok(record),
        }
    }
}

fn check_pattern(p: &[u8]) -> Result<(), &'static str> {
    match p.len() {
        0 => Err("an empty exclude pattern"),
        n if n > MAX_WALK_PATTERN_LEN => Err("an exclude pattern longer than 4096 bytes"),
        _ => Ok(()),
    }
}

fn check_tag(t: &[u8]) -> Result<(), &'static str> {
    match t.len() {
        0 => Err("an empty tag file name"),
        n if n > MAX_WALK_TAG_LEN => Err("a tag file name longer than 255 bytes"),
        _ if t.contains(&b'/') || t.contains(&0) => Err("a tag file name with / or NUL"),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> WalkRecord {
        WalkRecord {
            exclude_vcs: true,
            xattrs: true,
            excludes: vec!["*.o".into(), "build/".into()],
            tags: vec![b".nobackup".to_vec()],
            ..WalkRecord::default()
        }
    }

    #[test]
    fn records_round_trip_and_refuse_bad_fields() {
        let r = sample();
        let bytes = r.encode().unwrap();
        assert_eq!(WalkRecord::decode(&bytes).unwrap(), r);
        for len in 0..bytes.len() {
            assert!(WalkRecord::decode(&bytes[..len]).is_err(), "cut at {len}");
        }
        let mut unknown = bytes.clone();
        unknown[0] |= 0x40;
        assert!(WalkRecord::decode(&unknown).is_err());
        assert!(WalkRecord::decode(&WalkRecord::default().encode().unwrap()).is_err(), "sets nothing");
        for bad in [b"a/b".to_vec(), Vec::new(), vec![b'x'; 256], b"a\0".to_vec()] {
            assert!(WalkRecord { tags: vec![bad], ..sample() }.encode().is_err());
        }
        assert!(WalkRecord { excludes: vec![String::new()], ..sample() }.encode().is_err());
        let many = WalkRecord { excludes: vec!["x".repeat(4000); 17], ..sample() };
        assert!(many.encode().is_err(), "over 64 KiB");
    }
}
