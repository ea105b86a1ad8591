//! The sessions tree (FORMAT.md §3.7): one record per write session, in
//! index nodes of table 3 rather than listed whole in every root, so that
//! a session writes a bounded amount whatever the session count.
//!
//! ```text
//! session_record    = session u32 || salt[32] || first_page u64 || stream_start u64
//!                     || header_offset u64 || tree(pages) || summary
//! summary           = created_ns i64 || kind u16 || label var(1024)
//!                     || stored u64 || removed u64 || entries u64
//!                     || signer_count u8 || key_id var(64)[signer_count]
//!                     || state u64     (a compaction; a change whose kind has bit 2, FORMAT.md §3.7)
//! sessions_leaf     = count u8 || session_record[count]            (count = 16)
//! sessions_internal = count u8 || sessions_child[count]            (count = 16)
//! sessions_child    = child || salt[32]                            (the salt of the session that sealed it)
//! sessions          = session_count u32 || forest_count u8 || (level u8 || sessions_child)[forest_count]
//!                     || pending_count u8 || session_record[pending_count]
//! ```
//! Nodes are written once, full: the root holds the last 1 to 16 records
//! (`pending`) and the full nodes not yet under a parent (`forest`, at
//! most 15 per level, highest level first). A record's key is
//! `stream_start u64 be || session u32 be`.

use super::codec::{malformed, Decoder, Encoder};
use super::node::Child;
use super::root::{decode_tree, encode_tree, TreeTop};
use super::Table;
use super::{
    check_label, DecodeError, SessionKind, MAX_LABEL_LEN, MAX_SESSIONS, MAX_SIGNATURES, SESSION_SALT_LEN,
};

/// Records in a sessions leaf, and children in a sessions internal node.
pub(crate) const SESSIONS_PER_NODE: usize = 16;
/// Longest signer key id a summary holds.
pub(crate) const MAX_KEY_ID_LEN: usize = 64;
/// Highest level of a sessions node: a node of level `l` covers `16^(l+1)`
/// sessions, and `MAX_SESSIONS` is `16^5`.
const MAX_SESSIONS_LEVEL: u8 = 4;
/// Length of a record's key.
pub(crate) const SESSION_KEY_LEN: usize = 12;

const WHAT: &str = "sessions tree";

/// What `log` shows of one session, kept in its record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Summary {
    /// When the session started: UTC nanoseconds since 1970 (its header's).
    pub(crate) created_ns: i64,
    pub(crate) kind: SessionKind,
    /// The `-m` label (its header's).
    pub(crate) label: String,
    /// Entries the session stored.
    pub(crate) stored: u64,
    /// Deletion records the session wrote.
    pub(crate) removed: u64,
    /// Entries of the archive's view right after the session.
    pub(crate) entries: u64,
    /// Key ids of the keys that signed the session.
    pub(crate) signers: Vec<Vec<u8>>,
    /// For a compaction: the number (from 1) of the state it holds, as the
    /// archive it replaced numbered it; for a change a compaction's
    /// rewrite carried over after a gap (calendar retention), the number
    /// it holds (encoded behind [`SUMMARY_NAMES_STATE`]); 0 otherwise (not
    /// encoded).
    pub(crate) state: u64,
}

/// A bit of a summary's `kind` (never a session header's): the change
/// names the state it holds, in a `state` field after its signers
/// (FORMAT.md §3.7), instead of holding the one after the state before it.
pub(crate) const SUMMARY_NAMES_STATE: u16 = 4;

/// One write session: where it starts, its keys' salt, its pages tree, its
/// summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionRecord {
    pub(crate) number: u32,
    pub(crate) salt: [u8; SESSION_SALT_LEN],
    /// The number of its first data page (the page count before it).
    pub(crate) first_page: u64,
    /// Data-stream offset of its first page (the stream length before it).
    pub(crate) stream_start: u64,
    /// Where its session header starts: the end of the previous trailer.
    pub(crate) header_offset: u64,
    pub(crate) pages: TreeTop,
    pub(crate) summary: Summary,
}

impl SessionRecord {
    /// The record's key in the sessions tree.
    pub(crate) fn key(&self) -> Vec<u8> {
        [&self.stream_start.to_be_bytes()[..], &self.number.to_be_bytes()].concat()
    }

