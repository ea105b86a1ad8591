//! Creates an archive of one directory with chunk sizes of the caller's
//! choice, locked with a key file: what `scripts/flat-memory.sh` needs to
//! make archives of millions of chunks from a few hundred MiB (the CLI
//! always cuts to the default sizes). Everything else is `lockbox
//! create`'s default path; only the sizes change.
//!
//! ```text
//! cargo run -p revault_lockbox_api --example chunk_archive -- ARCHIVE KEY_FILE DIR MIN AVG MAX
//! ```
//!
//! DIR is stored under its own name, as `lockbox create -C PARENT NAME`
//! would. Prints how many chunks DIR's files cut into under a fixed key:
//! the archive's own key cuts elsewhere, but as many chunks to a fraction
//! of a percent (and random content makes each one distinct).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use revault_lockbox_api::chunk::{ChunkKeys, ChunkParams, Chunker, CutPoints};
use revault_lockbox_api::keys::KeyFile;
use revault_lockbox_api::{create_archive, CreateOptions, KeySet};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [archive, key, dir, min, avg, max] = &args[..] else {
        eprintln!("usage: chunk_archive ARCHIVE KEY_FILE DIR MIN AVG MAX");
        return ExitCode::from(2);
    };
    match run(Path::new(archive), Path::new(key), Path::new(dir), [min, avg, max]) {
        Ok(chunks) => {
            println!("{chunks}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chunk_archive: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(
    archive: &Path,
    key: &Path,
    dir: &Path,
    sizes: [&String; 3],
) -> Result<u64, Box<dyn std::error::Error>> {
    let [min, avg, max] = sizes.map(|s| s.parse::<usize>());
    let params = ChunkParams::new(min?, avg?, max?)?;
    let key = KeyFile::read(key)?;
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = PathBuf::from(dir.file_name().ok_or("DIR has no name")?);
    create_archive(
        archive,
        parent,
        &[name],
        KeySet::new().key_file(&key),
        CreateOptions::new().chunk_sizes(params),
    )?;
    count_chunks(dir, params)
}

/// Chunks of the files directly in `dir` (from the smallest chunk size
/// on, as the writer chunks them), cut under a fixed key.
fn count_chunks(dir: &Path, params: ChunkParams) -> Result<u64, Box<dyn std::error::Error>> {
    let keys = ChunkKeys::from_key_bytes(&[7; 32], &[8; 16]);
    let mut chunks = 0;
    for file in std::fs::read_dir(dir)? {
        let data = std::fs::read(file?.path())?;
        if data.len() >= params.min() {
            let mut ends = CutPoints::default();
            let mut chunker = Chunker::new(&keys, params);
            chunker.feed(&data, &mut ends);
            chunker.finish(&mut ends);
            chunks += ends.0.len() as u64;
        }
    }
    Ok(chunks)
}
