//! Pseudo-English text and source code that compresses like the real thing.
//!
//! Archivers are judged mostly on prose, source and logs; pure random data
//! hides compression cost and repeated filler hides everything else. Words
//! are drawn from a fixed vocabulary with Zipf-like frequencies (rank r has
//! weight 1/(r+3)), which gives zstd the mix of short matches and skewed
//! literals it sees in real text. The default mix (about three quarters prose,
//! a quarter Rust-like code) compresses with `zstd -3` to about a third.
//!
//! The output depends only on the seed and flavour: it is produced in whole
//! blocks (a paragraph, a code item, a run of log lines) and cut at the
//! requested length, so a shorter stream is a prefix of a longer one.

use std::fmt;
use std::io::{self, Read};

use crate::Rng;

/// Common English words, most frequent first (rank decides frequency).
pub(crate) const WORDS: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on", "are", "with",
    "as", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by", "hot", "word", "but",
    "what", "some", "we", "can", "out", "other", "were", "all", "there", "when", "up", "use", "your", "how",
    "said", "an", "each", "she", "which", "do", "their", "time", "if", "will", "way", "about", "many",
    "then", "them", "write", "would", "like", "so", "these", "her", "long", "make", "thing", "see", "him",
    "two", "has", "look", "more", "day", "could", "go", "come", "did", "number", "sound", "no", "most",
    "people", "my", "over", "know", "water", "than", "call", "first", "who", "may", "down", "side", "been",
    "now", "find", "any", "new", "work", "part", "take", "get", "place", "made", "live", "where", "after",
    "back", "little", "only", "round", "man", "year", "came", "show", "every", "good", "me", "give", "our",
    "under", "name", "very", "through", "just", "form", "sentence", "great", "think", "say", "help", "low",
    "line", "differ", "turn", "cause", "much", "mean", "before", "move", "right", "boy", "old", "too",
    "same", "tell", "does", "set", "three", "want", "air", "well", "also", "play", "small", "end", "put",
    "home", "read", "hand", "port", "large", "spell", "add", "even", "land", "here", "must", "big", "high",
    "such", "follow", "act", "why", "ask", "men", "change", "went", "light", "kind", "off", "need", "house",
    "picture", "try", "us", "again", "animal", "point", "mother", "world", "near", "build", "self", "earth",
    "father", "head", "stand", "own", "page", "should", "country", "found", "answer", "school", "grow",
    "study", "still", "learn", "plant", "cover", "food", "sun", "four", "between", "state", "keep", "eye",
    "never", "last", "let", "thought", "city", "tree", "cross", "farm", "hard", "start", "might", "story",
    "saw", "far", "sea", "draw", "left", "late", "run", "while", "press", "close", "night", "real", "life",
    "few", "north", "open", "seem", "together", "next", "white", "children", "begin", "got", "walk",
    "example", "ease", "paper", "group", "always", "music", "those", "both", "mark", "often", "letter",
    "until", "mile", "river", "car", "feet", "care", "second", "book", "carry", "took", "science", "eat",
    "room", "friend", "began", "idea", "fish", "mountain", "stop", "once", "base", "hear", "horse", "cut",
    "sure", "watch", "color", "face", "wood", "main", "enough", "plain", "girl", "usual", "young", "ready",
    "above", "ever", "red", "list", "though", "feel", "talk", "bird", "soon", "body", "dog", "family",
    "direct", "pose", "leave", "song", "measure", "door", "product", "black", "short", "numeral", "class",
    "wind", "question", "happen", "complete", "ship", "area", "half", "rock", "order", "fire", "south",
    "problem", "piece", "told", "knew", "pass", "since", "top", "whole", "king", "space", "heard", "best",
    "hour", "better", "true", "during", "hundred", "five", "remember", "step", "early", "hold", "west",
    "ground", "interest", "reach", "fast", "verb", "sing", "listen", "six", "table", "travel", "less",
    "morning", "ten", "simple", "several", "vowel", "toward", "war", "lay", "against", "pattern", "slow",
    "center", "love", "person", "money", "serve", "appear", "road", "map", "rain", "rule", "govern", "pull",
    "cold", "notice", "voice", "unit", "power", "town", "fine", "certain", "fly", "fall", "lead", "cry",
    "dark", "machine", "note", "wait", "plan", "figure", "star", "box", "noun", "field", "rest", "correct",
    "able", "pound", "done", "beauty", "drive", "stood", "contain", "front", "teach", "week", "final",
    "gave", "green", "quick", "develop", "ocean", "warm", "free", "minute", "strong", "special", "mind",
    "behind", "clear", "tail", "produce", "fact", "street", "inch", "multiply", "nothing", "course", "stay",
    "wheel", "full", "force", "blue", "object", "decide", "surface", "deep", "moon", "island", "foot",
    "system", "busy", "test", "record", "boat", "common", "gold", "possible", "plane", "dry", "wonder",
    "laugh", "thousand", "ago", "ran", "check", "game", "shape", "equate", "miss", "brought", "heat", "snow",
    "tire", "bring", "yes", "distant", "fill", "east", "paint", "language", "among",
];