    fn encode(&self, e: &mut Encoder) {
        e.u32(self.number)
            .bytes(&self.salt)
            .u64(self.first_page)
            .u64(self.stream_start)
            .u64(self.header_offset);
        encode_tree(&self.pages, e);
        let s = &self.summary;
        let named = s.kind == SessionKind::Change && s.state != 0;
        let kind = s.kind.bits() | if named { SUMMARY_NAMES_STATE } else { 0 };
        e.i64(s.created_ns).u16(kind).var_bytes(s.label.as_bytes());
        e.u64(s.stored).u64(s.removed).u64(s.entries).u8(s.signers.len() as u8);
        for id in &s.signers {
            e.var_bytes(id);
        }
        if s.kind == SessionKind::Compaction || named {
            e.u64(s.state);
        }
    }

    fn decode(d: &mut Decoder<'_>) -> Result<SessionRecord, DecodeError> {
        let (number, salt) = (d.u32()?, d.array()?);
        let (first_page, stream_start, header_offset) = (d.u64()?, d.u64()?, d.u64()?);
        let pages = decode_tree(d, Table::Pages)?;
        if pages.children.first().is_some_and(|c| c.first_key != stream_start.to_be_bytes()) {
            return Err(malformed(WHAT, "pages tree does not start at the session's stream offset"));
        }
        let created_ns = d.i64()?;
        let bits = d.u16()?;
        // The bit is a change's only: a merge holds no state, a compaction
        // always names its own.
        let named = bits == SUMMARY_NAMES_STATE;
        let kind = SessionKind::from_bits(bits & !SUMMARY_NAMES_STATE)
            .ok()
            .filter(|_| bits & SUMMARY_NAMES_STATE == 0 || named)
            .ok_or_else(|| malformed(WHAT, "unknown session kind"))?;
        let label = std::str::from_utf8(d.var_bytes(MAX_LABEL_LEN)?)
            .map_err(|_| malformed(WHAT, "label not UTF-8"))?;
        check_label(label).map_err(|why| malformed(WHAT, why))?;
        let (stored, removed, entries) = (d.u64()?, d.u64()?, d.u64()?);
        let signer_count = d.u8()? as usize;
        if signer_count > MAX_SIGNATURES {
            return Err(malformed(WHAT, "too many signers"));
        }
        let mut signers = Vec::with_capacity(signer_count);
        for _ in 0..signer_count {
            let id = d.var_bytes(MAX_KEY_ID_LEN)?;
            if id.is_empty() {
                return Err(malformed(WHAT, "empty signer key id"));
            }
            signers.push(id.to_vec());
        }
        let state = match kind {
            SessionKind::Compaction => match d.u64()? {
                0 => return Err(malformed(WHAT, "a compaction holding state 0")),
                n => n,
            },
            _ if named => match d.u64()? {
                0 => return Err(malformed(WHAT, "a change naming state 0")),
                n => n,
            },
            _ => 0,
        };
        let label = label.to_string();
        let summary = Summary { created_ns, kind, label, stored, removed, entries, signers, state };
        Ok(SessionRecord { number, salt, first_page, stream_start, header_offset, pages, summary })
    }
}

/// A node of the sessions tree and the salt of the session that sealed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionsChild {
    pub(crate) child: Child,
    pub(crate) salt: [u8; SESSION_SALT_LEN],
}

impl SessionsChild {
    fn encode(&self, e: &mut Encoder) {
        self.child.encode(e);
        e.bytes(&self.salt);
    }

    fn decode(d: &mut Decoder<'_>) -> Result<SessionsChild, DecodeError> {
        let child = Child::decode(d)?;
        if child.first_key.len() != SESSION_KEY_LEN {
            return Err(malformed(WHAT, "key of the wrong length"));
        }
        Ok(SessionsChild { child, salt: d.array()? })
    }
}

/// A leaf: 16 session records in order.
pub(crate) fn encode_leaf(records: &[SessionRecord]) -> Vec<u8> {
    encode_node(records, SessionRecord::encode)
}

pub(crate) fn decode_leaf(bytes: &[u8]) -> Result<Vec<SessionRecord>, DecodeError> {
    decode_node(bytes, SessionRecord::decode)
}

/// An internal node: 16 children in order.
pub(crate) fn encode_internal(children: &[SessionsChild]) -> Vec<u8> {
    encode_node(children, SessionsChild::encode)
}

