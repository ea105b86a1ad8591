//! `cargo run --release -p pgp_compare -- ...`: the harness (`src/lib.rs`).

use std::process::ExitCode;

fn main() -> ExitCode {
    pgp_compare::main("cargo run --release -p pgp_compare --", std::env::args().skip(1).collect())
}