/// Rust-ish types for code lines.
const TYPES: &[&str] = &[
    "u8",
    "u16",
    "u32",
    "u64",
    "usize",
    "i32",
    "i64",
    "bool",
    "String",
    "Vec<u8>",
    "&str",
    "&[u8]",
    "Option<u64>",
    "Option<String>",
    "Result<(), Error>",
    "Result<usize>",
    "Self",
    "PathBuf",
    "Duration",
    "HashMap<String, u64>",
    "Box<dyn Read>",
    "&mut Vec<u8>",
];

/// Comparison and arithmetic operators for code lines.
const OPS: &[&str] = &[">", "<", "==", "!=", ">=", "<="];

/// Log message templates; `#` is replaced by a number, `@` by a word.
const LOG_MESSAGES: &[&str] = &[
    "request completed in # ms",
    "opened @ page # of #",
    "cache hit for key @_#",
    "cache miss for key @_#, loading from disk",
    "retrying @ after # ms (attempt #)",
    "connection from 10.0.#.# accepted",
    "connection closed by peer after # bytes",
    "flushed # records to @",
    "checkpoint # written",
    "slow query on table @ took # ms",
    "user # logged in",
    "scheduled job @ finished with status #",
    "worker # idle",
    "received # bytes from upstream @",
    "config reloaded: # keys changed",
    "heartbeat ok",
];

/// Module names for log lines (a small fixed set, like a real service).
const LOG_MODULES: &[&str] = &[
    "server::http",
    "server::auth",
    "store::pages",
    "store::index",
    "cache",
    "jobs::runner",
    "net::pool",
    "config",
];

const LOG_LEVELS: &[(&str, u64)] = &[("INFO ", 80), ("DEBUG", 12), ("WARN ", 6), ("ERROR", 2)];

/// Stock phrases per stream; prose uses one instead of a word
/// [`PHRASE_PERCENT`] percent of the time.
const PHRASES: usize = 128;
const PHRASE_PERCENT: u64 = 25;

/// Identifiers per stream, picked with the same skew as words.
const IDENTS: usize = 256;

/// Size of the word-sampling table: 14 bits of a random word pick a rank.
const ZIPF_BITS: u32 = 14;
const ZIPF_SLOTS: usize = 1 << ZIPF_BITS;

/// Maps a uniform 14-bit value to a word rank with weight 1/(rank+3),
/// computed at compile time with integer arithmetic only.
static ZIPF: [u16; ZIPF_SLOTS] = zipf_table();

const fn zipf_table() -> [u16; ZIPF_SLOTS] {
    const SCALE: u64 = 1 << 40;
    let n = WORDS.len();
    let mut total = 0u64;
    let mut i = 0;
    while i < n {
        total += SCALE / (i as u64 + 3);
        i += 1;
    }
    let mut table = [0u16; ZIPF_SLOTS];
    let mut rank = 0;
    // Cumulative weight up to and including `rank`.
    let mut cum = SCALE / 3;
    let mut slot = 0;
    while slot < ZIPF_SLOTS {
        // Midpoint of the slot, in weight units.
        let target = ((2 * slot as u128 + 1) * total as u128 / (2 * ZIPF_SLOTS as u128)) as u64;
        while cum <= target && rank + 1 < n {
            rank += 1;
            cum += SCALE / (rank as u64 + 3);
        }
        table[slot] = rank as u16;
        slot += 1;
    }
    table
}

