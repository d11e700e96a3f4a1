//! The OpenAI encodings embedded in the binary (o200k_base, cl100k_base).
//!
//! `bpe-openai` serialises the BPE automata at compile time and deserialises them on first use
//! (tens of milliseconds), so there is no network, no file and no multi-second build at run time.

use super::scan;
use super::specials::Splitter;
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
                "unknown encoding {other:?}{}; known encodings: {}",
                crate::suggest::hint(other, &KNOWN_ENCODINGS),
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

    /// The exact count: the sum of the BPE counts of the pre-tokenizer's pieces.
    ///
    /// The pieces come from the hand-written scanner (`scan`), which splits exactly as the
    /// encoding's regex does, and their counts from this thread's piece cache, which keeps them
    /// across calls: a server's later requests find most of their pieces counted.
    pub fn count(self, text: &str) -> usize {
        let bpe = &self.tokenizer().bpe;
        scan::count(self.pattern(), text, self.pairs(), |piece| bpe.count(piece))
    }

    /// Which byte pairs are one token (`scan::Pairs`), worked out once per process.
    pub fn pairs(self) -> &'static scan::Pairs {
        static O200K: std::sync::OnceLock<scan::Pairs> = std::sync::OnceLock::new();
        static CL100K: std::sync::OnceLock<scan::Pairs> = std::sync::OnceLock::new();
        let cell = match self {
            Self::O200kBase => &O200K,
            Self::Cl100kBase => &CL100K,
        };
        cell.get_or_init(|| {
            let bpe = &self.tokenizer().bpe;
            let ids = 0..u32::try_from(bpe.num_tokens()).unwrap_or(u32::MAX);
            scan::Pairs::from_tokens(ids.map(|id| bpe.token_bytes(id)))
        })
    }

    /// The ids of `text` (tiktoken's `encode_ordinary`), over the scanner's pieces.
    pub fn encode(self, text: &str) -> Vec<u32> {
        let bpe = &self.tokenizer().bpe;
        let mut ids = Vec::with_capacity(text.len() / 4 + 1);
        for piece in scan::pieces(self.pattern(), text) {
            ids.extend(bpe.encode_via_backtracking(piece.as_bytes()));
        }
        ids
    }

    /// Forgets this thread's piece counts for this encoding (a cold start, for measuring).
    pub fn clear_pieces(self) {
        scan::forget(self.pattern());
    }

    fn pattern(self) -> scan::Pattern {
        match self {
            Self::O200kBase => scan::Pattern::O200k,
            Self::Cl100kBase => scan::Pattern::Cl100k,
        }
    }

    pub fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Self::O200kBase => bpe_openai::o200k_base(),
            Self::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }

    /// The special tokens, (text, id), as tiktoken defines them for this encoding. A count reads
    /// their strings as plain text unless the counter matches them (`SpecialTokens::Matched`);
    /// their ids decode as tiktoken decodes them.
    pub fn special_tokens(self) -> &'static [(&'static str, u32)] {
        match self {
            Self::O200kBase => &[("<|endoftext|>", 199_999), ("<|endofprompt|>", 200_018)],
            Self::Cl100kBase => &[
                ("<|endoftext|>", 100_257),
                ("<|fim_prefix|>", 100_258),
                ("<|fim_middle|>", 100_259),
                ("<|fim_suffix|>", 100_260),
                ("<|endofprompt|>", 100_276),
            ],
        }
    }

    /// tiktoken's `n_vocab`: the highest id, ordinary or special, plus one.
    pub fn n_vocab(self) -> usize {
        let specials = self.special_tokens().iter().map(|&(_, id)| id as usize + 1);
        specials.fold(self.tokenizer().bpe.num_tokens(), usize::max)
    }

    /// tiktoken's `eot_token`: the id of `<|endoftext|>`.
    pub fn eot_token(self) -> u32 {
        match self {
            Self::O200kBase => 199_999,
            Self::Cl100kBase => 100_257,
        }
    }

    fn special_text(self, id: u32) -> Option<&'static str> {
        self.special_tokens().iter().find(|&&(_, s)| s == id).map(|&(t, _)| t)
    }

    /// The bytes of a token sequence; a special id gives its text, as tiktoken's `decode` does.
    /// An id that is neither (past the table, or in cl100k's unused 100261..100276) is refused
    /// here: the engine would index out of bounds.
    pub fn decode_bytes(self, ids: &[u32]) -> CtxResult<Vec<u8>> {
        let bpe = &self.tokenizer().bpe;
        let n = bpe.num_tokens();
        let mut out = Vec::with_capacity(ids.len().saturating_mul(4));
        // Runs of ordinary ids go to the engine whole; specials are spliced in between.
        let mut start = 0;
        for (pos, &id) in ids.iter().enumerate() {
            if (id as usize) < n {
                continue;
            }
            let Some(text) = self.special_text(id) else {
                return Err(CtxError::invalid(format!(
                    "token id {id} at position {pos} is not in {} (ordinary ids run 0..{n}; special ids: {})",
                    self.name(),
                    self.special_tokens().iter().map(|(t, i)| format!("{i} {t}")).collect::<Vec<_>>().join(", ")
                )));
            };
            out.extend(bpe.decode_tokens(&ids[start..pos]));
            out.extend_from_slice(text.as_bytes());
            start = pos + 1;
        }
        out.extend(bpe.decode_tokens(&ids[start..]));
        Ok(out)
    }

    /// Byte offset after each token of `text`, ascending.
    pub fn token_ends(self, text: &str) -> Vec<usize> {
        let bpe = &self.tokenizer().bpe;
        let mut end = 0usize;
        self.encode(text)
            .into_iter()
            .map(|id| {
                end = end.saturating_add(bpe.token_len(id));
                end
            })
            .collect()
    }

    /// The special tokens' texts, in `special_tokens` order: what a matched count splits at.
    pub fn special_texts(self) -> Vec<String> {
        self.special_tokens().iter().map(|&(t, _)| t.to_string()).collect()
    }

    /// The count with special-token strings matched (`splitter` from `special_texts`): the
    /// text between them counted as usual, each one token.
    pub fn count_matched(self, text: &str, splitter: &Splitter) -> usize {
        splitter
            .marked(text)
            .iter()
            .map(|p| if p.token.is_some() { 1 } else { self.count(text.get(p.start..p.end).unwrap_or("")) })
            .fold(0usize, usize::saturating_add)
    }

    /// The ids with special-token strings matched: each gives its special id.
    pub fn encode_matched(self, text: &str, splitter: &Splitter) -> Vec<u32> {
        let mut out = Vec::new();
        for p in splitter.marked(text) {
            match p.token.and_then(|k| self.special_tokens().get(k)) {
                Some(&(_, id)) => out.push(id),
                None => out.extend(self.encode(text.get(p.start..p.end).unwrap_or(""))),
            }
        }
        out
    }

    /// `token_ends` with special-token strings matched.
    pub fn token_ends_matched(self, text: &str, splitter: &Splitter) -> Vec<usize> {
        let mut out = Vec::new();
        for p in splitter.marked(text) {
            if p.token.is_some() {
                out.push(p.end);
            } else {
                out.extend(self.token_ends(text.get(p.start..p.end).unwrap_or("")).into_iter().map(|e| e + p.start));
            }
        }
        out
    }
}
