//! Where a tar stream's file contents wait while its entries are put in
//! index order: an unnamed temporary file, sealed a chunk at a time under a
//! key that never leaves memory ([`SpoolCipher`]).

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;

use crate::crypto::SpoolCipher;
use crate::format::TAG_LEN;

/// Plaintext bytes per sealed chunk.
const CHUNK: usize = 256 << 10;

/// Where one file's content lies in the spool.
#[derive(Debug, Clone, Copy)]
pub(super) struct SpoolRef {
    offset: u64,
    pub(super) len: u64,
    first_chunk: u64,
}

/// The spool while it is written.
pub(super) struct Spool {
    out: BufWriter<File>,
    position: u64,
    next_chunk: u64,
    cipher: SpoolCipher,
}

impl Spool {
    /// An unnamed file in the temporary directory (`$TMPDIR`).
    pub(super) fn new() -> io::Result<Spool> {
        let file = tempfile::tempfile()?;
        Ok(Spool {
            out: BufWriter::with_capacity(1 << 20, file),
            position: 0,
            next_chunk: 0,
            cipher: SpoolCipher::random()?,
        })
    }

    /// Stores everything `content` yields.
    pub(super) fn store(&mut self, content: &mut dyn Read) -> io::Result<SpoolRef> {
        let start = SpoolRef { offset: self.position, len: 0, first_chunk: self.next_chunk };
        let mut len = 0u64;
        let mut buf = Vec::with_capacity(CHUNK + TAG_LEN);
        loop {
            buf.clear();
            (&mut *content).take(CHUNK as u64).read_to_end(&mut buf)?;
            if buf.is_empty() && len > 0 {
                break;
            }
            let n = buf.len();
            self.cipher.seal(self.next_chunk, &mut buf);
            self.out.write_all(&buf)?;
            self.next_chunk += 1;
            self.position += buf.len() as u64;
            len += n as u64;
            if n < CHUNK {
                break;
            }
        }
        Ok(SpoolRef { len, ..start })
    }

    /// Ends writing; the contents can now be read back.
    pub(super) fn finish(self) -> io::Result<SpoolSource> {
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        Ok(SpoolSource { file, cipher: self.cipher })
    }
}

/// The spool once written.
pub(super) struct SpoolSource {
    file: File,
    cipher: SpoolCipher,
}

impl SpoolSource {
    /// A reader over one stored content.
    pub(super) fn open(&self, at: SpoolRef) -> SpoolReader<'_> {
        SpoolReader {
            src: self,
            offset: at.offset,
            remaining: at.len,
            chunk: at.first_chunk,
            buf: Vec::new(),
            pos: 0,
        }
    }
}

/// Reads one stored content back, opening each chunk as it comes.
pub(super) struct SpoolReader<'a> {
    src: &'a SpoolSource,
    offset: u64,
    remaining: u64,
    chunk: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for SpoolReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            if self.remaining == 0 {
                return Ok(0);
            }
            let plain = self.remaining.min(CHUNK as u64) as usize;
            self.buf.resize(plain + TAG_LEN, 0);
            self.src.file.read_exact_at(&mut self.buf, self.offset)?;
            self.src
                .cipher
                .open(self.chunk, &mut self.buf)
                .map_err(|_| io::Error::other("the temporary spool file was changed while in use"))?;
            self.offset += (plain + TAG_LEN) as u64;
            self.remaining -= plain as u64;
            self.chunk += 1;
            self.pos = 0;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_come_back_whole_and_sealed_on_disk() {
        let mut spool = Spool::new().unwrap();
        let big: Vec<u8> = (0..CHUNK * 2 + 17).map(|i| (i % 251) as u8).collect();
        let refs: Vec<SpoolRef> =
            [&b""[..], b"small", &big].iter().map(|c| spool.store(&mut &c[..]).unwrap()).collect();
        let src = spool.finish().unwrap();
        let mut on_disk = vec![0u8; src.file.metadata().unwrap().len() as usize];
        src.file.read_exact_at(&mut on_disk, 0).unwrap();
        assert!(!on_disk.windows(5).any(|w| w == b"small"), "plaintext on disk");
        for (r, want) in refs.iter().zip([&b""[..], b"small", &big]) {
            let mut got = Vec::new();
            src.open(*r).read_to_end(&mut got).unwrap();
            assert_eq!(got, want);
        }
    }
}
