//! Pages in parallel: the ordered worker pools, the writer's page sealer,
//! the reader's page opener, and the codec that compresses and seals (or opens and decompresses)
//! each page and index node.

mod codec;
mod opener;
mod ordered;
mod pool;
mod sealer;
mod turns;

#[cfg(feature = "fuzzing")]
pub(crate) use codec::decompress;
pub(crate) use codec::{
    compress_root, open_data_page, open_index_node, open_root, seal_index_node, seal_root, to_seal, Sealing,
};
pub(crate) use opener::{HashedSpan, OpenedPage, PageOpener, PageToOpen, SpanDigest};
pub(crate) use pool::OrderedPool;
pub(crate) use sealer::{PageSealer, SealingKeys};
