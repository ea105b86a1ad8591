//! Walking file contents through the data pages in one ordered pass: the
//! shared engine of extraction and verification.

use std::io::{Read, Seek};

use crate::{Archive, Error, Result};

/// One file's bytes in the data stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub(crate) start: u64,
    pub(crate) size: u64,
}

/// Receives the bytes of each span as its pages are opened.
pub(crate) trait SpanVisitor {
    /// Span `span` starts (before any of its bytes).
    fn begin(&mut self, span: usize) -> Result<()>;
    /// The next bytes of span `span`, authenticated.
    fn bytes(&mut self, span: usize, bytes: &[u8]) -> Result<()>;
    /// All of span `span` was delivered.
    fn end(&mut self, span: usize) -> Result<()>;
    /// A page holding bytes of `span` failed; return `true` to go on with
    /// the other spans, `false` to stop with `error`.
    fn damaged(&mut self, span: usize, error: &Error) -> bool;
}

impl<R: Read + Seek> Archive<R> {
    /// The pages holding any byte of `spans`, ascending.
    pub(crate) fn pages_of(&self, spans: &[Span]) -> Vec<u64> {
        let mut pages: Vec<u64> = Vec::new();
        for span in spans.iter().filter(|s| s.size > 0) {
            let (first, _) = self.locate(span.start);
            let (last, _) = self.locate(span.start + span.size - 1);
            pages.extend(first..=last);
        }
        pages.sort_unstable();
        pages.dedup();
        pages
    }

    /// Opens `pages` (ascending, covering every byte of `spans`) in
    /// parallel and delivers each span's bytes to `visitor` in order.
    /// `spans` must be sorted by start and must not overlap.
    pub(crate) fn stream_spans(
        &mut self,
        spans: &[Span],
        pages: &[u64],
        visitor: &mut dyn SpanVisitor,
    ) -> Result<()> {
        let mut written = vec![0u64; spans.len()];
        let mut open: Vec<usize> = Vec::new();
        let mut next = 0usize;
        for (i, _) in spans.iter().enumerate().filter(|(_, s)| s.size == 0) {
            visitor.begin(i)?;
            visitor.end(i)?;
        }
        let bounds: Vec<(u64, u64)> =
            pages.iter().map(|&p| (self.page_start(p), self.page_start(p + 1))).collect();
        let mut k = 0usize;
        self.for_each_page(pages.iter().copied(), |_, page| {
            let (page_start, page_end) = bounds[k];
            k += 1;
            let page = match page {
                Ok(page) => page,
                Err(error) => {
                    // Every span with bytes in this page is damaged: those
                    // under way and those that start here.
                    let mut hit = std::mem::take(&mut open);
                    while next < spans.len() && spans[next].start < page_end {
                        if spans[next].size > 0 {
                            hit.push(next);
                        }
                        next += 1;
                    }
                    for span in hit {
                        if !visitor.damaged(span, &error) {
                            return Err(error);
                        }
                    }
                    return Ok(());
                }
            };
            while next < spans.len() && spans[next].start < page_end {
                if spans[next].size > 0 {
                    visitor.begin(next)?;
                    open.push(next);
                }
                next += 1;
            }
            let mut j = 0;
            while j < open.len() {
                let (i, span) = (open[j], spans[open[j]]);
                let from = (span.start + written[i]).max(page_start);
                let to = (span.start + span.size).min(page_end);
                if from < to {
                    visitor.bytes(i, &page[(from - page_start) as usize..(to - page_start) as usize])?;
                    written[i] += to - from;
                }
                if written[i] == span.size {
                    open.swap_remove(j);
                    visitor.end(i)?;
                } else {
                    j += 1;
                }
            }
            Ok(())
        })
    }
}
