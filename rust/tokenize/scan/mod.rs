//! Hand-written pre-tokenizers for o200k_base and cl100k_base: the same pieces as the encodings'
//! regexes (which bpe-openai runs on regex-automata), without a regex engine. The regex stays the
//! reference: `tests.rs` compares the two on the agreement corpora and on random text.
//!
//! Why: the regex was over half of a count (README, "Counting"), and most of that is the
//! per-match dispatch of a general engine, entered once per piece.

mod cl100k;
mod classes;
mod memo;
mod o200k;
mod text;
#[cfg(test)]
mod tests;

/// Which pattern to scan with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    O200k,
    Cl100k,
}

/// The exact count of `text`: the BPE count of each piece (`bpe_count`), through this thread's
/// piece cache.
pub fn count(pattern: Pattern, text: &str, bpe_count: impl Fn(&[u8]) -> usize) -> usize {
    memo::with(pattern, |memo| match memo {
        Some(memo) => pieces(pattern, text).fold(0usize, |n, p| n.saturating_add(memo.count(p.as_bytes(), &bpe_count))),
        None => pieces(pattern, text).fold(0usize, |n, p| n.saturating_add(bpe_count(p.as_bytes()))),
    })
}

/// Drops this thread's piece cache for `pattern`: the next count starts cold.
pub fn forget(pattern: Pattern) {
    memo::forget(pattern);
}

/// The pieces of `text`, in order; together they are `text`.
pub fn pieces(pattern: Pattern, text: &str) -> Pieces<'_> {
    Pieces { pattern, text, at: 0 }
}

pub struct Pieces<'a> {
    pattern: Pattern,
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let s = self.text.as_bytes();
        if self.at >= s.len() {
            return None;
        }
        let end = match self.pattern {
            Pattern::O200k => o200k::piece_end(s, self.at),
            Pattern::Cl100k => cl100k::piece_end(s, self.at),
        };
        // Every alternative consumes at least one character; a scanner that did not would loop,
        // so take one character rather than trust it.
        let end = if end > self.at { end } else { self.at + text::at(s, self.at).map_or(1, |c| c.len) };
        let piece = self.text.get(self.at..end)?;
        self.at = end;
        Some(piece)
    }
}
