//! The page table as the content walk reads it: every page record in
//! order from a starting offset, through each session's pages tree in
//! turn, with the continuity of page numbers and stream offsets checked.

use crate::archive::checks::check_follows;
use crate::archive::Archive;
use crate::error::{Error, Result};
use crate::format::{PageRecord, PagesLeaf};
use crate::index::{page_key, LeafCursor, TreeReader};
use crate::storage::ReadAt;

/// The page records in order, from a starting leaf, through each session's
/// pages tree in turn, with the table's continuity checked: page numbers
/// and stream offsets follow on, and each session's pages start at the
/// page the sessions table says.
pub(super) struct PageRecords<'a, S> {
    archive: &'a Archive<S>,
    session: usize,
    cursor: LeafCursor<'a>,
    tree: TreeReader<'a>,
    leaf: Option<PagesLeaf>,
    index: usize,
    /// Next page number and stream offset expected.
    next: Option<(u64, u64)>,
}

impl<S: ReadAt> PageRecords<'_, S> {
    pub(super) fn next(&mut self) -> Result<Option<(u64, PageRecord, u64)>> {
        loop {
            if let Some(leaf) = &self.leaf {
                if let Some(record) = leaf.pages.get(self.index) {
                    let (number, start) = self.next.expect("set with the leaf");
                    self.index += 1;
                    self.next = Some((number + 1, start + u64::from(record.plain_len)));
                    return Ok(Some((number, *record, start)));
                }
            }
            let Some(next) = self.cursor.next() else {
                if !self.next_session()? {
                    return Ok(None);
                }
                continue;
            };
            let (id, child) = next?;
            let leaf = PagesLeaf::decode(&self.tree.node(&id, &child)?)?;
            if page_key(leaf.first_offset) != child.first_key {
                return Err(Error::malformed("page table", "leaves do not follow on"));
            }
            match self.next {
                Some(_) => check_follows(self.next, &leaf)?,
                // The first leaf read (a walk may start in the middle).
                None => self.archive.check_pages_leaf(self.session, &leaf)?,
            }
            self.next = Some((leaf.first_page, leaf.first_offset));
            self.leaf = Some(leaf);
            self.index = 0;
        }
    }

    /// Where the walk stands: the next page number and stream offset.
    pub(super) fn position(&self) -> Option<(u64, u64)> {
        self.next
    }

    /// Moves on to the next session's pages tree; `false` after the last.
    fn next_session(&mut self) -> Result<bool> {
        let sessions = self.archive.sessions_table()?;
        if self.session + 1 >= sessions.len() {
            return Ok(false);
        }
        self.session += 1;
        let first_page = sessions.first_page(self.session);
        if self.next.is_some_and(|(page, _)| page != first_page) {
            return Err(Error::malformed("page table", "a session's pages do not start where the root says"));
        }
        self.tree = self.archive.pages_tree(self.session)?;
        self.cursor = self.tree.leaves(sessions.pages(self.session));
        Ok(true)
    }
}

impl<S: ReadAt> Archive<S> {
    pub(super) fn page_records_from(&self, at: u64) -> Result<PageRecords<'_, S>> {
        let session = self.session_at(at)?;
        let tree = self.pages_tree(session)?;
        let cursor = tree.leaves_from(self.sessions_table()?.pages(session), &page_key(at))?;
        Ok(PageRecords { archive: self, session, cursor, tree, leaf: None, index: 0, next: None })
    }
}
