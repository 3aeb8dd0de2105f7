//! Pure helpers of the model thread: the prompt-cache prefix and UTF-8 reassembly of token
//! pieces (a token may end in the middle of a character).

/// How many leading items two sequences share.
pub fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Turns a stream of byte pieces into text, holding back an incomplete trailing character until
/// the piece that completes it arrives. Bytes that can never be UTF-8 become U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Add a piece; returns the text that is now complete.
    pub fn push(&mut self, piece: &[u8]) -> String {
        self.pending.extend_from_slice(piece);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let good = e.valid_up_to();
                    // `valid_up_to` bytes are UTF-8 by the error's contract.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..good]));
                    match e.error_len() {
                        // An invalid sequence: replace it and go on after it.
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..good + bad);
                        }
                        // An incomplete character at the end: wait for more.
                        None => {
                            self.pending.drain(..good);
                            return out;
                        }
                    }
                }
            }
        }
    }

    /// The end of the stream: whatever is still held back, lossily.
    pub fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prefix() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4]), 2);
        assert_eq!(common_prefix::<i32>(&[], &[1]), 0);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 3]), 2);
    }

    #[test]
    fn a_character_split_across_pieces_is_held_back() {
        let mut s = Utf8Stream::default();
        let e = "é".as_bytes();
        assert_eq!(s.push(b"caf"), "caf");
        assert_eq!(s.push(&e[..1]), "");
        assert_eq!(s.push(&e[1..]), "é");
        assert_eq!(s.push(b"\xff!"), "\u{FFFD}!");
        assert_eq!(s.push(&"€".as_bytes()[..2]), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }

    proptest! {
        /// Any text cut into any pieces comes out whole and unchanged.
        #[test]
        fn pieces_reassemble(text in "\\PC{0,40}", cuts in proptest::collection::vec(0usize..200, 0..12)) {
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            points.push(0);
            points.push(bytes.len());
            points.sort_unstable();
            let mut s = Utf8Stream::default();
            let mut out = String::new();
            for w in points.windows(2) {
                out.push_str(&s.push(&bytes[w[0]..w[1]]));
            }
            out.push_str(&s.finish());
            prop_assert_eq!(out, text);
        }
    }
}
