//! How names are shown to people: the one owner of escaping path bytes for
//! messages, warnings, errors and listings, and of how a write session is
//! named ([`SessionName`]: by its state, as `log` numbers them).
//!
//! Stored names and file-system paths are arbitrary bytes; written raw to a
//! terminal, `ESC ] 0 ; … BEL` retitles it and `ESC [ 2 J` clears it. So
//! every name shown is quoted as `ls -b` and GNU tar do: C escapes (`\n`,
//! `\t`, `\\`, ...), octal `\ooo` for the other control bytes, for bytes
//! that are not UTF-8, and for the Unicode controls that reorder or hide
//! text (C1 controls, bidirectional overrides). Printable UTF-8 is kept.

use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Bytes shown with control bytes and invalid UTF-8 escaped.
#[derive(Clone, Copy)]
pub struct Quoted<'a>(&'a [u8]);

impl<'a> Quoted<'a> {
    /// A stored name or any byte string.
    pub fn bytes(bytes: &'a [u8]) -> Quoted<'a> {
        Quoted(bytes)
    }

    /// A file-system path.
    pub fn path(path: &'a Path) -> Quoted<'a> {
        Quoted(path.as_os_str().as_bytes())
    }
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\\' => f.write_str("\\\\")?,
                    '\x07' => f.write_str("\\a")?,
                    '\x08' => f.write_str("\\b")?,
                    '\t' => f.write_str("\\t")?,
                    '\n' => f.write_str("\\n")?,
                    '\x0b' => f.write_str("\\v")?,
                    '\x0c' => f.write_str("\\f")?,
                    '\r' => f.write_str("\\r")?,
                    c if hides_text(c) => {
                        for b in c.encode_utf8(&mut [0; 4]).bytes() {
                            write!(f, "\\{b:03o}")?;
                        }
                    }
                    c => write!(f, "{c}")?,
                }
            }
            for b in chunk.invalid() {
                write!(f, "\\{b:03o}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// Control characters (C0, DEL, C1) and the characters that reorder, hide
/// or break text on screen (every bidirectional control, the Arabic letter
/// mark among them; zero-width marks; line and paragraph separators).
fn hides_text(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{61c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// A write session as people are told of it: by the state it holds, as
/// `log` numbers states and `--session` takes them (FORMAT.md §3.7), never
/// by its session number, which counts from 0 and counts merges too. A
/// merge of index runs holds no state and is named as `log` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionName {
    /// The session's number (0 for the create; merges and compactions
    /// count).
    pub number: u32,
    /// The state it holds, from 1; `None` for a merge of index runs.
    pub state: Option<u64>,
}

impl fmt::Display for SessionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.state {
            Some(state) => write!(f, "state {state}"),
            None => write!(f, "the merge of index runs (session {})", self.number),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(bytes: &[u8]) -> String {
        Quoted::bytes(bytes).to_string()
    }

    #[test]
    fn terminal_escapes_are_quoted_like_ls_b() {
        assert_eq!(shown(b"a\x1b]0;x\x07\x1b[2J"), "a\\033]0;x\\a\\033[2J");
        assert_eq!(shown(b"tab\there\nnew\r\x7f"), "tab\\there\\nnew\\r\\177");
        assert_eq!(shown(b"back\\slash"), "back\\\\slash");
    }

    #[test]
    fn a_session_is_named_by_its_state_and_a_merge_by_its_number() {
        assert_eq!(SessionName { number: 5, state: Some(6) }.to_string(), "state 6");
        assert_eq!(
            SessionName { number: 16, state: None }.to_string(),
            "the merge of index runs (session 16)"
        );
    }

    #[test]
    fn invalid_utf8_is_octal_and_valid_utf8_is_kept() {
        assert_eq!(shown(b"caf\xc3\xa9 \xff\xfe"), "café \\377\\376");
        assert_eq!(shown("日本/ü".as_bytes()), "日本/ü");
    }

    #[test]
    fn unicode_controls_that_reorder_text_are_quoted() {
        assert_eq!(shown("a\u{202e}b".as_bytes()), "a\\342\\200\\256b");
        assert_eq!(shown("c1\u{9b}".as_bytes()), "c1\\302\\233");
    }

    /// Every character with the Unicode Bidi_Control property, and the line
    /// and paragraph separators that break a line on some terminals.
    #[test]
    fn every_bidi_control_and_line_separator_is_quoted() {
        let hiding = [
            '\u{61c}', '\u{200e}', '\u{200f}', '\u{2028}', '\u{2029}', '\u{202a}', '\u{202e}', '\u{2066}',
            '\u{2069}',
        ];
        for c in hiding {
            let text = shown(c.to_string().as_bytes());
            assert!(text.starts_with('\\') && text.is_ascii(), "U+{:04X} shown as {text:?}", c as u32);
        }
    }

    #[test]
    fn paths_quote_the_same_way() {
        use std::ffi::OsStr;
        let p = Path::new(OsStr::from_bytes(b"/tmp/x\x1b[2J"));
        assert_eq!(Quoted::path(p).to_string(), "/tmp/x\\033[2J");
    }
}
