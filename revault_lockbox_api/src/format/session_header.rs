//! The session header: the first bytes of every write session. Its salt is
//! in the clear, so the session's keys derive without its trailer; its
//! number, time, kind, label, the writing tool and the walk rules it was
//! written with (when it has any) are sealed after it.
//!
//! ```text
//! header_clear   = SESSION_MAGIC[8] || version u16 || flags u16 || archive_id[16]
//!                  || session_salt[32] || body_stored_len u32              (64 bytes)
//! session_header = header_clear || sealed_body[body_stored_len]
//! body           = session u32 || created_ns i64 || kind u16 || label var(1024) || tool var(64)
//!                  || [walk var(65536)]                        (absent: no walk rules)
//! ```

use super::codec::{malformed, Decoder, Encoder};
use super::walk_rules::{WalkRecord, MAX_WALK_RULES_LEN};
use super::{
    is_readable_version, DecodeError, ARCHIVE_ID_LEN, MAX_LABEL_LEN, MAX_TOOL_LEN, SESSION_MAGIC,
    SESSION_SALT_LEN, TAG_LEN,
};

/// Length of a session header's clear part.
pub(crate) const SESSION_HEADER_CLEAR_LEN: usize = 64;
/// Largest sealed body: the largest label, tool and walk rules, and the tag.
pub(crate) const MAX_SESSION_BODY_STORED_LEN: u32 =
    (4 + 8 + 2 + 4 + MAX_LABEL_LEN + 4 + MAX_TOOL_LEN + 4 + MAX_WALK_RULES_LEN + TAG_LEN) as u32;
/// Smallest sealed body: the fixed fields, an empty label and tool, and
/// the tag (FORMAT.md §3.9): anything shorter cannot decode once opened.
pub(crate) const MIN_SESSION_BODY_STORED_LEN: u32 = (4 + 8 + 2 + 4 + 4 + TAG_LEN) as u32;

const KIND_MERGE: u16 = 1;
const KIND_COMPACTION: u16 = 2;

/// What kind of session wrote a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SessionKind {
    /// A create or an append (add, update, rm).
    #[default]
    Change,
    /// A session that only merged the entries runs into one.
    Merge,
    /// The one session of a compacted archive.
    Compaction,
}

/// The clear part of a session header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderClear {
    /// The archive's format version (a reader checks it against the
    /// header's).
    pub(crate) version: u16,
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    pub(crate) salt: [u8; SESSION_SALT_LEN],
    pub(crate) body_stored_len: u32,
}

impl HeaderClear {
    pub(crate) fn encode(&self) -> [u8; SESSION_HEADER_CLEAR_LEN] {
        let mut e = Encoder::default();
        e.bytes(&SESSION_MAGIC)
            .u16(self.version)
            .u16(0)
            .bytes(&self.archive_id)
            .bytes(&self.salt)
            .u32(self.body_stored_len);
        e.buf.try_into().expect("fixed layout")
    }

    pub(crate) fn decode(bytes: &[u8; SESSION_HEADER_CLEAR_LEN]) -> Result<HeaderClear, DecodeError> {
        let mut d = Decoder::new(bytes, "session header");
        if d.array::<8>()? != SESSION_MAGIC {
            return Err(malformed("session header", "missing"));
        }
        let version = d.u16()?;
        if !is_readable_version(version) || d.u16()? != 0 {
            return Err(malformed("session header", "unsupported version or flags"));
        }
        let clear =
            HeaderClear { version, archive_id: d.array()?, salt: d.array()?, body_stored_len: d.u32()? };
        d.finish()?;
        if !(MIN_SESSION_BODY_STORED_LEN..=MAX_SESSION_BODY_STORED_LEN).contains(&clear.body_stored_len) {
            return Err(malformed("session header", "body length out of range"));
        }
        Ok(clear)
    }
}

/// The sealed body of a session header: what `log` shows of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The session's number: 0 for the create, then one more per session.
    pub number: u32,
    /// When the session started: UTC nanoseconds since 1970.
    pub created_ns: i64,
    /// A change, a merge of runs, or a compaction.
    pub kind: SessionKind,
    /// The `-m` label, empty when none was given.
    pub label: String,
    /// The writing tool's name and version.
    pub tool: String,
    /// The walk rules the session was written with (FORMAT.md §3.9b):
    /// `None` when it had none, as in sessions written before they were
    /// recorded.
    pub(crate) walk: Option<WalkRecord>,
}

impl SessionKind {
    /// The `kind` field of a session header or summary.
    pub(crate) fn bits(self) -> u16 {
        match self {
            SessionKind::Change => 0,
            SessionKind::Merge => KIND_MERGE,
            SessionKind::Compaction => KIND_COMPACTION,
        }
    }

