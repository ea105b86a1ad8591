//! Where the password comes from: a file, the environment, or the terminal.
//!
//! Each source's bytes go into a [`Password`] as soon as they are read, so
//! they are wiped on drop; nothing here prints a password.

use std::io::IsTerminal;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use anyhow::{Context, Result};
use revault_lockbox_api::{Password, Quoted};

use crate::UsageError;

/// The environment variable holding the password.
pub const ENV_VAR: &str = "LOCKBOX_PASSWORD";
/// The environment variable holding a new password (`passwd`, `key add`).
pub const NEW_ENV_VAR: &str = "LOCKBOX_NEW_PASSWORD";

/// Whether the password protects a new archive (asked twice, never empty)
/// or opens an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Create,
    Open,
}

/// Gets the password: `file` (first line), then `$LOCKBOX_PASSWORD`, then a
/// no-echo prompt when stdin is a terminal.
pub fn get(file: Option<&Path>, purpose: Purpose) -> Result<Password> {
    from(file, ENV_VAR, purpose)
}

/// Gets a new password: `file`, then `$LOCKBOX_NEW_PASSWORD`, then a prompt
/// asked twice; never empty.
pub fn get_new(file: Option<&Path>) -> Result<Password> {
    from(file, NEW_ENV_VAR, Purpose::Create)
}

fn from(file: Option<&Path>, env_var: &str, purpose: Purpose) -> Result<Password> {
    let password = if let Some(path) = file {
        let bytes =
            std::fs::read(path).with_context(|| format!("reading password file {}", Quoted::path(path)))?;
        Password::new(first_line(bytes))
    } else if let Some(value) = std::env::var_os(env_var) {
        Password::new(value.into_vec())
    } else if std::io::stdin().is_terminal() {
        return prompt(purpose);
    } else {
        return Err(
            UsageError(format!("no password: use a password file, {env_var}, or run on a terminal")).into()
        );
    };
    if password.is_empty() && purpose == Purpose::Create {
        return Err(UsageError("refusing an empty password".into()).into());
    }
    Ok(password)
}

/// The first line of `bytes`, without its `\n` or `\r\n`. Truncates in
/// place rather than copying: `Password` wipes the whole allocation on drop,
/// the cut-off rest included.
fn first_line(mut bytes: Vec<u8>) -> Vec<u8> {
    let end = bytes.iter().position(|&b| b == b'\n').unwrap_or(bytes.len());
    let end = if end > 0 && bytes[end - 1] == b'\r' { end - 1 } else { end };
    bytes.truncate(end);
    bytes
}

fn prompt(purpose: Purpose) -> Result<Password> {
    let first = rpassword::prompt_password("Password: ").context("reading the password from the terminal")?;
    if purpose == Purpose::Open {
        return Ok(Password::from(first));
    }
    let second =
        rpassword::prompt_password("Repeat password: ").context("reading the password from the terminal")?;
    let (password, repeat) = (Password::from(first), Password::from(second));
    if !password.ct_eq(&repeat) {
        return Err(UsageError("the passwords do not match".into()).into());
    }
    if password.is_empty() {
        return Err(UsageError("refusing an empty password".into()).into());
    }
    Ok(password)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_line_strips_line_endings() {
        assert_eq!(first_line(b"secret\n".to_vec()), b"secret");
        assert_eq!(first_line(b"secret\r\nmore\n".to_vec()), b"secret");
        assert_eq!(first_line(b"no newline".to_vec()), b"no newline");
        assert_eq!(first_line(b" spaces kept \n".to_vec()), b" spaces kept ");
        assert_eq!(first_line(b"\n".to_vec()), b"");
        assert_eq!(first_line(b"\xff\xfe\n".to_vec()), b"\xff\xfe");
    }
}
