//! Hand-written pre-tokenizers for o200k_base and cl100k_base: the same pieces as the encodings'
//! regexes (which bpe-openai runs on regex-automata), without a regex engine. The regex stays the
//! reference: `tests.rs` compares the two on the agreement corpora and on random text.
//!
//! Why: the regex was over half of a count (README, "Counting"), and most of that is the
//! per-match dispatch of a general engine, entered once per piece.

mod ascii;
mod blocks;
mod cl100k;
mod classes;
mod memo;
mod o200k;
mod letters;
mod pairs;
mod text;
mod ways;

use letters::{Case, Letters};
pub use pairs::Pairs;
#[cfg(test)]
mod tests;

/// Which pattern to scan with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    O200k,
    Cl100k,
}

impl Pattern {
    /// The letter classes of the pattern's word alternative (`letters.rs`).
    fn case(self) -> Case {
        match self {
            Pattern::O200k => Case::Split,
            Pattern::Cl100k => Case::Any,
        }
    }
}

/// The exact count of `text`: the BPE count of each piece (`bpe_count`), through this thread's
/// piece cache, with pieces of one or two bytes counted from `pairs` (the same vocabulary's).
pub fn count(pattern: Pattern, text: &str, pairs: &Pairs, bpe_count: impl Fn(&[u8]) -> usize) -> usize {
    // One loop per pattern, so each scanner's ASCII path is inlined into its own.
    match pattern {
        Pattern::O200k => count_with(text.as_bytes(), pattern, blocks::o200k, ascii::o200k, o200k_general, pairs, bpe_count),
        Pattern::Cl100k => count_with(text.as_bytes(), pattern, blocks::cl100k, ascii::cl100k, cl100k_general, pairs, bpe_count),
    }
}

/// The scanners whole, out of line: the loop inlines only their ASCII paths (a call per piece,
/// and the general path's registers, were a third of a cached count of English).
#[inline(never)]
fn o200k_general(s: &[u8], at: usize) -> usize {
    o200k::piece_end(s, at)
}

#[inline(never)]
fn cl100k_general(s: &[u8], at: usize) -> usize {
    cl100k::piece_end(s, at)
}

#[inline(always)]
fn count_with(
    s: &[u8],
    pattern: Pattern,
    block: fn(&[u8], usize) -> blocks::Starts,
    fast: impl Fn(&[u8], usize) -> Option<usize>,
    general: impl Fn(&[u8], usize) -> usize,
    pairs: &Pairs,
    bpe_count: impl Fn(&[u8]) -> usize,
) -> usize {
    memo::with(pattern, |memo| match memo {
        Some(memo) => walk(memo, s, pattern, block, &fast, &general, pairs, &bpe_count),
        None => piece_by_piece(s, &general, |at, end| bpe_count(s.get(at..end).unwrap_or(&[]))),
    })
}

/// The count of `s` through `memo`: the hot loop of every count, out of line on purpose. Why:
/// inlined into its caller (as fat LTO with one codegen unit did, into the bindings' count and
/// into the profile test) the loop read the cache's table pointer and size from thread-local
/// storage on every piece; as a function of its own it reaches them through `memo`. Measured
/// with fat LTO, 415 -> 423 MB/s on code (`memo_profile`), within the host's noise: the 15 % that
/// builds with and without LTO differed by was the bucket's compare (`ways.rs`), not this.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn walk(
    memo: &mut memo::Memo,
    s: &[u8],
    pattern: Pattern,
    block: fn(&[u8], usize) -> blocks::Starts,
    fast: &impl Fn(&[u8], usize) -> Option<usize>,
    general: &impl Fn(&[u8], usize) -> usize,
    pairs: &Pairs,
    bpe_count: &impl Fn(&[u8]) -> usize,
) -> usize {
    // The ASCII scanner and the short table's hit path are inlined here; misses and longer
    // pieces go out of line.
    let next = |at: usize| match fast(s, at) {
        Some(end) if end > at && end <= s.len() => end,
        _ => next_end(s, at, general),
    };
    let lookup = |memo: &mut memo::Memo, at: usize, end: usize| {
        let len = end - at;
        if let Some(n) = tiny(s, at, len, pairs) {
            return n;
        }
        if len <= 8 {
            short(memo, s, at, len, bpe_count)
        } else {
            memo.count_in(s, at, end, bpe_count)
        }
    };
    memo.bring_in(s.len());
    let mut letters = Letters::new(pattern.case());
    let (mut n, mut at) = (0usize, 0);
    // Blocks are tried from here on (past the last byte beyond ASCII that stopped one).
    let mut blocks_from = 0;
    while at < s.len() {
        // Every piece a block settles, counted by length (`settled`); then on from its last end.
        if block_from_here(s, at, blocks_from) {
            let starts = block(s, at);
            let ends = starts.bits & !1 & blocks::upto(starts.settled);
            if ends != 0 {
                n = n.saturating_add(settled(memo, s, at, ends, pairs, bpe_count));
                at += 63 - ends.leading_zeros() as usize;
                continue;
            }
            if let Some(h) = starts.high_at {
                blocks_from = at + h + 1;
            }
        }
        if let Some(len) = letters.word(s, at) {
            n = n.saturating_add(keyed(memo, s, at, len, pairs, bpe_count));
            at += len;
            continue;
        }
        let end = next(at);
        n = n.saturating_add(lookup(memo, at, end));
        at = end;
    }
    n
}