    /// The kind a `kind` field names; other bits, or both, are refused.
    pub(crate) fn from_bits(bits: u16) -> Result<SessionKind, &'static str> {
        match bits {
            0 => Ok(SessionKind::Change),
            KIND_MERGE => Ok(SessionKind::Merge),
            KIND_COMPACTION => Ok(SessionKind::Compaction),
            _ => Err("unknown session kind"),
        }
    }
}

impl SessionInfo {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u32(self.number)
            .i64(self.created_ns)
            .u16(self.kind.bits())
            .var_bytes(self.label.as_bytes())
            .var_bytes(self.tool.as_bytes());
        if let Some(walk) = &self.walk {
            // The writer checked the record (`WalkRecord::encode`) before
            // the session started.
            e.var_bytes(&walk.encode().expect("walk rules checked by the writer"));
        }
        e.buf
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<SessionInfo, DecodeError> {
        let bad = |why| malformed("session header", why);
        let mut d = Decoder::new(bytes, "session header");
        let (number, created_ns) = (d.u32()?, d.i64()?);
        let kind = SessionKind::from_bits(d.u16()?).map_err(bad)?;
        let label = std::str::from_utf8(d.var_bytes(MAX_LABEL_LEN)?).map_err(|_| bad("label not UTF-8"))?;
        check_label(label).map_err(bad)?;
        let tool = std::str::from_utf8(d.var_bytes(MAX_TOOL_LEN)?).map_err(|_| bad("tool not ASCII"))?;
        if !tool.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return Err(bad("tool not printable ASCII"));
        }
        let walk = match d.remaining() {
            0 => None,
            _ => Some(WalkRecord::decode(d.var_bytes(MAX_WALK_RULES_LEN)?)?),
        };
        d.finish()?;
        Ok(SessionInfo { number, created_ns, kind, label: label.into(), tool: tool.into(), walk })
    }
}

/// A session label's rules: at most `MAX_LABEL_LEN` bytes of UTF-8 text
/// without control characters (it is shown on terminals).
pub fn check_label(label: &str) -> Result<(), &'static str> {
    if label.len() > MAX_LABEL_LEN {
        return Err("label longer than 1024 bytes");
    }
    if label.chars().any(char::is_control) {
        return Err("label holds a control character");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::VERSION;

    #[test]
    fn headers_round_trip_and_refuse_bad_fields() {
        let info = SessionInfo {
            number: 3,
            created_ns: 1_764_633_600_000_000_000,
            kind: SessionKind::Merge,
            label: "nightly €".into(),
            tool: "lockbox 0.1.0".into(),
            walk: None,
        };
        assert_eq!(SessionInfo::decode(&info.encode()).unwrap(), info);
        let walk = WalkRecord { xattrs: true, excludes: vec!["*.o".into()], ..WalkRecord::default() };
        let with_rules = SessionInfo { walk: Some(walk), ..info.clone() };
        assert_eq!(SessionInfo::decode(&with_rules.encode()).unwrap(), with_rules);
        let mut extra = with_rules.encode();
        extra.push(0);
        assert!(SessionInfo::decode(&extra).is_err(), "a byte after the walk rules");
        let bad = SessionInfo { label: "a\u{1b}[2J".into(), ..info.clone() };
        assert!(SessionInfo::decode(&bad.encode()).is_err());
        let clear = HeaderClear { version: VERSION, archive_id: [1; 16], salt: [2; 32], body_stored_len: 60 };
        assert_eq!(HeaderClear::decode(&clear.encode()).unwrap(), clear);
        for (version, readable) in [(2, false), (3, true), (4, true), (5, false)] {
            let other = HeaderClear { version, ..clear };
            assert_eq!(HeaderClear::decode(&other.encode()).is_ok(), readable, "version {version}");
        }
        let huge = HeaderClear { body_stored_len: MAX_SESSION_BODY_STORED_LEN + 1, ..clear };
        assert!(HeaderClear::decode(&huge.encode()).is_err());
        // The smallest body that decodes: shorter ones were opened and
        // reported as failed authentication, though they are malformed.
        let smallest = SessionInfo { label: String::new(), tool: String::new(), ..info.clone() };
        assert_eq!(smallest.encode().len() + TAG_LEN, MIN_SESSION_BODY_STORED_LEN as usize);
        for body_stored_len in [MIN_SESSION_BODY_STORED_LEN, MAX_SESSION_BODY_STORED_LEN] {
            assert!(HeaderClear::decode(&HeaderClear { body_stored_len, ..clear }.encode()).is_ok());
        }
        for body_stored_len in [0, TAG_LEN as u32, MIN_SESSION_BODY_STORED_LEN - 1] {
            let short = HeaderClear { body_stored_len, ..clear }.encode();
            let err = HeaderClear::decode(&short).unwrap_err();
            assert_eq!(err.why, "body length out of range", "{body_stored_len}");
        }
        for len in 0..info.encode().len() {
            assert!(SessionInfo::decode(&info.encode()[..len]).is_err(), "len {len}");
        }
    }
}
