//! `cargo bench -p revault_lockbox_api --bench pgp_compare -- ARGS`, the
//! seed's command for the harness: the code of `cargo run --release -p
//! pgp_compare -- ARGS` (benches/pgp_compare), the same table.

use std::process::ExitCode;

fn main() -> ExitCode {
    pgp_compare::main_as_cargo_bench()
}
