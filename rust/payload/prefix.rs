//! How much of a rendered prompt a server's prompt cache can reuse from the previous one: the
//! tokens of their common prefix. A CPU server (llama.cpp's `cache_prompt`, vLLM's prefix
//! caching) keeps the previous request's KV cache and re-prefills from the first token that
//! differs, so this is what a turn does not pay for.
//!
//! Both prompts are split at the vocabulary's added tokens (`tokenize::specials`), where the
//! token sequence splits too. The pieces that are equal from the start count whole (their counts
//! are cached); in the first pair that differs, the ids are compared one by one.

use crate::error::CtxResult;
use crate::tokenize::TokenCounter;

/// Tokens that `previous` and `current` share from their start.
pub fn reusable_prefix(counter: &TokenCounter, previous: &str, current: &str) -> CtxResult<usize> {
    let splitter = counter.splitter();
    let (a, b) = (splitter.marked(previous), splitter.marked(current));
    let mut shared = 0usize;
    for (pa, pb) in a.iter().zip(&b) {
        let (ta, tb) = (previous.get(pa.start..pa.end).unwrap_or(""), current.get(pb.start..pb.end).unwrap_or(""));
        if ta == tb {
            // A control token is one token (the server matches it in its own render).
            shared = shared.saturating_add(if pa.token.is_some() { 1 } else { counter.count(ta)? });
            continue;
        }
        if pa.token.is_none() && pb.token.is_none() {
            let (ia, ib) = (counter.encode(ta)?, counter.encode(tb)?);
            shared = shared.saturating_add(ia.iter().zip(&ib).take_while(|(x, y)| x == y).count());
        }
        break;
    }
    Ok(shared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::Encoding;

    #[test]
    fn a_shared_start_counts_and_a_change_stops_it() {
        let c = TokenCounter::shared(Encoding::O200kBase);
        let a = "The quick brown fox jumps over the lazy dog.";
        assert_eq!(reusable_prefix(&c, a, a).ok(), c.count(a).ok());
        let b = "The quick brown cat jumps over the lazy dog.";
        assert_eq!(reusable_prefix(&c, a, b).ok(), Some(3)); // The, quick, brown
        assert_eq!(reusable_prefix(&c, "", b).ok(), Some(0));
    }
}