pub(crate) fn decode_internal(bytes: &[u8]) -> Result<Vec<SessionsChild>, DecodeError> {
    decode_node(bytes, SessionsChild::decode)
}

fn encode_node<T>(items: &[T], encode: fn(&T, &mut Encoder)) -> Vec<u8> {
    let mut e = Encoder::default();
    e.u8(items.len() as u8);
    items.iter().for_each(|item| encode(item, &mut e));
    e.buf
}

/// A node's items: exactly 16, nothing after them.
fn decode_node<T>(
    bytes: &[u8],
    decode: fn(&mut Decoder<'_>) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let mut d = Decoder::new(bytes, WHAT);
    if d.u8()? as usize != SESSIONS_PER_NODE {
        return Err(malformed(WHAT, "a node that is not full"));
    }
    let items = (0..SESSIONS_PER_NODE).map(|_| decode(&mut d)).collect::<Result<_, _>>()?;
    d.finish()?;
    Ok(items)
}

/// Sessions covered by one node of `level`.
pub(crate) fn sessions_under(level: u8) -> u64 {
    (SESSIONS_PER_NODE as u64).pow(u32::from(level) + 1)
}

/// The root's part of the sessions tree: every session's record, through
/// the nodes not yet under a parent and the last records.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SessionsTop {
    /// Sessions in the archive.
    pub(crate) count: u32,
    /// Full nodes without a parent, in order (levels never increase), each
    /// with its level.
    pub(crate) forest: Vec<(u8, SessionsChild)>,
    /// The last 1 to 16 records, in order; the last is the last session's.
    pub(crate) pending: Vec<SessionRecord>,
}

