//! The merge session's run (FORMAT.md §5.1): the whole merged view in one
//! run that is valid on its own, so that a reader stopping at the merge
//! session's trailer (a crash right after it, a cut) reads that state.
//! A hard link whose target a later session replaced reads as a file
//! (§6.4), but in a lone run it would be damage: its content is stored
//! again in the merge session, as a linked file at the first such path
//! and as hard links to it at the others that shared that content.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use super::maintain::copy_content;
use crate::archive::Archive;
use crate::error::Result;
use crate::format::{Entry, EntryKind, DIGEST_LEN};
use crate::session::ArchiveWriter;
use crate::storage::ReadAt;

/// Where a file's content lies and its digest.
type Content = (u64, u64, [u8; DIGEST_LEN]);

/// Writes every entry of `archive`'s merged view (read from `path`) into
/// `writer`, hard links whose target is gone resolved into files.
pub(super) fn write_merged<W: Write, S: ReadAt>(
    writer: &mut ArchiveWriter<W>,
    archive: &Archive<S>,
    path: &Path,
) -> Result<()> {
    // The view's linked files: what a hard link to each must repeat.
    let mut linked: HashMap<Vec<u8>, Content> = HashMap::new();
    // Content of stale links stored again, and the path that holds it.
    let mut restored: HashMap<Content, Vec<u8>> = HashMap::new();
    let mut leaf = None;
    for entry in archive.merged_from(None)? {
        let entry = entry?;
        match (&entry.kind, entry.extent) {
            (EntryKind::File { sha256, .. }, Some(x)) if x.linked => {
                linked.insert(entry.path.clone(), (x.offset, x.size, *sha256));
            }
            (&EntryKind::Hardlink { ref target, size, sha256 }, Some(x)) => {
                let content = (x.offset, x.size, sha256);
                if linked.get(target) != Some(&content) {
                    if let Some(first) = restored.get(&content) {
                        writer.add_hardlink(&entry.path, &entry.meta, first)?;
                    } else {
                        let file = Entry { kind: EntryKind::File { size, sha256 }, ..entry };
                        leaf = copy_content(writer, archive, &file, true, leaf.take(), path)?;
                        restored.insert(content, file.path);
                    }
                    continue;
                }
            }
            _ => {}
        }
        writer.copy_entry(entry)?;
    }
    Ok(())
}
