//! Building the `bpe` crate's automaton from a file's vocabulary and merges.
//!
//! The crate serves a vocabulary whose ranks are its merge order: a token's parts rank below it,
//! every token encodes to itself, and a pair of adjacent tokens merges when its bytes form a
//! token, rank first. Its constructor asserts that and panics otherwise, so the vocabulary is
//! checked here first. Tokens are ranked bytes first, then in the order the file's merges first
//! produce them (for a converted tiktoken file, its ranks). Left out of the automaton, and served
//! by the file's own merges instead (`merge`), are the tokens that do not fit that model:
//! - the file's merges never form them (Llama 3's 588, which only the whole-piece lookup of
//!   `ignore_merges` returns; DeepSeek's control tokens inside its vocabulary);
//! - their merges are not listed together (`scattered`);
//! - they are formed only through a token of later rank (90 of Llama 3's, Japanese: the crate's
//!   encoder gets those wrong);
//! - the same, once those are gone (checked until nothing changes).

use std::panic::{catch_unwind, AssertUnwindSafe};

use bpe::byte_pair_encoding::{find_hash_factor_for_dictionary, BytePairEncoding};
use rustc_hash::{FxHashMap, FxHashSet};

use super::merge::merge_all;
use super::plan::Plan;

/// The version of what `build` decides: bump it with any change to it, so an automaton cached
/// by an earlier build is not read back (`disk_cache` keys files by it).
pub const BUILD: u32 = 4;

/// Rounds of the encodes-to-itself check before giving up on a vocabulary.
const MAX_ROUNDS: usize = 8;

pub struct Automaton {
    pub bpe: BytePairEncoding,
    /// The file's id of each automaton token.
    pub to_id: Vec<u32>,
    /// The file's ids left out of the automaton.
    pub left_out: Vec<u32>,
    /// Those of them that the file's merges can form: a piece holding one is encoded by the merge
    /// loop. The others are never formed by merges, so the automaton's answer without them is the
    /// file's (only the whole-piece lookup of `ignore_merges` can return them).
    pub merge_loop: Vec<u32>,
}

/// Rank of each token id: bytes first (by id), then by first producing merge; None: unreachable.
fn ranks(plan: &Plan) -> Vec<Option<(u8, u32)>> {
    let mut rank: Vec<Option<(u8, u32)>> = plan.tokens.iter().enumerate().map(|(id, t)| match t {
        Some(b) if b.len() == 1 => Some((0, id as u32)),
        _ => None,
    }).collect();
    for (i, &(_, _, merged)) in plan.merges.iter().enumerate() {
        if let Some(r) = rank.get_mut(merged as usize) {
            if r.is_none() {
                *r = Some((1, i as u32));
            }
        }
    }
    rank
}

/// Tokens whose merges are not listed together: the crate gives a token one rank, the file one
/// per merge, so between them another token's merge would be read out of order.
fn scattered(plan: &Plan) -> FxHashSet<u32> {
    let (mut out, mut seen) = (FxHashSet::default(), FxHashSet::default());
    let mut previous = u32::MAX;
    for &(_, _, m) in &plan.merges {
        if m != previous && !seen.insert(m) {
            out.insert(m);
        }
        previous = m;
    }
    out
}

/// Kept (in rank order), left out, and served by the merge loop: token ids.
type Parts = (Vec<u32>, Vec<u32>, Vec<u32>);

