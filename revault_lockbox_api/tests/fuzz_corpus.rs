//! Replays the fuzz corpora (`fuzz/corpus/<target>/`) and the crash
//! reproductions (`fuzz/regressions/<target>/`, each named after what broke)
//! through the fuzz entry points, so that every input a fuzzer kept, and
//! every bug it found, is checked by `cargo test` without a fuzzer.

use std::fs;
use std::path::{Path, PathBuf};

use revault_lockbox_api::fuzz;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The regular files in `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        read.map(|e| e.expect("reading a corpus dir").path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

/// Runs `target` on every seed (there must be some) and every regression.
fn replay(name: &str, target: fn(&[u8])) {
    let seeds = files(&fuzz_dir().join("corpus").join(name));
    assert!(!seeds.is_empty(), "fuzz/corpus/{name}/ is missing or empty");
    let regressions = files(&fuzz_dir().join("regressions").join(name));
    for path in seeds.iter().chain(&regressions) {
        let data = fs::read(path).expect("reading a corpus file");
        if let Err(panic) = std::panic::catch_unwind(|| target(&data)) {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            panic!("fuzz::{name} panicked on {}: {message}", path.display());
        }
    }
}

#[test]
fn header_corpus() {
    replay("header", fuzz::header);
}

#[test]
fn key_slots_corpus() {
    replay("key_slots", fuzz::key_slots);
}

#[test]
fn trailer_corpus() {
    replay("trailer", fuzz::trailer);
}

#[test]
fn recovery_footer_corpus() {
    replay("recovery_footer", fuzz::recovery_footer);
}

#[test]
fn index_corpus() {
    replay("index", fuzz::index);
}

#[test]
fn page_corpus() {
    replay("page", fuzz::page);
}

#[test]
fn archive_corpus() {
    replay("archive", fuzz::archive);
}

#[test]
fn recipient_slot_corpus() {
    replay("recipient_slot", fuzz::recipient_slot);
}

#[test]
fn slot_table_corpus() {
    replay("slot_table", fuzz::slot_table);
}

#[test]
fn sealed_corpus() {
    replay("sealed", fuzz::sealed);
}

#[test]
fn session_header_corpus() {
    replay("session_header", fuzz::session_header);
}

#[test]
fn frame_corpus() {
    replay("frame", fuzz::frame);
}

#[test]
fn signature_block_corpus() {
    replay("signature_block", fuzz::signature_block);
}

#[test]
fn sessions_corpus() {
    replay("sessions", fuzz::sessions);
}

#[test]
fn salvage_corpus() {
    replay("salvage", fuzz::salvage);
}
