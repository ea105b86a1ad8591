//! Prints, for each regular file a salvage scan of a whole archive proves,
//! the file offset where the last unit it needs ends (its entries leaf,
//! its last page) and its path, tab-separated: the same archive cut at or
//! after that offset keeps the file. `scripts/cut-test.sh` counts cuts
//! against it. The password comes from `LOCKBOX_PASSWORD`.
//!
//! `cargo run -p revault_lockbox_api --example proof_ends -- ARCHIVE`

use std::io::Write;

use revault_lockbox_api::read::Salvage;
use revault_lockbox_api::{EntryKind, OpenOptions, Password};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os().nth(1).ok_or("usage: proof_ends ARCHIVE")?;
    let password = Password::from(std::env::var("LOCKBOX_PASSWORD")?.as_str());
    let salvage = Salvage::scan(std::fs::File::open(path)?, &password, OpenOptions::new())?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (entry, end) in salvage.entries().iter().zip(salvage.proof_ends()) {
        if matches!(entry.kind, EntryKind::File { .. }) {
            out.write_all(format!("{end}\t").as_bytes())?;
            out.write_all(&entry.path)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(out.flush()?)
}
