//! What a counter says about itself: its engine, vocabulary sizes, what loading changed.

use super::{Engine, TokenCounter};
use crate::error::CtxResult;

impl TokenCounter {
    /// What loading changed in the vocabulary's file, in words (empty: nothing).
    pub fn adjustments(&self) -> Vec<String> {
        match &self.engine {
            Engine::HuggingFace(hf) => hf.notes().to_vec(),
            _ => Vec::new(),
        }
    }

    /// The engine that counts ("bpe", "huggingface", "o200k_base", "approximate") and why.
    pub fn engine_info(&self) -> (String, String) {
        match &self.engine {
            Engine::HuggingFace(hf) => (hf.engine_name().to_string(), hf.engine_note().to_string()),
            Engine::Tiktoken(e) => (e.name().to_string(), "the embedded OpenAI encoding (GitHub's bpe crate)".to_string()),
            Engine::Approximate { chars_per_token } => ("approximate".to_string(), format!("{chars_per_token} characters a token")),
        }
    }

    pub fn vocab_size(&self) -> Option<usize> {
        match &self.engine {
            Engine::Tiktoken(e) => Some(e.tokenizer().bpe.num_tokens()),
            Engine::HuggingFace(hf) => Some(hf.vocab_size()),
            Engine::Approximate { .. } => None,
        }
    }

    /// tiktoken's `n_vocab`: ids run 0..n_vocab, specials included. For a tokenizer.json, its
    /// size with added tokens (the same as `vocab_size`).
    pub fn n_vocab(&self) -> Option<usize> {
        match &self.engine {
            Engine::Tiktoken(e) => Some(e.n_vocab()),
            Engine::HuggingFace(hf) => Some(hf.vocab_size()),
            Engine::Approximate { .. } => None,
        }
    }

    /// The id of `<|endoftext|>` in the OpenAI encodings; None for the others, whose end-of-text
    /// token (if any) has no common name.
    pub fn eot_token(&self) -> Option<u32> {
        match &self.engine {
            Engine::Tiktoken(e) => Some(e.eot_token()),
            _ => None,
        }
    }

    /// The tokenizer.json text of a Hugging Face engine (for pickling), None for the others.
    pub fn hf_json(&self) -> CtxResult<Option<String>> {
        match &self.engine {
            Engine::HuggingFace(hf) => hf.to_json().map(Some),
            _ => Ok(None),
        }
    }
}
