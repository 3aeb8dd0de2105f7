//! Output caps with a visible marker: nothing is cut silently.

/// The marker appended to a text cut at a byte cap.
pub fn bytes_marker(cut: usize) -> String {
    format!("…[truncated {cut} bytes]")
}

/// Decode `bytes` (lossy UTF-8), keeping at most `cap` bytes of it; `total` is how many bytes
/// the source really had (it may be more than `bytes.len()` when the reader stopped early).
/// The cut lands on a character boundary and is followed by `…[truncated N bytes]`.
pub fn cap_bytes(bytes: &[u8], total: usize, cap: usize) -> (String, bool) {
    if total <= cap && bytes.len() <= cap {
        return (String::from_utf8_lossy(bytes).into_owned(), false);
    }
    let mut keep = cap.min(bytes.len());
    // Back off an incomplete UTF-8 sequence at the cut.
    if let Err(e) = std::str::from_utf8(&bytes[..keep])
        && e.error_len().is_none()
    {
        keep = e.valid_up_to();
    }
    let mut text = String::from_utf8_lossy(&bytes[..keep]).into_owned();
    text.push_str(&bytes_marker(total.max(bytes.len()) - keep));
    (text, true)
}

/// Cap a string at `cap` bytes (on a character boundary) with the byte marker.
pub fn cap_str(text: &str, cap: usize) -> (String, bool) {
    if text.len() <= cap {
        return (text.to_owned(), false);
    }
    let mut keep = cap;
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    let mut out = text[..keep].to_owned();
    out.push_str(&bytes_marker(text.len() - keep));
    (out, true)
}

/// Cap a string at `max` characters with the web marker (the anchor's wording).
pub fn cap_chars(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        None => (text.to_owned(), false),
        Some((idx, _)) => {
            let total = text.chars().count();
            let mut out = text[..idx].to_owned();
            out.push_str(&format!(
                "\n\n…[truncated at {max} chars; {} more chars not shown]",
                total - max
            ));
            (out, true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(cap_bytes(b"abc", 3, 3), ("abc".to_owned(), false));
        assert_eq!(cap_str("abc", 10), ("abc".to_owned(), false));
        assert_eq!(cap_chars("abc", 3), ("abc".to_owned(), false));
    }

    #[test]
    fn cut_names_the_remainder() {
        let (t, cut) = cap_bytes(b"abcdef", 100, 4);
        assert!(cut);
        assert_eq!(t, "abcd…[truncated 96 bytes]");
        let (t, _) = cap_str("abcdef", 2);
        assert_eq!(t, "ab…[truncated 4 bytes]");
        let (t, _) = cap_chars("abcdef", 2);
        assert!(t.starts_with("ab\n\n…[truncated at 2 chars; 4 more"), "{t}");
    }

    #[test]
    fn cut_respects_char_boundaries() {
        let s = "aé€";
        // a=1 byte, é=2, €=3: a cap of 2 must not split é.
        let (t, _) = cap_bytes(s.as_bytes(), s.len(), 2);
        assert_eq!(t, "a…[truncated 5 bytes]");
        let (t, _) = cap_str(s, 4);
        assert_eq!(t, "aé…[truncated 3 bytes]");
    }
}
