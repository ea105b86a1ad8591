//! Pages in parallel: the ordered worker pools, the writer's page sealer
//! and the reader's page opener, each running `crypto`'s codec on many
//! pages at once while handing results back in order.

mod opener;
mod ordered;
mod sealer;
mod turns;

pub(crate) use opener::{HashedSpan, OpenedPage, PageOpener, PageToOpen, SpanDigest};
pub(crate) use ordered::OrderedWorkers;
pub(crate) use sealer::{PageSealer, SealingKeys};
