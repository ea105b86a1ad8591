//! `extract`'s tar flags for names and existing files:
//! `--strip-components`, `--skip-old-files`, `--keep-newer-files`.

use clap::Args;

/// How `extract` names what it writes and treats what is there already.
#[derive(Debug, Args)]
pub struct ExistingArgs {
    /// Drop N leading components from each stored name (and hard link
    /// target) before extracting; entries with nothing left are not
    /// extracted. NAMEs and --exclude match the stored names, as in tar.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub strip_components: usize,
    /// Leave existing files, links and anything else in the way alone and
    /// extract the rest (exit 0), as tar --skip-old-files.
    #[arg(long, conflicts_with_all = ["overwrite", "keep_old_files", "keep_newer_files", "to_stdout"])]
    pub skip_old_files: bool,
    /// Replace existing files and links only when they are older than the
    /// archive's copy; keep newer ones, with a warning (exit 0), as tar
    /// --keep-newer-files.
    #[arg(long, conflicts_with_all = ["overwrite", "keep_old_files", "to_stdout"])]
    pub keep_newer_files: bool,
}
