//! Token counting with the real tokenizers (`tiktoken-rs`), used by every size-bounded output.

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

/// Which BPE to count with. `o200k_base` (GPT-4o family) is the default; `cl100k_base` (GPT-4,
/// many local-model estimates) is selectable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    #[default]
    O200kBase,
    Cl100kBase,
}

/// A cheap handle to a process-wide tokenizer (loaded once, on first use).
#[derive(Clone, Copy)]
pub struct TokenCounter {
    bpe: &'static CoreBPE,
    encoding: Encoding,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

impl TokenCounter {
    pub fn new(encoding: Encoding) -> Self {
        let bpe = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        };
        Self { bpe, encoding }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens in `text` (special-token text is counted as ordinary text: model input from
    /// tools must never be read as control tokens).
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }
}

impl Default for TokenCounter {
    fn default() -> Self {
        Self::new(Encoding::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_real_tokens() {
        let o = TokenCounter::default();
        assert_eq!(o.count(""), 0);
        assert_eq!(o.count("hello world"), 2);
        let c = TokenCounter::new(Encoding::Cl100kBase);
        assert_eq!(c.count("hello world"), 2);
        assert!(o.count("{\"plotId\":\"stac://store-1/items/alpha-day1/item.json\"}") > 5);
        assert_eq!(
            o.count("<|endoftext|>"),
            c.count("<|endoftext|>").max(o.count("<|endoftext|>"))
        );
    }
}