/// Kinds of text, from very redundant (logs) to dense (tables of ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// Mostly prose with some code: what [`TextReader::new`] makes.
    Mixed,
    /// Paragraphs, headings and lists.
    Prose,
    /// Rust-like code with comment blocks.
    Source,
    /// Timestamped log lines from a few templates: very redundant.
    Log,
    /// CSV rows with numbers and hex ids: dense.
    Table,
}

/// An [`io::Read`] that yields exactly `len` bytes of pseudo-English text:
/// sentences from a built-in vocabulary with Zipf-like word frequencies,
/// punctuation, paragraphs, headings, lists and some Rust-like code.
///
/// Compresses with `zstd -3` to roughly a third of its size, like real prose
/// and source. The bytes depend only on `seed`; a shorter stream is a prefix
/// of a longer one with the same seed.
pub struct TextReader {
    gen: TextGen,
    remaining: u64,
    block: Vec<u8>,
    pos: usize,
}

impl TextReader {
    /// Creates a reader of `len` bytes of text from `seed`.
    pub fn new(seed: u64, len: u64) -> Self {
        Self::with_flavor(seed, len, Flavor::Mixed)
    }

    pub(crate) fn with_flavor(seed: u64, len: u64, flavor: Flavor) -> Self {
        TextReader {
            gen: TextGen::new(seed, flavor),
            remaining: len,
            block: Vec::with_capacity(4096),
            pos: 0,
        }
    }

    /// Bytes left to read.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }
}

impl fmt::Debug for TextReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TextReader")
            .field("flavor", &self.gen.flavor)
            .field("remaining", &self.remaining)
            .finish_non_exhaustive()
    }
}

impl Read for TextReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let want = (out.len() as u64).min(self.remaining) as usize;
        let mut done = 0;
        while done < want {
            if self.pos == self.block.len() {
                self.block.clear();
                self.pos = 0;
                self.gen.block(&mut self.block);
            }
            let n = (want - done).min(self.block.len() - self.pos);
            out[done..done + n].copy_from_slice(&self.block[self.pos..self.pos + n]);
            done += n;
            self.pos += n;
        }
        self.remaining -= want as u64;
        Ok(want)
    }
}

/// Produces text one block at a time. Every block is non-empty.
struct TextGen {
    rng: Rng,
    flavor: Flavor,
    /// Log clock in milliseconds since the Unix epoch.
    clock_ms: u64,
    /// Whether the CSV header has been written.
    header_done: bool,
    /// Stock phrases of this stream, reused like collocations in real text.
    phrases: Bank,
    /// Identifiers of this stream: code reuses names, as real code does.
    idents: Bank,
}

/// Short byte strings in one allocation (trees make many small streams).
#[derive(Default)]
struct Bank {
    text: Vec<u8>,
    ends: Vec<usize>,
}

impl Bank {
    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    fn end_item(&mut self) {
        self.ends.push(self.text.len());
    }
}

impl TextGen {
    fn new(seed: u64, flavor: Flavor) -> Self {
        let mut rng = Rng::new(seed);
        // Somewhere in 2021-2024.
        let clock_ms = (1_609_459_200 + rng.below(4 * 365 * 86_400)) * 1000;
        let mut gen = TextGen {
            rng,
            flavor,
            clock_ms,
            header_done: false,
            phrases: Bank::default(),
            idents: Bank::default(),
        };
        for _ in 0..IDENTS {
            let word = gen.name_word();
            gen.idents.text.extend_from_slice(word.as_bytes());
            if gen.rng.chance(1, 2) {
                let word = gen.name_word();
                gen.idents.text.push(b'_');
                gen.idents.text.extend_from_slice(word.as_bytes());
            }
            gen.idents.end_item();
        }
        for _ in 0..PHRASES {
            for w in 0..2 + gen.rng.below(3) {
                if w > 0 {
                    gen.phrases.text.push(b' ');
                }
                let word = gen.word();
                gen.phrases.text.extend_from_slice(word.as_bytes());
            }
            gen.phrases.end_item();
        }
        gen
    }

    fn block(&mut self, out: &mut Vec<u8>) {
        match self.flavor {
            Flavor::Mixed => match self.rng.below(100) {
                0..=65 => self.paragraph(out, b""),
                66..=71 => self.heading(out),
                72..=77 => self.list(out),
                _ => self.code(out),
            },
            Flavor::Prose => match self.rng.below(100) {
                0..=79 => self.paragraph(out, b""),
                80..=87 => self.heading(out),
                _ => self.list(out),
            },
            Flavor::Source => match self.rng.below(100) {
                0..=14 => self.paragraph(out, b"/// "),
                15..=19 => self.paragraph(out, b"// "),
                _ => self.code(out),
            },
            Flavor::Log => self.log_lines(out),
            Flavor::Table => self.table_rows(out),
        }
    }

