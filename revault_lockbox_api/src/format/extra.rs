//! The optional tail of an entry: owner names, extended attributes and a
//! sparse file's map. Present only when the kind byte has
//! [`KIND_HAS_EXTRA`] set, so entries without them keep their old bytes.
//!
//! ```text
//! extra   = flags u8 || [user name] || [group name] || [xattrs] || [sparse]
//! name    = len u8 || bytes                          (1 to 255 bytes, no NUL)
//! xattrs  = count u16 || (name || value_len u32 || value)[count]
//! sparse  = count u32 || (offset u64 || len u64)[count]
//! ```
//! Flags say which parts follow, in that order: bit 0 user, bit 1 group,
//! bit 2 xattrs, bit 3 sparse; other bits, and a tail with no part, are
//! refused.

use super::codec::{malformed, Decoder, Encoder};
use super::metadata::{Metadata, Xattr};
use super::{DecodeError, MAX_SPARSE_SEGMENTS, MAX_XATTRS_LEN, MAX_XATTR_NAME_LEN, MAX_XATTR_VALUE_LEN};

/// Set in an entry's kind byte when an [`Extra`] tail follows its body.
pub(crate) const KIND_HAS_EXTRA: u8 = 0x80;

const HAS_USER: u8 = 1;
const HAS_GROUP: u8 = 2;
const HAS_XATTRS: u8 = 4;
const HAS_SPARSE: u8 = 8;

/// Longest owner or group name, in bytes.
pub(crate) const MAX_OWNER_NAME_LEN: usize = 255;

/// Where a sparse file's data lies: its data segments in increasing
/// order; everything else up to the file's size reads as zeros. The data
/// stream holds the segments' bytes back to back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SparseMap {
    segments: Vec<(u64, u64)>,
}

impl SparseMap {
    /// The map of `(offset, len)` data segments, or why it cannot be one
    /// for a file of `size` bytes: a segment empty, overlapping or touching
    /// the one before, out of order, past `size`, or too many.
    pub fn new(segments: Vec<(u64, u64)>, size: u64) -> Result<SparseMap, &'static str> {
        if segments.len() > MAX_SPARSE_SEGMENTS {
            return Err("too many data segments");
        }
        let mut end = 0u64;
        for (i, &(offset, len)) in segments.iter().enumerate() {
            if len == 0 {
                return Err("an empty data segment");
            }
            if i > 0 && offset <= end {
                return Err("data segments overlap or are out of order");
            }
            end =
                offset.checked_add(len).filter(|&e| e <= size).ok_or("a data segment runs past the size")?;
        }
        Ok(SparseMap { segments })
    }

    /// A map as given, unchecked: for tests that build hostile archives.
    #[cfg(test)]
    pub(crate) fn unchecked(segments: Vec<(u64, u64)>) -> SparseMap {
        SparseMap { segments }
    }

    /// The `(offset, len)` data segments, in order.
    pub fn segments(&self) -> &[(u64, u64)] {
        &self.segments
    }

    /// Bytes of data stored: the segments' lengths summed.
    pub fn stored_len(&self) -> u64 {
        self.segments.iter().map(|s| s.1).sum()
    }

    /// Where the last segment ends (0 with none).
    pub fn end(&self) -> u64 {
        self.segments.last().map_or(0, |&(o, l)| o + l)
    }

    /// The map of the first `stored` bytes of data only.
    pub(crate) fn truncated(mut self, stored: u64) -> SparseMap {
        let mut left = stored;
        self.segments.retain_mut(|seg| {
            seg.1 = seg.1.min(left);
            left -= seg.1;
            seg.1 > 0
        });
        self
    }
}

/// The optional tail of one entry, as encoded: its owner names and
/// xattrs (from its [`Metadata`]) and its sparse map.
pub(crate) struct Extra<'a> {
    pub(crate) meta: &'a Metadata,
    pub(crate) sparse: Option<&'a SparseMap>,
}

impl Extra<'_> {
    pub(crate) fn is_empty(&self) -> bool {
        self.meta.user.is_none()
            && self.meta.group.is_none()
            && self.meta.xattrs.is_empty()
            && self.sparse.is_none()
    }

    pub(crate) fn encoded_len(&self) -> usize {
        if self.is_empty() {
            return 0;
        }
        let name = |n: &Option<Vec<u8>>| n.as_ref().map_or(0, |n| 1 + n.len());
        let xattrs = if self.meta.xattrs.is_empty() {
            0
        } else {
            2 + self.meta.xattrs.iter().map(|x| 1 + x.name.len() + 4 + x.value.len()).sum::<usize>()
        };
        let sparse = self.sparse.map_or(0, |m| 4 + 16 * m.segments.len());
        1 + name(&self.meta.user) + name(&self.meta.group) + xattrs + sparse
    }

    pub(crate) fn encode(&self, e: &mut Encoder) {
        let flags = [
            (self.meta.user.is_some(), HAS_USER),
            (self.meta.group.is_some(), HAS_GROUP),
            (!self.meta.xattrs.is_empty(), HAS_XATTRS),
            (self.sparse.is_some(), HAS_SPARSE),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |acc, (_, bit)| acc | bit);
        e.u8(flags);
        for name in [&self.meta.user, &self.meta.group].into_iter().flatten() {
            e.u8(name.len() as u8).bytes(name);
        }
        if !self.meta.xattrs.is_empty() {
            e.u16(self.meta.xattrs.len() as u16);
            for x in &self.meta.xattrs {
                e.u8(x.name.len() as u8).bytes(&x.name).u32(x.value.len() as u32).bytes(&x.value);
            }
        }
        if let Some(map) = self.sparse {
            e.u32(map.segments.len() as u32);
            for &(offset, len) in &map.segments {
                e.u64(offset).u64(len);
            }
        }
    }
}