/// The ids of the tokens that fit the crate's model, in rank order; those that do not; and,
/// among those, the ones the file's merges can form (`Automaton::merge_loop`).
///
/// Why what is kept is read as the file reads it: a token the file's merges build from its own
/// bytes is built the same way inside any text until a neighbour takes a byte from it, so the
/// pair of tokens its last merge joins is the file's own, and the crate's wider rule (any two
/// tokens that spell one merge) never finds another pair to join. A token the file's merges do
/// not build from its own bytes is never formed at all, in any text, and is left out, which
/// changes nothing (only the whole-piece lookup of `ignore_merges` can return it).
fn split_vocabulary(plan: &Plan) -> Result<Parts, String> {
    let rank = ranks(plan);
    let (table, bytes) = (plan.merge_table(), plan.byte_ids());
    let formed = |id: u32| -> bool {
        let Some(t) = plan.tokens[id as usize].as_deref() else { return false };
        t.len() == 1 || merge_all(t.iter().map(|&b| bytes[b as usize]).collect(), &|l, r| table.get(&(l, r)).copied()) == [id]
    };
    let ids = 0..plan.tokens.len() as u32;
    let mut out = scattered(plan);
    out.extend(ids.clone().filter(|&id| plan.tokens[id as usize].is_some() && !formed(id)));
    let mut kept: Vec<u32> = ids.filter(|&id| rank[id as usize].is_some() && !out.contains(&id)).collect();
    kept.sort_by_key(|&id| rank[id as usize]);
    for _ in 0..MAX_ROUNDS {
        let failing = not_built_from_below(plan, &kept);
        if failing.is_empty() {
            let mut looped: Vec<u32> = out.iter().copied().filter(|&id| formed(id)).collect();
            looped.sort_unstable();
            let mut out: Vec<u32> = out.into_iter().collect();
            out.sort_unstable();
            return Ok((kept, out, looped));
        }
        out.extend(failing.iter().copied());
        let failing: FxHashSet<u32> = failing.into_iter().collect();
        kept.retain(|id| !failing.contains(id));
    }
    Err("its vocabulary does not settle into a consistent byte-pair encoding".into())
}

/// The tokens of `kept` (ids in rank order) that their own bytes do not reach through two tokens
/// of lower rank, when any pair of adjacent tokens whose bytes form a kept token merges, lowest
/// rank first: the ones the crate's constructor would refuse (not reached at all), and the ones
/// its encoder gets wrong (reached through a later token, "っている" from "ってい" in Llama 3).
fn not_built_from_below(plan: &Plan, kept: &[u32]) -> Vec<u32> {
    let bytes = |id: u32| plan.tokens[id as usize].as_deref().unwrap_or(&[]);
    let position: FxHashMap<&[u8], u32> = kept.iter().enumerate().map(|(p, &id)| (bytes(id), p as u32)).collect();
    let mut byte_pos = [u32::MAX; 256];
    for (&b, &p) in &position {
        if b.len() == 1 {
            byte_pos[b[0] as usize] = p;
        }
    }
    let joined = std::cell::RefCell::new(Vec::<u8>::new());
    let mut failing = Vec::new();
    for (p, &id) in kept.iter().enumerate() {
        let b = bytes(id);
        if b.len() < 2 {
            continue;
        }
        let me = p as u32;
        // Everything but the token itself merges: what is left is the pair its last merge joins.
        let pair = |l: u32, r: u32| -> Option<(u32, u32)> {
            let mut buf = joined.borrow_mut();
            buf.clear();
            buf.extend_from_slice(bytes(*kept.get(l as usize)?));
            buf.extend_from_slice(bytes(*kept.get(r as usize)?));
            position.get(buf.as_slice()).filter(|&&q| q != me).map(|&q| (q, q))
        };
        let start: Vec<u32> = b.iter().map(|&x| byte_pos[x as usize]).collect();
        match merge_all(start, &pair)[..] {
            [l, r] if l < me && r < me => {}
            _ => failing.push(id),
        }
    }
    failing
}

pub fn build(plan: &Plan) -> Result<Automaton, String> {
    let (kept, left_out, merge_loop) = split_vocabulary(plan)?;
    let dictionary: Vec<Vec<u8>> = kept.iter().map(|&id| plan.tokens[id as usize].clone().unwrap_or_default()).collect();
    // The crate panics on a hash collision unless given a factor that avoids one; the tokens are
    // distinct (a byte-level vocabulary decodes one way), so the search ends.
    let factor = find_hash_factor_for_dictionary(dictionary.iter().cloned());
    // Everything the constructor asserts was checked above; should a check still fail inside it,
    // the file is declined rather than the process brought down.
    let bpe = catch_unwind(AssertUnwindSafe(|| BytePairEncoding::from_dictionary(dictionary, Some(factor))))
        .map_err(|_| "the bpe crate refused its vocabulary".to_string())?;
    Ok(Automaton { bpe, to_id: kept, left_out, merge_loop })
}
