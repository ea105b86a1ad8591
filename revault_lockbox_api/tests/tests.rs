//! The library's integration tests, in one binary: one link and one
//! process for all of them. Helpers they share are in `util`. Test files
//! that cannot share a process stand alone (see the `[[test]]` sections of
//! Cargo.toml): a `#[global_allocator]` counter, the process's own I/O
//! counters, and targets behind features.

mod util;

mod append;
mod bad_input;
mod browse;
mod diff;
mod extract_safety;
mod golden;
mod keys;
mod random_access;
mod recipient_archives;
mod retention;
mod roundtrip;
mod sessions;
