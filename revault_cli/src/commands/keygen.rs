//! `keygen`: a new age identity (or, `--symmetric`, a key file), written to
//! a file of mode 0600 (never over an existing one) or stdout, and its
//! recipient printed. `--sign` keys are `keygen_sign`'s.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use anyhow::{Context, Result};
use revault_lockbox_api::keys::KeyFile;
use revault_lockbox_api::Quoted;

use super::Outcome;
use crate::flags::KeygenArgs;
use crate::output;

pub fn run(a: KeygenArgs) -> Result<Outcome> {
    if a.sign {
        return super::keygen_sign::run(a);
    }
    let (identity, recipient) = if a.symmetric {
        let key = KeyFile::generate().context("generating a key")?;
        (key.to_text(), String::new())
    } else {
        revault_lockbox_api::keys::keygen(a.pq).context("generating an identity")?
    };
    match &a.output {
        Some(path) => {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .with_context(|| format!("creating {}", Quoted::path(path)))?;
            file.write_all(identity.as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing {}", Quoted::path(path)))?;
            if !a.symmetric {
                output::line(&recipient);
            }
        }
        None => {
            output::raw(identity.as_bytes())?;
            if !a.symmetric {
                eprintln!("Public key: {recipient}");
            }
        }
    }
    Ok(Outcome::Success)
}