impl SessionsTop {
    /// The last session's record.
    pub(crate) fn last(&self) -> &SessionRecord {
        self.pending.last().expect("a decoded or built top has a record")
    }

    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.u32(self.count).u8(self.forest.len() as u8);
        for (level, child) in &self.forest {
            e.u8(*level);
            child.encode(e);
        }
        e.u8(self.pending.len() as u8);
        self.pending.iter().for_each(|r| r.encode(e));
    }

    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<SessionsTop, DecodeError> {
        let count = d.u32()?;
        let forest_count = d.u8()? as usize;
        let mut forest: Vec<(u8, SessionsChild)> = Vec::with_capacity(forest_count);
        for _ in 0..forest_count {
            let level = d.u8()?;
            let run = forest.iter().rev().take_while(|(l, _)| *l == level).count();
            if level > MAX_SESSIONS_LEVEL
                || forest.last().is_some_and(|(l, _)| *l < level)
                || run >= SESSIONS_PER_NODE - 1
            {
                return Err(malformed(WHAT, "nodes without a parent out of order"));
            }
            forest.push((level, SessionsChild::decode(d)?));
        }
        let pending_count = d.u8()? as usize;
        if pending_count == 0 || pending_count > SESSIONS_PER_NODE {
            return Err(malformed(WHAT, "last records out of range"));
        }
        let pending: Vec<SessionRecord> =
            (0..pending_count).map(|_| SessionRecord::decode(d)).collect::<Result<_, _>>()?;
        let covered: u64 = forest.iter().map(|(l, _)| sessions_under(*l)).sum::<u64>() + pending_count as u64;
        if count as usize > MAX_SESSIONS || u64::from(count) != covered {
            return Err(malformed(WHAT, "session count differs from the tree"));
        }
        let keys: Vec<Vec<u8>> = forest
            .iter()
            .map(|(_, c)| c.child.first_key.clone())
            .chain(pending.iter().map(|r| r.key()))
            .collect();
        let first_number = pending[0].number;
        let numbered =
            pending.iter().enumerate().all(|(i, r)| r.number.checked_sub(first_number) == Some(i as u32));
        if keys.windows(2).any(|w| w[0] >= w[1]) || !numbered {
            return Err(malformed(WHAT, "sessions out of order"));
        }
        Ok(SessionsTop { count, forest, pending })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::node::tests::child;

    pub(crate) fn record(number: u32) -> SessionRecord {
        SessionRecord {
            number,
            salt: [number as u8; SESSION_SALT_LEN],
            first_page: u64::from(number),
            stream_start: u64::from(number) * 10,
            header_offset: 4128 + u64::from(number) * 1000,
            pages: TreeTop::default(),
            summary: Summary { label: format!("s{number}"), stored: 1, entries: 2, ..Summary::default() },
        }
    }

    fn top(count: u32, forest: Vec<(u8, SessionsChild)>, pending: Vec<SessionRecord>) -> Vec<u8> {
        let mut e = Encoder::default();
        SessionsTop { count, forest, pending }.encode(&mut e);
        e.buf
    }

    fn decode_top(bytes: &[u8]) -> Result<SessionsTop, DecodeError> {
        let mut d = Decoder::new(bytes, WHAT);
        let t = SessionsTop::decode(&mut d)?;
        d.finish()?;
        Ok(t)
    }

    #[test]
    fn tops_round_trip_and_refuse_what_does_not_add_up() {
        let key = |n: u32| [&(u64::from(n) * 10).to_be_bytes()[..], &n.to_be_bytes()].concat();
        let node = |n: u32| SessionsChild { child: child(&key(n)), salt: [9; SESSION_SALT_LEN] };
        let pending: Vec<_> = (16..19).map(record).collect();
        let good = top(19, vec![(0, node(0))], pending.clone());
        let decoded = decode_top(&good).unwrap();
        assert_eq!(decoded.count, 19);
        assert_eq!(decoded.last(), &record(18));
        assert!(decode_top(&top(20, vec![(0, node(0))], pending.clone())).is_err(), "a count that lies");
        assert!(decode_top(&top(3, vec![], vec![record(1), record(3), record(4)])).is_err(), "a gap");
        assert!(decode_top(&top(0, vec![], vec![])).is_err(), "no record");
        let rising = vec![(0, node(0)), (1, node(1))];
        assert!(decode_top(&top(16 + 256 + 3, rising, pending.clone())).is_err(), "levels rising");
        let mut bad = record(5);
        bad.summary.signers = vec![Vec::new()];
        assert!(decode_top(&top(1, vec![], vec![bad])).is_err(), "an empty key id");
        for len in 0..good.len() {
            assert!(decode_top(&good[..len]).is_err(), "cut at {len}");
        }
    }

    #[test]
    fn a_change_naming_its_state_round_trips_and_only_a_change_may() {
        let mut named = record(4);
        named.summary.state = 9;
        let mut plain = Encoder::default();
        record(4).encode(&mut plain);
        let mut e = Encoder::default();
        named.encode(&mut e);
        assert_eq!(e.buf.len(), plain.buf.len() + 8, "the state follows the signers");
        assert_eq!(decode_top(&top(1, vec![], vec![named.clone()])).unwrap().last(), &named);
        // The kind field sits right after the pages tree's empty top (5
        // bytes) and the time: flip it to merge-and-named, then to named
        // with a state of 0.
        let kind_at = 4 + SESSION_SALT_LEN + 24 + 5 + 8;
        assert_eq!(u16::from_le_bytes([e.buf[kind_at], e.buf[kind_at + 1]]), SUMMARY_NAMES_STATE);
        let decode_record = |bytes: &[u8]| {
            let mut d = Decoder::new(bytes, WHAT);
            SessionRecord::decode(&mut d).and_then(|r| d.finish().map(|()| r))
        };
        assert_eq!(decode_record(&e.buf).unwrap(), named);
        let mut merge = e.buf.clone();
        merge[kind_at] |= 1;
        let err = decode_record(&merge).unwrap_err().to_string();
        assert!(err.contains("unknown session kind"), "{err}");
        let mut zero = e.buf.clone();
        let len = zero.len();
        zero[len - 8..].fill(0);
        let err = decode_record(&zero).unwrap_err().to_string();
        assert!(err.contains("a change naming state 0"), "{err}");
    }

    #[test]
    fn nodes_must_be_full() {
        let records: Vec<_> = (0..16).map(record).collect();
        assert_eq!(decode_leaf(&encode_leaf(&records)).unwrap(), records);
        assert!(decode_leaf(&encode_leaf(&records[..15])).is_err());
        let children: Vec<_> =
            (0..16).map(|i| SessionsChild { child: child(&[i; SESSION_KEY_LEN]), salt: [i; 32] }).collect();
        assert_eq!(decode_internal(&encode_internal(&children)).unwrap(), children);
        assert!(decode_internal(&encode_internal(&children[..1])).is_err());
    }
}
