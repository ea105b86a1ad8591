//! Pages in parallel: the ordered worker pool, the writer's page sealer,
//! and the codec that compresses and seals (or opens and decompresses)
//! each page and index node.

mod codec;
mod pool;
mod sealer;

#[cfg(feature = "fuzzing")]
pub(crate) use codec::decompress;
pub(crate) use codec::{
    compress_root, open_data_page, open_index_node, open_root, seal_index_node, seal_root, to_seal, Sealing,
};
pub(crate) use pool::OrderedPool;
pub(crate) use sealer::{PageSealer, SealingKeys};