    #[inline]
    fn word(&mut self) -> &'static str {
        let slot = (self.rng.next_u64() >> (64 - ZIPF_BITS)) as usize;
        WORDS[usize::from(ZIPF[slot])]
    }

    /// A word picked uniformly, for names (rarer words make better names).
    fn name_word(&mut self) -> &'static str {
        self.rng.pick(WORDS)
    }

    fn ident(&mut self, out: &mut Vec<u8>) {
        let slot = (self.rng.next_u64() >> (64 - ZIPF_BITS)) as usize;
        out.extend_from_slice(self.idents.get(usize::from(ZIPF[slot]) % IDENTS));
    }

    fn camel(&mut self, out: &mut Vec<u8>) {
        for _ in 0..1 + self.rng.below(2) {
            push_capitalized(out, self.name_word());
        }
    }

    fn number(&mut self, out: &mut Vec<u8>) {
        let n = match self.rng.below(4) {
            0 => self.rng.below(10),
            1 | 2 => self.rng.below(1000),
            _ => self.rng.below(100_000),
        };
        push_u64(out, n);
    }

    /// A paragraph of 2-6 sentences wrapped at 76 columns; every line
    /// starts with `prefix` (for doc comments).
    fn paragraph(&mut self, out: &mut Vec<u8>, prefix: &[u8]) {
        const WIDTH: usize = 76;
        let mut line_start = out.len();
        out.extend_from_slice(prefix);
        let mut fresh_line = true;
        let sentences = 2 + self.rng.below(5);
        let mut word = Vec::with_capacity(32);
        for _ in 0..sentences {
            let words = 4 + self.rng.below(15);
            for k in 0..words {
                word.clear();
                let roll = self.rng.below(60);
                if roll == 0 {
                    self.number(&mut word);
                } else if roll == 1 {
                    word.push(b'`');
                    self.ident(&mut word);
                    word.push(b'`');
                } else if roll < 2 + PHRASE_PERCENT * 60 / 100 {
                    let i = self.rng.below(PHRASES as u64) as usize;
                    word.extend_from_slice(self.phrases.get(i));
                    if k == 0 {
                        word[0] = word[0].to_ascii_uppercase();
                    }
                } else if k == 0 {
                    push_capitalized(&mut word, self.word());
                } else {
                    word.extend_from_slice(self.word().as_bytes());
                }
                if k + 1 == words {
                    word.push(self.rng.pick(b"....?!:"));
                } else if self.rng.chance(1, 10) {
                    word.push(b',');
                }
                if !fresh_line && out.len() - line_start + 1 + word.len() > WIDTH {
                    out.push(b'\n');
                    line_start = out.len();
                    out.extend_from_slice(prefix);
                    fresh_line = true;
                }
                if !fresh_line {
                    out.push(b' ');
                }
                out.extend_from_slice(&word);
                fresh_line = false;
            }
        }
        out.extend_from_slice(b"\n\n");
    }

    fn heading(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&b"### "[..2 + self.rng.below(3) as usize]);
        out.push(b' ');
        push_capitalized(out, self.word());
        for _ in 0..1 + self.rng.below(4) {
            out.push(b' ');
            out.extend_from_slice(self.word().as_bytes());
        }
        out.extend_from_slice(b"\n\n");
    }

    fn list(&mut self, out: &mut Vec<u8>) {
        for _ in 0..2 + self.rng.below(5) {
            out.extend_from_slice(b"- ");
            push_capitalized(out, self.word());
            for _ in 0..2 + self.rng.below(8) {
                out.push(b' ');
                out.extend_from_slice(self.word().as_bytes());
            }
            out.push(b'\n');
        }
        out.push(b'\n');
    }

    fn expr(&mut self, out: &mut Vec<u8>) {
        match self.rng.below(8) {
            0 => self.number(out),
            1 => {
                self.ident(out);
                out.push(b'(');
                self.ident(out);
                out.push(b')');
            }
            2 => {
                self.ident(out);
                out.push(b'.');
                self.ident(out);
                out.extend_from_slice(b"()");
            }
            3 => {
                out.push(b'"');
                out.extend_from_slice(self.word().as_bytes());
                out.push(b' ');
                out.extend_from_slice(self.word().as_bytes());
                out.push(b'"');
            }
            4 => {
                self.ident(out);
                out.extend_from_slice(b" * ");
                self.number(out);
                out.extend_from_slice(b" + ");
                self.ident(out);
            }
            5 => {
                out.extend_from_slice(b"Vec::with_capacity(");
                self.number(out);
                out.push(b')');
            }
            6 => {
                out.extend_from_slice(b"0x");
                push_hex(out, self.rng.next_u64() & 0xffff_ffff, 8);
            }
            _ => {
                self.camel(out);
                out.extend_from_slice(b"::new(");
                self.ident(out);
                out.extend_from_slice(b")?");
            }
        }
    }

    fn indent(out: &mut Vec<u8>, depth: usize) {
        for _ in 0..depth {
            out.extend_from_slice(b"    ");
        }
    }

    /// One Rust-like item: a function or a struct.
    fn code(&mut self, out: &mut Vec<u8>) {
        if self.rng.chance(1, 5) {
            out.extend_from_slice(b"#[derive(Debug, Clone)]\npub struct ");
            self.camel(out);
            out.extend_from_slice(b" {\n");
            for _ in 0..2 + self.rng.below(7) {
                out.extend_from_slice(b"    pub ");
                self.ident(out);
                out.extend_from_slice(b": ");
                out.extend_from_slice(self.rng.pick(TYPES).as_bytes());
                out.extend_from_slice(b",\n");
            }
            out.extend_from_slice(b"}\n\n");
            return;
        }
        if self.rng.chance(1, 4) {
            out.extend_from_slice(b"#[test]\nfn ");
            self.ident(out);
            out.extend_from_slice(b"() {\n");
        } else {
            if self.rng.chance(1, 2) {
                out.extend_from_slice(b"pub ");
            }
            out.extend_from_slice(b"fn ");
            self.ident(out);
            out.push(b'(');
            for a in 0..self.rng.below(4) {
                if a > 0 {
                    out.extend_from_slice(b", ");
                }
                self.ident(out);
                out.extend_from_slice(b": ");
                out.extend_from_slice(self.rng.pick(TYPES).as_bytes());
            }
            out.extend_from_slice(b") -> ");
            out.extend_from_slice(self.rng.pick(TYPES).as_bytes());
            out.extend_from_slice(b" {\n");
        }
        let mut depth = 1;
        for _ in 0..2 + self.rng.below(14) {
            Self::indent(out, depth);
            match self.rng.below(12) {
                0..=3 => {
                    out.extend_from_slice(b"let ");
                    if self.rng.chance(1, 3) {
                        out.extend_from_slice(b"mut ");
                    }
                    self.ident(out);
                    out.extend_from_slice(b" = ");
                    self.expr(out);
                    out.extend_from_slice(b";\n");
                }
                4 if depth < 4 => {
                    out.extend_from_slice(b"if ");
                    self.ident(out);
                    out.push(b' ');
                    out.extend_from_slice(self.rng.pick(OPS).as_bytes());
                    out.push(b' ');
                    self.number(out);
                    out.extend_from_slice(b" {\n");
                    depth += 1;
                }
                5 if depth > 1 => {
                    out.truncate(out.len() - 4);
                    out.extend_from_slice(b"}\n");
                    depth -= 1;
                }
                6 => {
                    out.extend_from_slice(b"// ");
                    for w in 0..3 + self.rng.below(6) {
                        if w > 0 {
                            out.push(b' ');
                        }
                        out.extend_from_slice(self.word().as_bytes());
                    }
                    out.push(b'\n');
                }
                7 => {
                    self.ident(out);
                    out.push(b'.');
                    self.ident(out);
                    out.push(b'(');
                    self.expr(out);
                    out.extend_from_slice(b");\n");
                }
                8 if depth < 4 => {
                    out.extend_from_slice(b"for ");
                    self.ident(out);
                    out.extend_from_slice(b" in ");
                    self.ident(out);
                    out.extend_from_slice(b".iter() {\n");
                    depth += 1;
                }
                9 => {
                    out.extend_from_slice(b"assert_eq!(");
                    self.ident(out);
                    out.extend_from_slice(b", ");
                    self.expr(out);
                    out.extend_from_slice(b");\n");
                }
                10 => {
                    out.extend_from_slice(b"self.");
                    self.ident(out);
                    out.extend_from_slice(b" += ");
                    self.number(out);
                    out.extend_from_slice(b";\n");
                }
                _ => {
                    out.extend_from_slice(b"return Err(Error::");
                    self.camel(out);
                    out.extend_from_slice(b");\n");
                }
            }
        }
        while depth > 0 {
            depth -= 1;
            Self::indent(out, depth);
            out.extend_from_slice(b"}\n");
        }
        out.push(b'\n');
    }

    /// A burst of log lines from one module, mostly from two templates.
    fn log_lines(&mut self, out: &mut Vec<u8>) {
        let module = self.rng.pick(LOG_MODULES).as_bytes();
        let templates = [self.rng.pick(LOG_MESSAGES), self.rng.pick(LOG_MESSAGES)];
        self.clock_ms += self.rng.below(60_000);
        for _ in 0..4 + self.rng.below(29) {
            self.clock_ms += self.rng.below(250);
            push_timestamp(out, self.clock_ms);
            out.push(b' ');
            let mut roll = self.rng.below(100);
            let mut level = LOG_LEVELS[0].0;
            for &(name, weight) in LOG_LEVELS {
                if roll < weight {
                    level = name;
                    break;
                }
                roll -= weight;
            }
            out.extend_from_slice(level.as_bytes());
            out.push(b' ');
            out.extend_from_slice(module);
            out.extend_from_slice(b": ");
            let template = if self.rng.chance(1, 8) {
                self.rng.pick(LOG_MESSAGES)
            } else {
                templates[self.rng.below(2) as usize]
            };
            for &c in template.as_bytes() {
                match c {
                    b'#' => {
                        let n = match self.rng.below(20) {
                            0..=11 => self.rng.below(100),
                            12..=18 => self.rng.below(1000),
                            _ => self.rng.below(100_000),
                        };
                        push_u64(out, n);
                    }
                    b'@' => out.extend_from_slice(self.word().as_bytes()),
                    _ => out.push(c),
                }
            }
            out.push(b'\n');
        }
    }

    fn table_rows(&mut self, out: &mut Vec<u8>) {
        if !self.header_done {
            out.extend_from_slice(b"id,name,title,amount,checksum,active\n");
            self.header_done = true;
        }
        for _ in 0..16 {
            push_u64(out, self.rng.below(10_000_000));
            out.push(b',');
            out.extend_from_slice(self.name_word().as_bytes());
            out.extend_from_slice(b",\"");
            push_capitalized(out, self.word());
            out.push(b' ');
            out.extend_from_slice(self.word().as_bytes());
            out.extend_from_slice(b"\",");
            push_u64(out, self.rng.below(100_000));
            out.push(b'.');
            push_u64(out, 10 + self.rng.below(90));
            out.push(b',');
            push_hex(out, self.rng.next_u64(), 16);
            out.extend_from_slice(if self.rng.chance(3, 4) { b",true\n" } else { b",false\n" });
        }
    }
}

