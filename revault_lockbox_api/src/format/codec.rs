//! Little-endian field encoding shared by every on-disk structure.

use std::fmt;

/// A structure read from an archive is malformed: too short, a length over
/// its limit, or a field with a value this version does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The structure or field that failed to decode.
    pub what: &'static str,
    /// Why it failed.
    pub why: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed {}: {}", self.what, self.why)
    }
}

impl std::error::Error for DecodeError {}

pub(crate) fn malformed(what: &'static str, why: &'static str) -> DecodeError {
    DecodeError { what, why }
}

/// Appends little-endian fields to a byte vector.
#[derive(Default)]
pub(crate) struct Encoder {
    pub(crate) buf: Vec<u8>,
}

impl Encoder {
    pub(crate) fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    pub(crate) fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }
    /// A `u32` length followed by the bytes; callers keep `v` under its limit.
    pub(crate) fn var_bytes(&mut self, v: &[u8]) -> &mut Self {
        let len = u32::try_from(v.len()).expect("length checked against its limit");
        self.u32(len).bytes(v)
    }
}

/// Reads little-endian fields from a byte slice, failing cleanly when the
/// slice runs out instead of panicking.
pub(crate) struct Decoder<'a> {
    rest: &'a [u8],
    what: &'static str,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Decoder { rest: bytes, what }
    }
    pub(crate) fn remaining(&self) -> usize {
        self.rest.len()
    }
    /// The bytes not consumed yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.rest
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.rest.len() < n {
            return Err(malformed(self.what, "ends early"));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }
    /// The next byte, not consumed.
    pub(crate) fn peek_u8(&self) -> Option<u8> {
        self.rest.first().copied()
    }
    pub(crate) fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub(crate) fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    /// A `u32` length, checked against `max` before the bytes are taken.
    pub(crate) fn var_bytes(&mut self, max: usize) -> Result<&'a [u8], DecodeError> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(malformed(self.what, "length over its limit"));
        }
        self.bytes(len)
    }
    /// Fails unless every byte was consumed: trailing bytes are tampering.
    pub(crate) fn finish(self) -> Result<(), DecodeError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(malformed(self.what, "has trailing bytes"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_input_is_an_error_not_a_panic() {
        let mut d = Decoder::new(&[1, 2, 3], "test");
        assert_eq!(d.u16().unwrap(), 0x0201);
        assert!(d.u32().is_err());
    }

    #[test]
    fn var_bytes_enforces_limit() {
        let mut e = Encoder::default();
        e.var_bytes(&[7; 10]);
        assert!(Decoder::new(&e.buf, "t").var_bytes(9).is_err());
        assert_eq!(Decoder::new(&e.buf, "t").var_bytes(10).unwrap(), &[7; 10]);
    }
}
