//! The OpenAI encodings embedded in the binary (o200k_base, cl100k_base).
//!
//! `bpe-openai` serialises the BPE automata at compile time and deserialises them on first use
//! (tens of milliseconds), so there is no network, no file and no multi-second build at run time.

use crate::error::{CtxError, CtxResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    O200kBase,
    Cl100kBase,
}

pub const KNOWN_ENCODINGS: [&str; 2] = ["o200k_base", "cl100k_base"];

impl Encoding {
    pub fn from_name(name: &str) -> CtxResult<Self> {
        match name {
            "o200k_base" => Ok(Self::O200kBase),
            "cl100k_base" => Ok(Self::Cl100kBase),
            other => Err(CtxError::invalid(format!(
                "unknown encoding {other:?}; known encodings: {}",
                KNOWN_ENCODINGS.join(", ")
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    pub fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Self::O200kBase => bpe_openai::o200k_base(),
            Self::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }

    /// Token ids outside the vocabulary would index out of bounds in the engine: refuse them here.
    pub fn decode_bytes(self, ids: &[u32]) -> CtxResult<Vec<u8>> {
        let bpe = &self.tokenizer().bpe;
        let n = bpe.num_tokens();
        if let Some((pos, bad)) = ids.iter().enumerate().find(|(_, &id)| id as usize >= n) {
            return Err(CtxError::invalid(format!(
                "token id {bad} at position {pos} is not in {} (ids run 0..{n}; special tokens are not decoded)",
                self.name()
            )));
        }
        Ok(bpe.decode_tokens(ids))
    }

    /// Byte offset after each token of `text`, ascending.
    pub fn token_ends(self, text: &str) -> Vec<usize> {
        let tok = self.tokenizer();
        let mut end = 0usize;
        tok.encode(text)
            .into_iter()
            .map(|id| {
                end += tok.bpe.token_len(id);
                end
            })
            .collect()
    }
}
