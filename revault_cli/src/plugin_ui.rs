//! What age plugins say and ask (a hardware key's "touch your key", its
//! PIN), on the terminal: the CLI's side of the library's `PluginUi`.
//!
//! Messages go to stderr as `lockbox: age-plugin-NAME: MESSAGE`, quoted so
//! that a plugin cannot drive the terminal. Questions are asked on the
//! terminal (`/dev/tty`) whatever stdin carries, as passwords are; secrets
//! with echo off. With no terminal a question gets no answer, and the
//! plugin says what it could not do. A progress bar on screen (the
//! opening of an `s3://` archive or a mount) steps aside meanwhile.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;

use revault_lockbox_api::keys::PluginUi;
use revault_lockbox_api::{Password, Quoted};

use crate::output;
use crate::password;
use crate::progress;

/// The longest answer to a plugin's question read from the terminal.
const MAX_ANSWER_LEN: u64 = 4096;

/// The terminal, as every key given on the command line gets it.
pub fn terminal() -> Arc<dyn PluginUi> {
    Arc::new(Terminal)
}

struct Terminal;

/// A plugin's text as shown: escapes of control characters, one line.
fn shown(text: &str) -> String {
    Quoted::bytes(text.trim_end().as_bytes()).to_string()
}

/// Asks `question` on the terminal with echo on; one line, without its
/// newline. `None` with no terminal.
fn ask_public(question: &str) -> Option<String> {
    if !password::have_terminal() {
        return None;
    }
    let mut tty = File::options().read(true).write(true).open("/dev/tty").ok()?;
    write!(tty, "{question} ").ok()?;
    tty.flush().ok()?;
    let mut line = String::new();
    BufReader::new(std::io::Read::take(tty, MAX_ANSWER_LEN)).read_line(&mut line).ok()?;
    Some(line.trim_end_matches(['\n', '\r']).to_owned())
}

impl PluginUi for Terminal {
    fn message(&self, plugin: &str, message: &str) {
        progress::suspended(|| output::say(format_args!("{plugin}: {}", shown(message))));
    }

    fn confirm(&self, plugin: &str, message: &str, yes: &str, no: Option<&str>) -> Option<bool> {
        let no = no.unwrap_or("no");
        let question = format!("{plugin}: {} [{}/{}]", shown(message), shown(yes), shown(no));
        progress::suspended(|| {
            for _ in 0..3 {
                let answer = ask_public(&question)?;
                if answer.eq_ignore_ascii_case(yes) || answer.eq_ignore_ascii_case("y") {
                    return Some(true);
                }
                if answer.eq_ignore_ascii_case(no) || answer.eq_ignore_ascii_case("n") {
                    return Some(false);
                }
            }
            None
        })
    }

    fn request_public(&self, plugin: &str, message: &str) -> Option<String> {
        progress::suspended(|| ask_public(&format!("{plugin}: {}", shown(message))))
    }

    fn request_secret(&self, plugin: &str, message: &str) -> Option<Password> {
        if !password::have_terminal() {
            return None;
        }
        progress::suspended(|| password::ask(&format!("{plugin}: {}", shown(message))).ok())
    }
}
