//! Work in parallel: the ordered worker pools, the writer's page sealer
//! and chunk digester, and the reader's page opener, each handing results
//! back in order.

mod digester;
mod opener;
mod ordered;
mod sealer;
mod turns;

pub(crate) use digester::{DigestJob, Digested, Digester};
pub(crate) use opener::{HashedSpan, OpenedPage, PageOpener, PageToOpen, SpanDigest};
pub(crate) use ordered::OrderedWorkers;
pub(crate) use sealer::{PageSealer, SealingKeys};
