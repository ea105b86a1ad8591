//! Content-defined chunks and their ids: the first piece of deduplication
//! (format v4, docs/DEDUP.md, "The chunker and chunk ids").
//!
//! A [`Chunker`] cuts one file's content where the keyed FastCDC 2020 rule
//! says, whatever sizes of slices the content arrives in, and sends each
//! chunk's bytes and end to a [`ChunkSink`]; [`ChunkIds`] is the sink that
//! names each chunk by its keyed BLAKE3 [`ChunkId`] on the way. The cut
//! points and ids both depend on the archive's [`ChunkKeys`] (derived from
//! its content key), so neither says anything to whoever lacks that key.
//!
//! The writer (`session`'s chunked path) cuts and names large files with
//! it; this module defines no bytes on disk beyond the chunker's keying
//! and sizes (the chunk list is `format`'s, FORMAT.md §3.5c).

mod chunker;
mod id;
mod params;

pub use chunker::{ChunkSink, Chunker, CutPoints};
pub use id::{ChunkId, ChunkIdHasher, ChunkIds};
pub use params::{ChunkParams, ChunkParamsError};

pub use crate::crypto::ChunkKeys;

#[cfg(test)]
mod known_answers;
