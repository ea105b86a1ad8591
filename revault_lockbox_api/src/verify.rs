//! [`Archive::verify`]: authenticate everything, write nothing.

use std::collections::HashMap;
use std::io::{Read, Seek};

use sha2::{Digest, Sha256};

use crate::format::EntryKind;
use crate::stream::{Span, SpanVisitor};
use crate::writer::show;
use crate::{Archive, Error, Result};

/// One entry that did not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The entry's path.
    pub path: String,
    /// What was wrong, naming the page where a page failed.
    pub reason: String,
}

/// What [`Archive::verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Data pages authenticated (including damaged ones).
    pub pages: u64,
    /// Data pages that failed authentication.
    pub damaged_pages: Vec<String>,
    /// Files whose content was checked.
    pub files: u64,
    /// Bytes of file content checked.
    pub bytes: u64,
    /// Entries that did not verify.
    pub damaged: Vec<Damage>,
}

impl VerifyReport {
    /// Whether everything verified.
    pub fn is_ok(&self) -> bool {
        self.damaged.is_empty() && self.damaged_pages.is_empty()
    }
}

struct Checker<'a> {
    paths: &'a [Vec<u8>],
    digests: &'a [[u8; 32]],
    hashing: HashMap<usize, Sha256>,
    report: VerifyReport,
}

impl SpanVisitor for Checker<'_> {
    fn begin(&mut self, span: usize) -> Result<()> {
        self.hashing.insert(span, Sha256::new());
        Ok(())
    }

    fn bytes(&mut self, span: usize, bytes: &[u8]) -> Result<()> {
        self.hashing.get_mut(&span).expect("begun").update(bytes);
        self.report.bytes += bytes.len() as u64;
        Ok(())
    }

    fn end(&mut self, span: usize) -> Result<()> {
        let digest = self.hashing.remove(&span).expect("begun").finalize();
        self.report.files += 1;
        if digest[..] != self.digests[span] {
            let path = show(&self.paths[span]);
            let reason = Error::ChecksumMismatch { path: path.clone() }.to_string();
            self.report.damaged.push(Damage { path, reason });
        }
        Ok(())
    }

    fn damaged(&mut self, span: usize, error: &Error) -> bool {
        self.hashing.remove(&span);
        let reason = error.to_string();
        if !self.report.damaged_pages.contains(&reason) {
            self.report.damaged_pages.push(reason.clone());
        }
        self.report.damaged.push(Damage { path: show(&self.paths[span]), reason });
        true
    }
}

impl<R: Read + Seek> Archive<R> {
    /// Authenticates every data page and recomputes every file's SHA-256
    /// against the index. The header, key slots, trailer and index were
    /// authenticated by [`open`](Self::open). Damage is reported per entry,
    /// not returned as an error; I/O errors are.
    pub fn verify(&mut self) -> Result<VerifyReport> {
        let mut files: Vec<(Span, Vec<u8>, [u8; 32])> = Vec::new();
        for e in self.entries() {
            if let EntryKind::File { size, location, sha256 } = &e.kind {
                files.push((
                    Span { start: self.stream_offset(location), size: *size },
                    e.path.clone(),
                    *sha256,
                ));
            }
        }
        files.sort_by_key(|(span, _, _)| span.start);
        let spans: Vec<Span> = files.iter().map(|f| f.0).collect();
        let paths: Vec<Vec<u8>> = files.iter().map(|f| f.1.clone()).collect();
        let digests: Vec<[u8; 32]> = files.iter().map(|f| f.2).collect();
        let all_pages: Vec<u64> = (0..self.page_count()).collect();
        let mut checker = Checker {
            paths: &paths,
            digests: &digests,
            hashing: HashMap::new(),
            report: VerifyReport::default(),
        };
        self.stream_spans(&spans, &all_pages, &mut checker)?;
        checker.report.pages = all_pages.len() as u64;
        Ok(checker.report)
    }
}
