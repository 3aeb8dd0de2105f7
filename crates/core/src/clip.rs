//! Clipping input text before it is quoted in a message.
//!
//! An error that quotes what it was given (a line of a file, a name from a request) would
//! otherwise be as large as that input: a 10 MB line became a 40 MB message, written to an
//! unbuffered stderr one escaped byte at a time, and a 60 MB HTTP error body. Every message that
//! quotes input quotes at most [`QUOTE_MAX`] bytes of it, cut on a character boundary and
//! followed by a note of the whole length, so a person still sees where it went wrong and how
//! big the offending text was.

use std::borrow::Cow;

/// Most bytes of input text one message quotes.
pub const QUOTE_MAX: usize = 200;

/// `text` unchanged when it is at most `max` bytes long; otherwise its first `max` bytes (fewer
/// when `max` falls inside a character) followed by `…(N bytes)`, N the whole length.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let cut = floor_char_boundary(text, max);
    Cow::Owned(format!(
        "{}…({} bytes)",
        text.get(..cut).unwrap_or_default(),
        text.len()
    ))
}

/// [`clip`] to [`QUOTE_MAX`] bytes.
pub fn quote(text: &str) -> Cow<'_, str> {
    clip(text, QUOTE_MAX)
}

/// `text` unchanged when it is at most `max` bytes long; otherwise its first and last
/// `max / 2` bytes (on character boundaries) around `…(N bytes)…`: for messages from other
/// libraries that quote input in the middle and say where at the end (serde's `… at line 1
/// column 9`).
pub fn clip_middle(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let head = floor_char_boundary(text, max / 2);
    let mut tail = text.len() - max / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    Cow::Owned(format!(
        "{}…({} bytes)…{}",
        text.get(..head).unwrap_or_default(),
        text.len(),
        text.get(tail..).unwrap_or_default()
    ))
}

/// The largest char boundary of `text` at or below `at` (`str::floor_char_boundary` is not
/// stable yet).
pub fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    let mut cut = at;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_borrowed_unchanged() {
        assert!(matches!(clip("abc", 3), Cow::Borrowed("abc")));
        assert_eq!(quote(""), "");
    }

    #[test]
    fn long_text_keeps_its_head_and_says_how_long_it_was() {
        let long = "x".repeat(1_000_000);
        let c = quote(&long);
        assert_eq!(c, format!("{}…(1000000 bytes)", "x".repeat(QUOTE_MAX)));
    }

    #[test]
    fn never_cuts_inside_a_character() {
        // 'é' is two bytes: a cut at an odd byte falls inside one.
        let text = "é".repeat(300);
        for max in 0..20 {
            let c = clip(&text, max);
            let head = c.split('…').next().unwrap_or_default();
            assert!(head.len() <= max);
            assert_eq!(head.len() % 2, 0, "{max}: {c}");
        }
        let middle = clip_middle(&text, 11);
        assert_eq!(middle, "éé…(600 bytes)…éé");
        assert_eq!(clip_middle("short", 5), "short");
        assert_eq!(floor_char_boundary("aé", 2), 1);
        assert_eq!(floor_char_boundary("aé", 9), 3);
    }
}
