//! Generates one scenario and prints what it made, with the time taken:
//! `cargo run --release -p corpora --example generate -- mixed-tree /tmp/corpus [factor]`.
//! Without arguments, lists the scenarios.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (name, dir) = match args.as_slice() {
        [name, dir, ..] => (name, dir),
        _ => {
            for s in corpora::scenarios() {
                println!("{:<16} {:>11} bytes  {}", s.name, s.logical_bytes, s.description);
            }
            return ExitCode::SUCCESS;
        }
    };
    let factor = match args.get(2).map(|f| f.parse::<f64>()) {
        None => 1.0,
        Some(Ok(f)) => f,
        Some(Err(e)) => {
            eprintln!("bad size factor: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(scenario) = corpora::find(name) else {
        eprintln!("unknown scenario {name:?}; run without arguments to list them");
        return ExitCode::from(2);
    };
    let start = Instant::now();
    match scenario.generate(Path::new(dir), factor) {
        Ok(corpus) => {
            println!(
                "{}: {} files, {} bytes under {} in {:.2?}",
                scenario.name,
                corpus.files,
                corpus.logical_bytes,
                corpus.root.join(&corpus.inputs[0]).display(),
                start.elapsed()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("generating {name} in {dir}: {e}");
            ExitCode::FAILURE
        }
    }
}