fn push_capitalized(out: &mut Vec<u8>, word: &str) {
    let bytes = word.as_bytes();
    out.push(bytes[0].to_ascii_uppercase());
    out.extend_from_slice(&bytes[1..]);
}

fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

fn push_padded(out: &mut Vec<u8>, n: u64, width: usize) {
    let mut digits = 1;
    let mut rest = n / 10;
    while rest > 0 {
        digits += 1;
        rest /= 10;
    }
    for _ in digits..width {
        out.push(b'0');
    }
    push_u64(out, n);
}

fn push_hex(out: &mut Vec<u8>, n: u64, digits: u32) {
    for i in (0..digits).rev() {
        out.push(b"0123456789abcdef"[((n >> (4 * i)) & 0xf) as usize]);
    }
}

/// Writes `2021-03-04T05:06:07.089Z` for a Unix time in milliseconds.
fn push_timestamp(out: &mut Vec<u8>, ms: u64) {
    let secs = ms / 1000;
    let (y, m, d) = civil_from_days(secs / 86_400);
    let sod = secs % 86_400;
    push_u64(out, y);
    out.push(b'-');
    push_padded(out, m, 2);
    out.push(b'-');
    push_padded(out, d, 2);
    out.push(b'T');
    push_padded(out, sod / 3600, 2);
    out.push(b':');
    push_padded(out, sod / 60 % 60, 2);
    out.push(b':');
    push_padded(out, sod % 60, 2);
    out.push(b'.');
    push_padded(out, ms % 1000, 3);
    out.push(b'Z');
}

