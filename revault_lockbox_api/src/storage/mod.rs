//! Positioned reads: what a reader needs from wherever an archive lives.
//!
//! Readers ask for exact byte ranges and never move a shared cursor, so
//! several threads can read one archive at once, and a remote store can
//! serve each range with one request.

use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

#[cfg(feature = "s3")]
pub mod s3;

/// A source of archive bytes read by offset.
pub trait ReadAt: Send + Sync {
    /// Fills `buf` with the bytes at `offset`; an
    /// [`UnexpectedEof`](io::ErrorKind::UnexpectedEof) error when the
    /// source ends first.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The source's length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Whether the source is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// A hint: these `(offset, len)` ranges will be read soon, in this
    /// order. A remote source may start fetching them; the default ignores
    /// it (a local file has the kernel's read-ahead).
    fn will_read(&self, _ranges: &[(u64, u32)]) {}
    /// Whether `len` bytes at `offset` are at hand: reading them sends no
    /// request (a remote source fetched them already). A reader may then
    /// prefer them to other bytes that hold the same (FORMAT.md §6.1 step
    /// 4: the header's copy at the end). The default says no: on a local
    /// file every read is as cheap, and readers keep their usual order.
    fn at_hand(&self, _offset: u64, _len: u64) -> bool {
        false
    }
    /// [`read_exact_at`](ReadAt::read_exact_at) of a unit the caller
    /// checks itself (a sealed page, node or root: its tag): a source that
    /// would check the bytes on its own (a recovery view) may hand them
    /// through unchecked, and checks them only when asked by
    /// [`recheck`](ReadAt::recheck). The default reads as
    /// `read_exact_at` does.
    fn read_unit_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.read_exact_at(buf, offset)
    }
    /// The unit at `offset..offset + len` failed its own check: a source
    /// that can rebuild damaged bytes (a recovery view) checks them and
    /// rebuilds what it can. `true` when reading them again may give other
    /// bytes; the default, a source that cannot, says `false`.
    fn recheck(&self, _offset: u64, _len: u64) -> io::Result<bool> {
        Ok(false)
    }
}

impl ReadAt for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl<T: AsRef<[u8]> + Send + Sync> ReadAt for Cursor<T> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let bytes = self.get_ref().as_ref();
        let start = usize::try_from(offset).ok().filter(|&s| s <= bytes.len());
        let src = start.and_then(|s| bytes.get(s..s.checked_add(buf.len())?));
        let src = src.ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.get_ref().as_ref().len() as u64)
    }
}

/// A pointer to a source reads as the source: `Box<dyn ReadAt>` for a
/// source chosen at run time, `Arc<dyn ReadAt>` for one read twice (an
/// open, then a salvage scan), `&S` for an earlier state opened from an
/// archive already open ([`Archive::at`](crate::Archive::at)).
macro_rules! read_at_through {
    ($($pointer:ty),+) => {$(
        impl<T: ReadAt + ?Sized> ReadAt for $pointer {
            fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                (**self).read_exact_at(buf, offset)
            }

            fn len(&self) -> io::Result<u64> {
                (**self).len()
            }

            fn will_read(&self, ranges: &[(u64, u32)]) {
                (**self).will_read(ranges)
            }

            fn at_hand(&self, offset: u64, len: u64) -> bool {
                (**self).at_hand(offset, len)
            }

            fn read_unit_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                (**self).read_unit_at(buf, offset)
            }

            fn recheck(&self, offset: u64, len: u64) -> io::Result<bool> {
                (**self).recheck(offset, len)
            }
        }
    )+};
}

read_at_through!(Box<T>, std::sync::Arc<T>, &T);

/// Any `Read + Seek` as a [`ReadAt`], one read at a time.
#[derive(Debug)]
pub struct SeekReader<R>(Mutex<R>);

impl<R: Read + Seek + Send> SeekReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> SeekReader<R> {
        SeekReader(Mutex::new(inner))
    }
}

impl<R: Read + Seek + Send> ReadAt for SeekReader<R> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut inner = self.0.lock().map_err(|_| io::Error::other("reader poisoned"))?;
        inner.seek(SeekFrom::Start(offset))?;
        inner.read_exact(buf)
    }

    fn len(&self) -> io::Result<u64> {
        let mut inner = self.0.lock().map_err(|_| io::Error::other("reader poisoned"))?;
        inner.seek(SeekFrom::End(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_sources_report_eof() {
        let c = Cursor::new(vec![1u8, 2, 3]);
        let mut buf = [0u8; 2];
        ReadAt::read_exact_at(&c, &mut buf, 1).unwrap();
        assert_eq!(buf, [2, 3]);
        for offset in [2, 3, u64::MAX] {
            let e = ReadAt::read_exact_at(&c, &mut buf, offset).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        }
        let s = SeekReader::new(Cursor::new(vec![1u8, 2, 3]));
        assert_eq!(ReadAt::len(&s).unwrap(), 3);
        assert!(ReadAt::read_exact_at(&s, &mut buf, 2).is_err());
    }
}
