//! Diagnostics: source spans, errors with line:column, and their rendering
//! with the offending line underlined. Every user-facing error in einsat is a
//! [`Diagnostic`] or a list of them.
//!
//! Errors quote user input (names, specs, source lines) bounded: [`quote`],
//! [`excerpt`] and [`quote_list`] cut long input to an excerpt and escape
//! control characters, a diagnostic's message has each `` `…` `` quotation
//! cut the same way, and the rendered source line is a window around the
//! error's column.

use std::fmt;

/// A byte range in a source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }
    /// The smallest span covering both.
    pub fn join(self, o: Span) -> Span {
        Span::new(self.start.min(o.start), self.end.max(o.end))
    }
}

/// One error: a message and, when the input came from text, where.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// What is wrong, in words.
    pub message: String,
    /// Where in the source, when known.
    pub span: Option<Span>,
}

impl Diagnostic {
    /// A diagnostic with a message and an optional span. Quotations in
    /// backticks longer than [`QUOTE_CHARS`] characters are cut to an
    /// excerpt (a name a megabyte long is not echoed whole).
    pub fn new(message: impl Into<String>, span: Option<Span>) -> Diagnostic {
        Diagnostic {
            message: clip_quotations(message.into()),
            span,
        }
    }
    /// 1-based line and column of the start of the span in `src`.
    pub fn line_col(&self, src: &str) -> Option<(usize, usize)> {
        self.span.map(|s| line_col(src, s.start))
    }
    /// `file:line:col: error: message`, then the line with a caret underline.
    pub fn render(&self, file: &str, src: &str) -> String {
        match self.span {
            None => format!("{file}: error: {}", self.message),
            Some(s) => {
                let (line, col) = line_col(src, s.start);
                let text = src.lines().nth(line - 1).unwrap_or("");
                // the byte offsets of the span within its line
                let begin = text
                    .char_indices()
                    .nth(col - 1)
                    .map_or(text.len(), |(b, _)| b);
                let len = s.end.saturating_sub(s.start).min(text.len() - begin);
                let w = window(text, begin, begin + len, LINE_CHARS);
                format!(
                    "{file}:{line}:{col}: error: {}\n{:>5} | {}\n      | {}{}",
                    self.message,
                    line,
                    w.text,
                    " ".repeat(w.before),
                    "^".repeat(w.marked.max(1))
                )
            }
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

/// The most characters of user input an error message quotes (a name, an
/// einsum spec): longer input is cut to an excerpt.
pub const QUOTE_CHARS: usize = 60;

/// The most characters of a source line a rendered diagnostic shows: a
/// longer line is shown as a window around the error.
pub const LINE_CHARS: usize = 100;

/// How many names [`quote_list`] shows.
pub const LIST_NAMES: usize = 12;

/// A character as an error message shows it: control characters escaped
/// (`\t`, `\n`, `\u{1b}`), others as they are.
fn shown_char(c: char, out: &mut String) {
    if c.is_control() {
        out.extend(c.escape_debug());
    } else {
        out.push(c);
    }
}

/// `text` (user input) as an error message quotes it: control characters
/// escaped, and past [`QUOTE_CHARS`] characters its beginning, `…` and its
/// length in characters.
pub fn quote(text: &str) -> String {
    let mut out = String::new();
    let n = text.chars().count();
    if n <= QUOTE_CHARS {
        text.chars().for_each(|c| shown_char(c, &mut out));
    } else {
        text.chars()
            .take(QUOTE_CHARS - 12)
            .for_each(|c| shown_char(c, &mut out));
        out.push_str(&format!("… ({n} characters)"));
    }
    out
}

/// A path (user input) as an error message shows it: whole up to 255
/// characters, else `…` and its last 200 characters (the file's name is
/// the telling part), with its length.
pub fn quote_path(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    let n = text.chars().count();
    if n <= 255 {
        return text;
    }
    let tail: String = text.chars().skip(n - 200).collect();
    format!("…{tail} ({n} characters)")
}

/// At most [`LIST_NAMES`] names, each [`quote`]d, joined by `, `; a longer
/// list ends in `… (N in all)`.
pub fn quote_list(names: &[String]) -> String {
    let mut parts: Vec<String> = names.iter().take(LIST_NAMES).map(|n| quote(n)).collect();
    if names.len() > LIST_NAMES {
        parts.push(format!("… ({} in all)", names.len()));
    }
    parts.join(", ")
}

/// A window of `text` around the byte offset `at` (user input such as an
/// einsum spec, for an error about the character there): the whole text
/// when at most [`QUOTE_CHARS`] characters, else about that many around
/// `at` with `…` where cut; control characters escaped.
pub fn excerpt(text: &str, at: usize) -> String {
    let at = at.min(text.len());
    let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
    window(text, at, end, QUOTE_CHARS).text
}

/// A shown part of a line: its text, and how many characters of it come
/// before the marked bytes and how many the marked bytes take.
struct Window {
    text: String,
    before: usize,
    marked: usize,
}

/// The part of `text` around the bytes `start..end` (char boundaries) that
/// is at most about `max` characters long, with `…` where it is cut;
/// control characters escaped.
fn window(text: &str, start: usize, end: usize, max: usize) -> Window {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let first = chars.partition_point(|&(b, _)| b < start);
    let last = chars.partition_point(|&(b, _)| b < end).max(first);
    let (lo, hi) = if chars.len() <= max {
        (0, chars.len())
    } else {
        let lo = first.saturating_sub(max / 3).min(chars.len() - max);
        (lo, lo + max)
    };
    let mut w = Window {
        text: String::new(),
        before: 0,
        marked: 0,
    };
    if lo > 0 {
        w.text.push('…');
    }
    for (k, &(_, c)) in chars.iter().enumerate().take(hi).skip(lo) {
        let len = w.text.chars().count();
        shown_char(c, &mut w.text);
        let grew = w.text.chars().count() - len;
        if k < first {
            w.before += grew;
        } else if k < last {
            w.marked += grew;
        }
    }
    if lo > 0 {
        w.before += 1;
    }
    if hi < chars.len() {
        w.text.push('…');
    }
    w
}

/// `message` with every quotation in backticks longer than
/// [`QUOTE_CHARS`] characters cut by [`quote`] (short ones, the usual
/// case, untouched; control characters in them are left as they are).
fn clip_quotations(message: String) -> String {
    let parts: Vec<&str> = message.split('`').collect();
    // the odd parts are inside backticks (when they close)
    let long =
        |k: usize, p: &str| k % 2 == 1 && k + 1 < parts.len() && p.chars().count() > QUOTE_CHARS;
    if !parts.iter().enumerate().any(|(k, p)| long(k, p)) {
        return message;
    }
    parts
        .iter()
        .enumerate()
        .map(|(k, p)| if long(k, p) { quote(p) } else { p.to_string() })
        .collect::<Vec<_>>()
        .join("`")
}

/// 1-based (line, column) of a byte offset; columns count characters.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    // a leading byte-order mark is not a column
    let before = &src[..offset];
    let before = before.strip_prefix('\u{FEFF}').unwrap_or(before);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

/// Decode a source file's bytes; invalid UTF-8 is an error naming the
/// line and column of the first bad byte.
pub fn decode_source(file: &str, bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        let good = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let text = std::str::from_utf8(&bytes[..good]).unwrap_or("");
        let (line, col) = line_col(text, good);
        format!(
            "{file}:{line}:{col}: error: the file is not valid UTF-8 (byte 0x{:02X} at offset {good})",
            bytes[good]
        )
    })
}

/// Render a list of diagnostics, one after another.
pub fn render_all(diags: &[Diagnostic], file: &str, src: &str) -> String {
    diags
        .iter()
        .map(|d| d.render(file, src))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The candidate closest to `name` when it is close enough to be a likely
/// misspelling (edit distance at most a third of the name's length, and at
/// least 1, for names of three or more characters; a difference of case for
/// any name; ties go to the first candidate): for "did you mean" hints.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let d = strsim::damerau_levenshtein(name, c);
        let case_only = c.eq_ignore_ascii_case(name);
        // one- and two-letter names are all close to each other: only a
        // difference of case is a likely slip there
        let close = d <= limit && name.chars().count() >= 3;
        if (close || case_only) && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `" (did you mean `x`?)"` for the closest candidate, or nothing.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, candidates).map_or(String::new(), |c| format!(" (did you mean `{c}`?)"))
}