/// Gregorian `(year, month, day)` of a day count since 1970-01-01 (Howard
/// Hinnant's algorithm, restricted to dates after the epoch). A copy of
/// `revault_lockbox_api::civil`, which everything else uses: corpora has
/// no dependencies, and the library's tests depend on it.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(mut r: impl Read) -> Vec<u8> {
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        v
    }

    fn ratio(data: &[u8]) -> f64 {
        zstd::bulk::compress(data, 3).unwrap().len() as f64 / data.len() as f64
    }

    #[test]
    fn exact_length_determinism_and_prefix() {
        for len in [0u64, 1, 77, 4096, 100_003] {
            let a = read_all(TextReader::new(11, len));
            assert_eq!(a.len() as u64, len);
            assert_eq!(a, read_all(TextReader::new(11, len)));
        }
        let long = read_all(TextReader::new(11, 50_000));
        let short = read_all(TextReader::new(11, 20_000));
        assert_eq!(short[..], long[..20_000]);
        assert_ne!(short, read_all(TextReader::new(12, 20_000)));
    }

    #[test]
    fn read_sizes_do_not_change_the_stream() {
        let whole = read_all(TextReader::new(3, 30_000));
        let mut r = TextReader::new(3, 30_000);
        let mut pieces = Vec::new();
        let mut buf = [0u8; 97];
        for size in [1usize, 5, 97, 0, 13].iter().cycle() {
            let n = r.read(&mut buf[..*size]).unwrap();
            if n == 0 && *size > 0 {
                break;
            }
            pieces.extend_from_slice(&buf[..n]);
        }
        assert_eq!(whole, pieces);
    }

    #[test]
    fn looks_like_text() {
        let text = read_all(TextReader::new(1, 200_000));
        let s = std::str::from_utf8(&text).expect("ASCII text");
        assert!(s.bytes().all(|b| b == b'\n' || (b' '..=b'~').contains(&b)));
        assert!(s.contains(" the "));
        assert!(s.contains("fn "), "has code-like lines");
        assert!(s.contains(". "));
        let lines = s.lines().count();
        assert!(lines > 2000, "{lines} lines");
        assert!(s.lines().all(|l| l.len() < 200));
    }

    #[test]
    fn default_text_compresses_like_prose() {
        let text = read_all(TextReader::new(2, 1 << 20));
        let r = ratio(&text);
        assert!((0.25..=0.40).contains(&r), "zstd -3 ratio {r:.3}");
    }

    #[test]
    fn flavors_differ_in_redundancy() {
        let of = |flavor| {
            let data = read_all(TextReader::with_flavor(4, 1 << 19, flavor));
            ratio(&data)
        };
        let log = of(Flavor::Log);
        let table = of(Flavor::Table);
        let source = of(Flavor::Source);
        let prose = of(Flavor::Prose);
        assert!(log < 0.22, "log {log:.3}");
        assert!(table > 0.35, "table {table:.3}");
        assert!(log < source && source < table, "source {source:.3}");
        assert!((0.2..0.45).contains(&prose), "prose {prose:.3}");
    }

    #[test]
    fn zipf_table_is_skewed_and_covers_the_vocabulary() {
        assert_eq!(ZIPF[0], 0);
        assert_eq!(usize::from(ZIPF[ZIPF_SLOTS - 1]), WORDS.len() - 1);
        let the = ZIPF.iter().filter(|&&r| r == 0).count();
        let last = ZIPF.iter().filter(|&&r| r == 300).count();
        assert!(the > 20 * last.max(1), "the: {the}, rank 300: {last}");
        assert!(ZIPF.windows(2).all(|w| w[0] <= w[1]));
        assert!(WORDS.len() >= 300);
    }

    #[test]
    fn timestamps_format_correctly() {
        let mut out = Vec::new();
        push_timestamp(&mut out, 951_782_400_000 + 3_723_004); // 2000-02-29
        assert_eq!(out, b"2000-02-29T01:02:03.004Z");
        out.clear();
        push_timestamp(&mut out, 0);
        assert_eq!(out, b"1970-01-01T00:00:00.000Z");
    }
}