/// The count of the pieces a block settled: those of `s` from `at` to its last end, `ends` (bit
/// i: a piece ends at `at + i`; not 0). By length, not in order, each length a loop of its own
/// over a mask: pieces of one byte are one token each (a bit count), those of two are counted
/// from `pairs`, those of up to eight looked up in the short table, longer ones by a key of
/// sixteen bytes or the long path. Why: taken in order, each piece's length chose its path, a
/// branch the text decides (one, two, up to eight or more bytes alternate from piece to piece
/// in code), mispredicted on about two pieces in five (cachegrind, code); here each loop's only
/// data-dependent branch is its exit. Measured with fat LTO (`memo_profile`, medians of seven,
/// cl100k): code 482 -> 555 MB/s, chat 396 -> 516, JSON 352 -> 420.
#[inline(always)]
fn settled(memo: &mut memo::Memo, s: &[u8], at: usize, ends: u64, pairs: &Pairs, bpe_count: &impl Fn(&[u8]) -> usize) -> usize {
    let last = 63 - ends.leading_zeros();
    // Where the pieces begin: the block's start and every end but the last.
    let begins = (ends | 1) & !(u64::MAX << last);
    // The end of the piece that begins at `i` (< last): the next end above it.
    let end = |i: u32| i + 1 + (ends >> (i + 1)).trailing_zeros();
    // Pieces of one byte, and pieces of up to eight (an end within eight bytes of the begin).
    let single = begins & (ends >> 1);
    let within2 = (ends >> 1) | (ends >> 2);
    let within4 = within2 | (within2 >> 2);
    let within8 = within4 | (within4 >> 4);
    let mut n = single.count_ones() as usize;
    let double = begins & (ends >> 2) & !single;
    let mut twos = double;
    while twos != 0 {
        let from = at + twos.trailing_zeros() as usize;
        twos &= twos - 1;
        // The piece is in the text, so `tiny` answers; two tokens is a two-byte piece's most.
        n = n.saturating_add(tiny(s, from, 2, pairs).unwrap_or(2));
    }
    let mut shorts = begins & within8 & !single & !double;
    while shorts != 0 {
        let i = shorts.trailing_zeros();
        shorts &= shorts - 1;
        n = n.saturating_add(short(memo, s, at + i as usize, (end(i) - i) as usize, bpe_count));
    }
    let mut long = begins & !within8;
    while long != 0 {
        let i = long.trailing_zeros();
        long &= long - 1;
        n = n.saturating_add(key16(memo, s, at + i as usize, (end(i) - i) as usize, bpe_count));
    }
    n
}

/// The count of the piece of `len` (up to 8) bytes at `s[at..]`: the short table's hit, inlined,
/// else the out-of-line path.
#[inline(always)]
fn short(memo: &mut memo::Memo, s: &[u8], at: usize, len: usize, bpe_count: &impl Fn(&[u8]) -> usize) -> usize {
    match memo.short_hit(s, at, len) {
        Some(c) => c,
        None => memo.count_in(s, at, at + len, bpe_count),
    }
}

/// The count of the piece of `len` bytes at `s[at..]`, its key read from the text where it has
/// 16 bytes. A function, not a closure, so it can be marked for inlining: as a closure called
/// from both walks LLVM kept it out of line, a call a piece with a prologue saving six registers.
#[inline(always)]
fn keyed(memo: &mut memo::Memo, s: &[u8], at: usize, len: usize, pairs: &Pairs, bpe_count: &impl Fn(&[u8]) -> usize) -> usize {
    match tiny(s, at, len, pairs) {
        Some(n) => n,
        None => key16(memo, s, at, len, bpe_count),
    }
}