/// Decodes a tail into `meta` (owner names, xattrs) and returns its sparse
/// map; `size` is the entry's logical size (files and hard links), which a
/// sparse map must stay within.
pub(crate) fn decode_extra(
    d: &mut Decoder<'_>,
    size: Option<u64>,
    meta: &mut Metadata,
) -> Result<Option<SparseMap>, DecodeError> {
    let flags = d.u8()?;
    if flags == 0 || flags & !(HAS_USER | HAS_GROUP | HAS_XATTRS | HAS_SPARSE) != 0 {
        return Err(malformed("index entry", "unknown or empty metadata flags"));
    }
    let mut sparse = None;
    let name = |d: &mut Decoder<'_>, what| -> Result<Vec<u8>, DecodeError> {
        let len = d.u8()? as usize;
        let name = d.bytes(len)?;
        check_name(name).map_err(|why| malformed(what, why))?;
        Ok(name.to_vec())
    };
    if flags & HAS_USER != 0 {
        meta.user = Some(name(d, "owner name")?);
    }
    if flags & HAS_GROUP != 0 {
        meta.group = Some(name(d, "group name")?);
    }
    if flags & HAS_XATTRS != 0 {
        meta.xattrs = decode_xattrs(d)?;
    }
    if flags & HAS_SPARSE != 0 {
        let size = size.ok_or_else(|| malformed("sparse map", "on an entry without content"))?;
        let count = d.u32()? as usize;
        if count > MAX_SPARSE_SEGMENTS || count * 16 > d.remaining() {
            return Err(malformed("sparse map", "more segments than allowed"));
        }
        let segments =
            (0..count).map(|_| Ok((d.u64()?, d.u64()?))).collect::<Result<Vec<_>, DecodeError>>()?;
        sparse = Some(SparseMap::new(segments, size).map_err(|why| malformed("sparse map", why))?);
    }
    Ok(sparse)
}

fn decode_xattrs(d: &mut Decoder<'_>) -> Result<Vec<Xattr>, DecodeError> {
    let count = d.u16()? as usize;
    if count == 0 {
        return Err(malformed("extended attributes", "an empty list"));
    }
    let mut xattrs: Vec<Xattr> = Vec::with_capacity(count.min(d.remaining() / 6));
    let mut total = 0usize;
    for _ in 0..count {
        let name_len = d.u8()? as usize;
        let name = d.bytes(name_len)?.to_vec();
        let value_len = d.u32()? as usize;
        if value_len > MAX_XATTR_VALUE_LEN {
            return Err(malformed("extended attribute", "value over 64 KiB"));
        }
        total += 1 + name_len + 4 + value_len;
        if total > MAX_XATTRS_LEN {
            return Err(malformed("extended attributes", "over their limit in all"));
        }
        let value = d.bytes(value_len)?.to_vec();
        let x = Xattr { name, value };
        check_xattr(&x).map_err(|why| malformed("extended attribute", why))?;
        if xattrs.last().is_some_and(|last| last.name >= x.name) {
            return Err(malformed("extended attributes", "names not in strictly increasing order"));
        }
        xattrs.push(x);
    }
    Ok(xattrs)
}

/// A list of xattrs one entry can hold: each valid, names strictly
/// increasing, at most [`MAX_XATTRS_LEN`] encoded.
pub(crate) fn check_xattr_list(xattrs: &[Xattr]) -> Result<(), &'static str> {
    xattrs.iter().try_for_each(check_xattr)?;
    if xattrs.windows(2).any(|w| w[0].name >= w[1].name) {
        return Err("names repeated or not sorted");
    }
    if xattrs.iter().map(|x| 1 + x.name.len() + 4 + x.value.len()).sum::<usize>() > MAX_XATTRS_LEN {
        return Err("more than 72 KiB of extended attributes");
    }
    Ok(())
}

/// An owner or group name: 1 to 255 bytes, no NUL.
pub(crate) fn check_name(name: &[u8]) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > MAX_OWNER_NAME_LEN || name.contains(&0) {
        return Err("empty, over 255 bytes or holding a NUL");
    }
    Ok(())
}

/// An extended attribute Linux could hold: a name of 1 to 255 bytes with
/// no NUL, a value of at most 64 KiB.
pub(crate) fn check_xattr(x: &Xattr) -> Result<(), &'static str> {
    if x.name.is_empty() || x.name.len() > MAX_XATTR_NAME_LEN || x.name.contains(&0) {
        return Err("name empty, over 255 bytes or holding a NUL");
    }
    if x.value.len() > MAX_XATTR_VALUE_LEN {
        return Err("value over 64 KiB");
    }
    Ok(())
}
