//! Diagnostics: source spans, errors with line:column, and their rendering
//! with the offending line underlined. Every user-facing error in einsat is a
//! [`Diagnostic`] or a list of them.

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
    /// A diagnostic with a message and an optional span.
    pub fn new(message: impl Into<String>, span: Option<Span>) -> Diagnostic {
        Diagnostic {
            message: message.into(),
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
                let width = s
                    .end
                    .saturating_sub(s.start)
                    .clamp(1, text.len().saturating_sub(col - 1).max(1));
                format!(
                    "{file}:{line}:{col}: error: {}\n{:>5} | {text}\n      | {}{}",
                    self.message,
                    line,
                    " ".repeat(col - 1),
                    "^".repeat(width)
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
