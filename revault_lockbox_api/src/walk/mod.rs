//! The tree source: input paths put in the index order (tar's rules for
//! names), walked without following what a racing process swaps in,
//! filtered by a [`Selection`](crate::session::Selection), into an
//! [`ArchiveWriter`](crate::session::ArchiveWriter); what is skipped comes
//! back as warnings in a [`CreateReport`].

mod inputs;
mod leaf;
mod tree;

pub(crate) use inputs::{check_inputs, ordered_roots, walk_with, WalkRules};
pub(crate) use tree::{Seen, WalkFilter};

use crate::warning::CreateWarning;

/// What a create did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateReport {
    /// Entries archived.
    pub entries: u64,
    /// Bytes of file content archived.
    pub content_bytes: u64,
    /// Archive size.
    pub archive_bytes: u64,
    /// What was skipped or stored incompletely (sockets, devices, the
    /// archive itself, files that vanished, were replaced, changed while
    /// read or could not be read). Empty with
    /// [`CreateOptions::strict`](crate::session::CreateOptions::strict),
    /// which fails at the first instead.
    pub warnings: Vec<CreateWarning>,
}

impl CreateReport {
    /// Whether a warning means the archive misses or holds a changed copy
    /// of something asked for ([`CreateWarning::is_failure`]).
    pub fn has_failures(&self) -> bool {
        self.warnings.iter().any(CreateWarning::is_failure)
    }
}
