//! The one sequence of every extraction, from an archive or a salvage.

use super::Extraction;
use crate::archive::ContentSource;
use crate::error::Result;
use crate::extract::ExtractReport;
use crate::format::Entry;

impl Extraction<'_> {
    /// The sequence of every extraction: `check` sees every selected entry
    /// before anything is written; then `selected` (the same selection
    /// again) is written without what the check kept, links last, or only
    /// counted on a dry run. On failure the directories made are removed.
    pub(in crate::extract) fn run<'s, I>(
        mut self,
        source: &'s dyn ContentSource,
        check: impl FnOnce(&mut Self) -> Result<()>,
        selected: impl FnOnce() -> Result<I>,
    ) -> Result<ExtractReport>
    where
        I: Iterator<Item = Result<Entry>> + 's,
    {
        let dry_run = self.options.dry_run;
        let written = (|| {
            check(&mut self)?;
            let kept = self.take_kept();
            let entries = selected()?.filter(move |e| e.as_ref().map_or(true, |e| !kept.contains(&e.path)));
            if dry_run {
                return self.count_only(entries);
            }
            let copies = self.write_files(source, Box::new(entries), true)?;
            self.copy_links(source, copies)
        })();
        if let Err(e) = written {
            self.remove_made_dirs();
            return Err(e);
        }
        if dry_run {
            return Ok(self.into_report());
        }
        self.finish()
    }
}
