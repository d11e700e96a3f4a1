//! Added tokens, found as the Hugging Face engine finds them: leftmost-longest, first those
//! matched on the raw text, then (in what is left, after the normalizer) those marked
//! `normalized`. With special tokens read as text, a special token is found and passed over, so
//! what it spells is text and no shorter added token inside it is matched.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::plan::Added;
use crate::tokenize::specials::SpecialTokens;

/// A run of text, or an added token's id.
pub enum Part<'t> {
    Text(&'t str),
    Token(u32),
}

pub struct AddedPass {
    matcher: Option<AhoCorasick>,
    tokens: Vec<(u32, bool)>,
}

impl AddedPass {
    /// The pass for `tokens`; `normalize` maps their contents as the text will have been.
    pub fn new(tokens: &[&Added], normalize: &dyn Fn(&str) -> String) -> Result<Self, String> {
        if tokens.is_empty() {
            return Ok(Self { matcher: None, tokens: Vec::new() });
        }
        let contents: Vec<String> = tokens.iter().map(|t| normalize(&t.content)).collect();
        let matcher = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&contents)
            .map_err(|e| format!("its added tokens do not build a matcher ({e})"))?;
        Ok(Self { matcher: Some(matcher), tokens: tokens.iter().map(|t| (t.id, t.special)).collect() })
    }

    /// Calls `f` with the parts of `text`, in order.
    pub fn each<'t>(&self, text: &'t str, mode: SpecialTokens, f: &mut dyn FnMut(Part<'t>)) {
        let Some(m) = &self.matcher else {
            if !text.is_empty() {
                f(Part::Text(text));
            }
            return;
        };
        let mut at = 0;
        for hit in m.find_iter(text) {
            let Some(&(id, special)) = self.tokens.get(hit.pattern().as_usize()) else { continue };
            if special && mode == SpecialTokens::Text {
                continue;
            }
            if hit.start() > at {
                f(Part::Text(&text[at..hit.start()]));
            }
            f(Part::Token(id));
            at = hit.end();
        }
        if at < text.len() {
            f(Part::Text(&text[at..]));
        }
    }
}
