//! Where a text's count can be split without changing it: at the vocabulary's added tokens.
//!
//! A Hugging Face tokenizer isolates its added tokens (`<|eot_id|>`, `<|im_start|>`) before
//! any normalizer, pre-tokenizer or merge sees the text, matching them leftmost-longest. So the
//! count of a rendered chat prompt is the sum of the counts of its pieces between added tokens
//! and of the tokens themselves (measured: Llama 3.1's 6,970 = the sum of its 285 pieces), and
//! each piece can be counted once and cached. Only tokens that match as written are split on:
//! one with `lstrip`/`rstrip`/`single_word` (it takes the spaces around it, or depends on its
//! neighbours) or matched after a normalizer stays inside its piece, which is still exact, since
//! splitting at fewer places than the tokenizer does never changes a count.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use crate::error::{CtxError, CtxResult};

/// How a count reads a vocabulary's special-token strings (`<|eot_id|>`, `<|endoftext|>`) found
/// in a text: as the text they are (tiktoken's `encode_ordinary`, mistral-common, the default on
/// every engine), or as the one control token each stands for (the Hugging Face default, and what
/// a server does to the prompt it rendered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SpecialTokens {
    #[default]
    Text,
    Matched,
}

impl SpecialTokens {
    pub fn from_name(name: &str) -> CtxResult<Self> {
        match name {
            "text" => Ok(Self::Text),
            "matched" => Ok(Self::Matched),
            other => Err(CtxError::invalid(format!(
                "special_tokens must be \"text\" (special-token strings in a text count as text) or \"matched\" (each \
                 counts as its one control token), not {other:?}"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Matched => "matched",
        }
    }
}

/// A piece of a text: a byte range, and which token it is, if it is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub start: usize,
    pub end: usize,
    pub token: Option<usize>,
}

/// The added tokens a text may be split at.
pub struct Splitter {
    matcher: Option<AhoCorasick>,
}

impl Splitter {
    /// No split points: a text is one piece.
    pub fn none() -> Self {
        Self { matcher: None }
    }

    pub fn new(tokens: &[String]) -> Self {
        let tokens: Vec<&String> = tokens.iter().filter(|t| !t.is_empty()).collect();
        if tokens.is_empty() {
            return Self::none();
        }
        let matcher = AhoCorasickBuilder::new().match_kind(MatchKind::LeftmostLongest).build(&tokens).ok();
        Self { matcher }
    }

    /// Whether the text can be split at all.
    pub fn splits(&self) -> bool {
        self.matcher.is_some()
    }

    /// The byte ranges of `text`'s pieces, in order: the runs between added tokens and each
    /// added token on its own. Together they cover `text` exactly.
    pub fn pieces(&self, text: &str) -> Vec<(usize, usize)> {
        self.marked(text).into_iter().map(|p| (p.start, p.end)).collect()
    }

    /// `pieces`, each saying whether it is one of the tokens (`token`: the index of the token in
    /// the list `new` was given, among the non-empty ones).
    pub fn marked(&self, text: &str) -> Vec<Piece> {
        let Some(m) = &self.matcher else {
            return if text.is_empty() { Vec::new() } else { vec![Piece { start: 0, end: text.len(), token: None }] };
        };
        let mut out = Vec::new();
        let mut at = 0;
        for hit in m.find_iter(text) {
            if hit.start() > at {
                out.push(Piece { start: at, end: hit.start(), token: None });
            }
            out.push(Piece { start: hit.start(), end: hit.end(), token: Some(hit.pattern().as_usize()) });
            at = hit.end();
        }
        if at < text.len() {
            out.push(Piece { start: at, end: text.len(), token: None });
        }
        out
    }

    /// The added tokens that occur in `text`, each once, in order of first appearance.
    pub fn found<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let Some(m) = &self.matcher else { return Vec::new() };
        let mut seen: Vec<&str> = Vec::new();
        for hit in m.find_iter(text) {
            let t = &text[hit.start()..hit.end()];
            if !seen.contains(&t) {
                seen.push(t);
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_text_and_isolate_tokens() {
        let s = Splitter::new(&["<|a|>".to_string(), "<|ab|>".to_string()]);
        let text = "x<|a|><|ab|>yz<|a|>";
        let pieces: Vec<&str> = s.pieces(text).iter().map(|&(a, b)| &text[a..b]).collect();
        assert_eq!(pieces, ["x", "<|a|>", "<|ab|>", "yz", "<|a|>"]);
        assert_eq!(Splitter::none().pieces(text), vec![(0, text.len())]);
        assert!(Splitter::none().pieces("").is_empty());
        assert_eq!(s.found(text), vec!["<|a|>", "<|ab|>"]);
    }
}
