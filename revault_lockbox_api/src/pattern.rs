//! tar's name patterns, as GNU tar matches member names and excludes
//! against stored names: `fnmatch` with `*`, `?` and `[...]` that also
//! match `/`, `\` quoting the next character, braces literal; a match of
//! a leading part of the name counts (`FNM_LEADING_DIR`: `a/*` or `a`
//! selects `a/b/c`); unanchored patterns may match after any `/`.

use std::os::unix::ffi::OsStrExt;

use globset::{Glob, GlobBuilder, GlobMatcher};

use crate::error::{Error, Result};
use crate::format::is_within;

/// How a pattern is matched: tar's `--wildcards`/`--no-wildcards` and
/// `--anchored`/`--no-anchored`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchRules {
    /// `*`, `?`, `[...]` and `\` are special (else the pattern is a name).
    pub wildcards: bool,
    /// The pattern must match from the name's start (else after any `/`).
    pub anchored: bool,
}

impl MatchRules {
    /// GNU tar's defaults for member names: `--no-wildcards --anchored`.
    pub const MEMBERS: MatchRules = MatchRules { wildcards: false, anchored: true };
    /// GNU tar's defaults for excludes: `--wildcards --no-anchored`.
    pub const EXCLUDES: MatchRules = MatchRules { wildcards: true, anchored: false };
}

/// One pattern, as given and as compiled.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    given: Vec<u8>,
    body: Body,
    anchored: bool,
}

#[derive(Debug, Clone)]
enum Body {
    Literal(Vec<u8>),
    Glob(GlobMatcher),
}

impl Pattern {
    /// `given` (spelled as stored names are: no leading `./`, no trailing
    /// `/`) under `rules`; [`Error::BadPattern`] when it does not parse or
    /// holds wildcards and is not UTF-8.
    pub(crate) fn new(given: &[u8], rules: MatchRules) -> Result<Pattern> {
        let spelled = spelling(given);
        let wild = rules.wildcards && spelled.iter().any(|b| b"*?[\\".contains(b));
        let body = if wild {
            let bad =
                |reason: String| Error::BadPattern { pattern: String::from_utf8_lossy(given).into(), reason };
            let text = std::str::from_utf8(spelled).map_err(|_| bad("not UTF-8".into()))?;
            Body::Glob(tar_glob(text).map_err(|e| bad(e.kind().to_string()))?.compile_matcher())
        } else {
            Body::Literal(spelled.to_vec())
        };
        Ok(Pattern { given: given.to_vec(), body, anchored: rules.anchored })
    }

    /// The pattern as the caller gave it.
    pub(crate) fn given(&self) -> &[u8] {
        &self.given
    }

    /// The one subtree all of its matches lie in, when it is anchored: the
    /// name itself, or a pattern's directories before its first wildcard
    /// (`src/a*/*.c`: `src`). None: it may match anywhere.
    pub(crate) fn subtree(&self) -> Option<&[u8]> {
        if !self.anchored {
            return None;
        }
        match &self.body {
            Body::Literal(name) => Some(name),
            Body::Glob(g) => {
                let text = g.glob().glob().as_bytes();
                let first_wild = text.iter().position(|b| b"*?[\\".contains(b)).unwrap_or(text.len());
                text[..first_wild].iter().rposition(|&b| b == b'/').map(|slash| &text[..slash])
            }
        }
    }

    /// Whether the name is a literal one (matched by lookups alone).
    pub(crate) fn is_literal(&self) -> bool {
        matches!(self.body, Body::Literal(_))
    }

    /// Whether the stored name `name` matches: the whole name or a leading
    /// part of it ending before a `/`; unanchored, also any tail of it
    /// starting after a `/`.
    pub(crate) fn matches(&self, name: &[u8]) -> bool {
        if self.matches_leading(name) {
            return true;
        }
        !self.anchored
            && name.iter().enumerate().any(|(i, &b)| b == b'/' && self.matches_leading(&name[i + 1..]))
    }

    fn matches_leading(&self, name: &[u8]) -> bool {
        match &self.body {
            Body::Literal(literal) => is_within(literal, name),
            Body::Glob(glob) => {
                let is = |part: &[u8]| glob.is_match(std::ffi::OsStr::from_bytes(part));
                is(name) || name.iter().enumerate().any(|(i, &b)| b == b'/' && is(&name[..i]))
            }
        }
    }
}

/// `pattern` as tar's `fnmatch` reads it: `*`, `?` and `[...]` also match
/// `/`, `\` quotes the next character, and braces are literal.
pub(crate) fn tar_glob(pattern: &str) -> std::result::Result<Glob, globset::Error> {
    let literal_braces = pattern.replace('{', "[{]").replace('}', "[}]");
    GlobBuilder::new(&literal_braces).literal_separator(false).backslash_escape(true).build()
}

/// A name as stored names spell it: without leading `./` and trailing `/`
/// (a lone `/` stays, and matches nothing).
pub(crate) fn spelling(mut path: &[u8]) -> &[u8] {
    while path.len() > 1 && path.ends_with(b"/") {
        path = &path[..path.len() - 1];
    }
    while let Some(rest) = path.strip_prefix(b"./") {
        path = rest;
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, rules: MatchRules, name: &str) -> bool {
        Pattern::new(pattern.as_bytes(), rules).unwrap().matches(name.as_bytes())
    }
    const WILD: MatchRules = MatchRules { wildcards: true, anchored: true };

    #[test]
    fn members_match_as_gnu_tar_matches_them() {
        let members = MatchRules::MEMBERS;
        assert!(m("tree/sub", members, "tree/sub/deep/d.c") && !m("tree/sub", members, "tree/subx"));
        assert!(!m("tree/s*", members, "tree/sub"), "no wildcards by default");
        assert!(m("tree/s*", WILD, "tree/sub") && m("tree/*.c", WILD, "tree/src/e.c"), "* crosses /");
        assert!(m("tree/s?b", WILD, "tree/sub/c.txt"), "a leading directory matches");
        assert!(!m("*.c", WILD, "x.c.d") && m("*.c", WILD, "x.c/d"));
        assert!(!m("sub", members, "tree/sub"), "anchored");
        let loose = MatchRules { wildcards: false, anchored: false };
        assert!(m("sub/c.txt", loose, "tree/sub/c.txt") && !m("ub/c.txt", loose, "tree/sub/c.txt"));
        assert!(m("./tree/", members, "tree/a") && m("{a}", WILD, "{a}") && m("\\*", WILD, "*"));
    }

    #[test]
    fn excludes_and_subtrees() {
        let ex = MatchRules::EXCLUDES;
        assert!(m("sub", ex, "tree/sub/b.log") && m("*.c", ex, "tree/src/e.c"));
        assert!(m("sub/*", ex, "tree/sub/b.log") && !m("sub/*", ex, "tree/sub"));
        let root = |p: &str, r| Pattern::new(p.as_bytes(), r).unwrap().subtree().map(<[u8]>::to_vec);
        assert_eq!(root("src/a*/*.c", WILD), Some(b"src".to_vec()));
        assert_eq!(root("src/x", MatchRules::MEMBERS), Some(b"src/x".to_vec()));
        assert_eq!(root("*.c", WILD), None);
        assert_eq!(root("src", ex), None);
        let err = Pattern::new(b"[abc", ex).unwrap_err();
        assert!(err.to_string().contains("[abc"), "{err}");
        assert!(Pattern::new(b"a\xff*", ex).is_err() && Pattern::new(b"a\xff", MatchRules::MEMBERS).is_ok());
    }
}
