//! The importer's error type and the per-line context that builds it.

use toolgate_core::clip::{QUOTE_MAX, clip, floor_char_boundary};

use super::lex::Tok;

/// Why a REP file could not be imported.
///
/// Every variant names the file, the 1-based line, the 1-based byte column of the offending
/// token (or, for a missing field, the column just past the end of the line), what is wrong,
/// the offending text and what was expected. The quoted text is clipped: at most
/// `FOUND_MAX` bytes of the token and `EXCERPT_MAX` of the line (200 together, whatever the
/// size of the line; a clipped token ends `…(N bytes)`), so a message stays a few hundred bytes
/// even for a 10 MB line. E.g.
///
/// ```text
/// boat1.rep:12:32: invalid latitude minutes "75" in "951212 050000.000 NELSON @C 22 75 10.63 N ..."; expected 0–59
/// ```
///
/// Any error aborts the whole import: there is no partial result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepError {
    /// A field is present but its value is malformed or out of range.
    #[error(
        "{file}:{line}:{column}: invalid {field} {found:?} in {context:?}; expected {expected}"
    )]
    InvalidField {
        /// The source name given to [`super::parse_rep`].
        file: String,
        /// 1-based line number.
        line: usize,
        /// 1-based byte column of the offending text.
        column: usize,
        /// What the offending text was meant to be (e.g. `latitude minutes`).
        field: &'static str,
        /// The offending text itself, at most `FOUND_MAX` bytes of it (then `…(N bytes)`).
        found: String,
        /// The line, shortened with ` ...` when long (at most `EXCERPT_MAX` bytes of it).
        context: String,
        /// What would have been accepted.
        expected: String,
    },
    /// The line ends before a required field.
    #[error("{file}:{line}:{column}: missing {field} in {context:?}; expected {expected}")]
    MissingField {
        /// The source name given to [`super::parse_rep`].
        file: String,
        /// 1-based line number.
        line: usize,
        /// 1-based byte column just past the last character of the line.
        column: usize,
        /// The field that is missing (e.g. `longitude seconds`).
        field: &'static str,
        /// The line, shortened with ` ...` when long (at most `EXCERPT_MAX` bytes of it).
        context: String,
        /// What the line should have contained.
        expected: String,
    },
}

impl RepError {
    /// The source name the error refers to.
    pub fn file(&self) -> &str {
        match self {
            Self::InvalidField { file, .. } | Self::MissingField { file, .. } => file,
        }
    }

    /// The 1-based line number.
    pub fn line(&self) -> usize {
        match self {
            Self::InvalidField { line, .. } | Self::MissingField { line, .. } => *line,
        }
    }

    /// Adds `lines` to the line number (for text parsed in pieces).
    pub(super) fn shift_lines(&mut self, lines: usize) {
        match self {
            Self::InvalidField { line, .. } | Self::MissingField { line, .. } => *line += lines,
        }
    }

    /// The 1-based byte column.
    pub fn column(&self) -> usize {
        match self {
            Self::InvalidField { column, .. } | Self::MissingField { column, .. } => *column,
        }
    }
}

/// Internal result type: the error is boxed so the success path stays small.
pub(super) type Res<T> = Result<T, Box<RepError>>;

/// The line being parsed, for building errors.
#[derive(Clone, Copy)]
pub(super) struct LineCtx<'a> {
    pub file: &'a str,
    pub line_no: usize,
    pub line: &'a str,
}

/// Shortest excerpt shown before cutting at a word boundary.
const EXCERPT_MIN: usize = 40;
/// How far past the offending token a single long word may run before it is cut.
const EXCERPT_SLACK: usize = 80;
/// Most bytes of the offending token an error quotes. With `EXCERPT_MAX` it makes
/// `toolgate_core::clip::QUOTE_MAX`: a message quotes at most 200 bytes of the input.
pub(crate) const FOUND_MAX: usize = 80;
/// Most bytes of the line an error quotes as its context. Real REP lines are shorter: the
/// excerpt of a well-formed line with a bad field is unchanged.
pub(crate) const EXCERPT_MAX: usize = toolgate_core::clip::QUOTE_MAX - FOUND_MAX;

impl LineCtx<'_> {
    /// An invalid token.
    pub(crate) fn invalid(
        &self,
        field: &'static str,
        tok: Tok<'_>,
        expected: impl Into<String>,
    ) -> Box<RepError> {
        self.invalid_at(field, tok.start, tok.text, expected)
    }

    /// Invalid text starting at byte `start` of the line.
    pub(crate) fn invalid_at(
        &self,
        field: &'static str,
        start: usize,
        found: &str,
        expected: impl Into<String>,
    ) -> Box<RepError> {
        Box::new(RepError::InvalidField {
            file: clip(self.file, QUOTE_MAX).into_owned(),
            line: self.line_no,
            column: start + 1,
            field,
            found: clip(found, FOUND_MAX).into_owned(),
            context: excerpt(self.line, start + found.len()),
            expected: expected.into(),
        })
    }

    /// A required field after the end of the line.
    pub(crate) fn missing(
        &self,
        field: &'static str,
        expected: impl Into<String>,
    ) -> Box<RepError> {
        let content = self.line.trim_end();
        Box::new(RepError::MissingField {
            file: clip(self.file, QUOTE_MAX).into_owned(),
            line: self.line_no,
            column: content.len() + 1,
            field,
            context: excerpt(content, content.len()),
            expected: expected.into(),
        })
    }
}

/// The line, cut at the first whitespace at or after `max(token_end, EXCERPT_MIN)`, and never
/// longer than `EXCERPT_MAX` bytes (a token far along a huge line is found by its column).
fn excerpt(line: &str, token_end: usize) -> String {
    let line = line.trim_end();
    let target = token_end.max(EXCERPT_MIN);
    if line.len() <= target.min(EXCERPT_MAX) {
        return line.to_owned();
    }
    let bytes = line.as_bytes();
    let cut = bytes
        .get(target..)
        .and_then(|rest| rest.iter().position(u8::is_ascii_whitespace))
        .map_or(line.len(), |p| target + p)
        .min(target + EXCERPT_SLACK)
        .min(EXCERPT_MAX);
    let cut = floor_char_boundary(line, cut);
    if cut >= line.len() {
        line.to_owned()
    } else {
        format!("{} ...", line.get(..cut).unwrap_or_default().trim_end())
    }
}
