//! Files of trusted signers (`--signers FILE`), read as ssh's
//! `allowed_signers` is: one signer a line, `#` comment lines and blank
//! lines ignored, a bad line an error naming the file and its number. A
//! line is a fingerprint (`lbsig1…`), a public key's line as its `.pub`
//! file holds it (`LOCKBOX-SIGNING-PUBLIC-KEY-1 …`, pasted inline as ssh
//! keys are), or the path of a `.pub` file, relative to the signers file's
//! directory (so a directory of keys moves with its list). docs/KEYS.md,
//! "Trusted signers files", is the user's description.

use std::path::Path;

use super::file::PUBLIC_PREFIX;
use super::{Fingerprint, VerifyingKey};
use crate::keys::KeyError;
use crate::quote::Quoted;

/// Parses a signers file's `text`; `source_name` names it in errors,
/// which give the 1-based line number; `base` is the directory relative
/// `.pub` paths start from. A file naming no signer is an error.
pub fn parse_signers(text: &str, source_name: &str, base: &Path) -> Result<Vec<Fingerprint>, KeyError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |reason: String| KeyError::SignersFile {
            source_name: source_name.to_owned(),
            line: i + 1,
            reason,
        };
        out.push(parse_line(line, base).map_err(bad)?);
    }
    if out.is_empty() {
        return Err(KeyError::Empty(source_name.to_owned()));
    }
    Ok(out)
}

/// Reads a signers file (at most 1 MiB, UTF-8); see [`parse_signers`].
pub fn read_signers_file(path: &Path) -> Result<Vec<Fingerprint>, KeyError> {
    let io = |source| KeyError::Io { path: path.to_owned(), source };
    let text = crate::keys::recipient::read_limited(path).map_err(io)?;
    let source_name = Quoted::path(path).to_string();
    let text = String::from_utf8(text).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count();
        KeyError::SignersFile { source_name: source_name.clone(), line, reason: "not UTF-8 text".into() }
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse_signers(&text, &source_name, base)
}

/// One signer line: a fingerprint, an inline public key, or a `.pub` path.
fn parse_line(line: &str, base: &Path) -> Result<Fingerprint, String> {
    if line.starts_with(PUBLIC_PREFIX) {
        return VerifyingKey::parse_file(line.as_bytes()).map(|k| k.fingerprint()).map_err(|e| e.to_string());
    }
    if line.starts_with("lbsig1") {
        // A path that happens to start so is named `./lbsig1…`.
        return line.parse::<Fingerprint>().map_err(|e| e.to_string());
    }
    let path = base.join(line);
    match VerifyingKey::read_file(&path) {
        Ok(key) => Ok(key.fingerprint()),
        Err(KeyError::Io { source, .. }) => Err(format!("reading {}: {source}", Quoted::path(&path))),
        Err(e) => Err(format!("{}: {e} (a line is lbsig1…, a key line or a .pub file)", Quoted::path(&path))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::SigningKey;

    #[test]
    fn fingerprints_inline_keys_and_relative_pub_files_with_comments_and_blanks() {
        let dir = tempfile::TempDir::new().unwrap();
        let (a, b, c) = (
            SigningKey::generate().unwrap(),
            SigningKey::generate().unwrap(),
            SigningKey::generate().unwrap(),
        );
        std::fs::create_dir(dir.path().join("keys")).unwrap();
        std::fs::write(dir.path().join("keys/c.pub"), c.verifying_key().to_file_text()).unwrap();
        let b_line = b.verifying_key().to_file_text().lines().last().unwrap().to_owned();
        let text = format!("# alice\n{}\n\n  # bob, pasted\n{b_line}\r\nkeys/c.pub\n", a.fingerprint());
        std::fs::write(dir.path().join("signers"), &text).unwrap();
        let read = read_signers_file(&dir.path().join("signers")).unwrap();
        assert_eq!(read, [a.fingerprint(), b.fingerprint(), c.fingerprint()]);
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_number_and_an_empty_file_is_refused() {
        let base = Path::new("/nonexistent");
        let good = SigningKey::generate().unwrap().fingerprint();
        for (text, line, says) in [
            (format!("{good}\n\nlbsig1qqqq\n"), 3, "invalid signer fingerprint"),
            (format!("# c\n{PUBLIC_PREFIX}AAAA\n"), 2, "invalid signing public key"),
            ("missing.pub\n".to_owned(), 1, "/nonexistent/missing.pub"),
        ] {
            let err = parse_signers(&text, "list", base).unwrap_err().to_string();
            assert!(err.starts_with(&format!("list, line {line}: ")), "{err}");
            assert!(err.contains(says), "{err}");
        }
        assert!(matches!(parse_signers("# none\n\n", "list", base), Err(KeyError::Empty(_))));
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("signers");
        std::fs::write(&path, [format!("{good}\n").as_bytes(), b"\xff\n"].concat()).unwrap();
        let err = read_signers_file(&path).unwrap_err().to_string();
        assert!(err.ends_with("line 2: not UTF-8 text"), "{err}");
        let big = vec![b'#'; crate::keys::MAX_KEY_FILE_LEN as usize + 1];
        std::fs::write(&path, big).unwrap();
        assert!(matches!(read_signers_file(&path), Err(KeyError::Io { .. })));
    }
}