/// The count of the piece of `len` (> 2) bytes at `s[at..]`: by its key of sixteen bytes when
/// it is shorter, else (or on a miss) the long way.
#[inline(always)]
fn key16(memo: &mut memo::Memo, s: &[u8], at: usize, len: usize, bpe_count: &impl Fn(&[u8]) -> usize) -> usize {
    let hit = match memo::load16(s, at) {
        Some(b) if len < 16 => memo.key_hit(b, len),
        // The text's last bytes: the same key from a padded copy.
        None if len < 16 => memo.key_hit(&memo::padded16(s, at), len),
        _ => None,
    };
    match hit {
        Some(c) => c,
        None => memo.count_in(s, at, at + len, bpe_count),
    }
}

/// The count of the piece of `len` bytes at `s[at..]` when it has one or two (`pairs`).
#[inline(always)]
fn tiny(s: &[u8], at: usize, len: usize, pairs: &Pairs) -> Option<usize> {
    if len > 2 {
        return None;
    }
    let a = *s.get(at)?;
    let b = s.get(at + 1).copied().unwrap_or(0);
    Some(pairs.count(a, b, len))
}

/// Whether a block is worth classifying at `at`: past the byte beyond ASCII that stopped the
/// last one (`blocks_from`), and not on such a byte, where a block knows nothing (CJK text, a
/// piece per run, classified a block for every piece and used none). The count loop and
/// `Pieces` ask the same question, so the tests of `pieces` cover the loop's steps.
#[inline(always)]
fn block_from_here(s: &[u8], at: usize, blocks_from: usize) -> bool {
    at >= blocks_from && s.get(at).is_some_and(|&b| b < 0x80)
}

/// The sum of `count(start, end)` over the pieces of `s`, in order, one at a time.
#[inline(always)]
fn piece_by_piece(s: &[u8], piece_end: impl Fn(&[u8], usize) -> usize, mut count: impl FnMut(usize, usize) -> usize) -> usize {
    let (mut n, mut at) = (0usize, 0);
    while at < s.len() {
        let end = next_end(s, at, &piece_end);
        n = n.saturating_add(count(at, end));
        at = end;
    }
    n
}

/// The end of the piece at `at` (< `s.len()`). Every alternative consumes at least one
/// character; a scanner that did not would loop, so take one character rather than trust it.
#[inline(always)]
fn next_end(s: &[u8], at: usize, piece_end: impl Fn(&[u8], usize) -> usize) -> usize {
    let end = piece_end(s, at);
    if end > at && end <= s.len() {
        end
    } else {
        at + text::at(s, at).map_or(1, |c| c.len)
    }
}

/// Drops this thread's piece cache for `pattern`: the next count starts cold.
pub fn forget(pattern: Pattern) {
    memo::forget(pattern);
}

/// The pieces of `text`, in order; together they are `text`.
pub fn pieces(pattern: Pattern, text: &str) -> Pieces<'_> {
    Pieces { pattern, text, at: 0, letters: Letters::new(pattern.case()), ends: 0, base: 0, blocks_from: 0 }
}

pub struct Pieces<'a> {
    pattern: Pattern,
    text: &'a str,
    at: usize,
    letters: Letters,
    /// The settled ends of the last block (offsets from `base`) not yet walked.
    ends: u64,
    base: usize,
    blocks_from: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let s = self.text.as_bytes();
        if self.at >= s.len() {
            return None;
        }
        // The count loop's steps in the same order (a block's starts, then the letter masks,
        // then one piece the general way), so the tests of `pieces` against the regex cover them.
        // (The count takes a block's pieces by length, `settled`: its own tests compare counts.)
        if self.ends == 0 && block_from_here(s, self.at, self.blocks_from) {
            let starts = match self.pattern {
                Pattern::O200k => blocks::o200k(s, self.at),
                Pattern::Cl100k => blocks::cl100k(s, self.at),
            };
            self.ends = starts.bits & !1 & blocks::upto(starts.settled);
            self.base = self.at;
            if self.ends == 0 {
                if let Some(h) = starts.high_at {
                    self.blocks_from = self.at + h + 1;
                }
            }
        }
        let end = if self.ends != 0 {
            let end = self.base + self.ends.trailing_zeros() as usize;
            self.ends &= self.ends - 1;
            end
        } else {
            match self.letters.word(s, self.at) {
                Some(len) => self.at + len,
                None => match self.pattern {
                    Pattern::O200k => next_end(s, self.at, o200k::piece_end),
                    Pattern::Cl100k => next_end(s, self.at, cl100k::piece_end),
                },
            }
        };
        let piece = self.text.get(self.at..end)?;
        self.at = end;
        Some(piece)
    }
}
