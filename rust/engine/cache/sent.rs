//! What a fit sent, in the form the next fit compares against: each sent item's fingerprint and
//! tokens in payload order (the unchanged prefix is the longest run of equal items from the
//! start), and for each segment that left, how it left and by which rung (to repeat the cut).

use rustc_hash::FxHashMap as HashMap;
use crate::hash::xxh3_64_with_seed;

use super::{Pin, Pinned};
use crate::cache::CountCache;
use crate::engine::{FitOutcome, Kept, SegmentData, Taken, Target};

/// A segment's content identity: its text, its tool call and its count. Position, layer and
/// group are left out on purpose: the current turn becomes history on the next turn (a new
/// layer, the same bytes sent), and an adapter's group names are its own.
pub fn fingerprint(seg: &SegmentData, tokens: usize) -> u64 {
    fingerprint_keyed(CountCache::key(&seg.text), seg, tokens)
}

/// `fingerprint` given the text's count-cache key (`CountCache::key(&seg.text)`): a caller that
/// looked the count up by that key already has it, and hashing the text once serves both (the
/// texts are most of a request's bytes, so the second hash was a tenth of a cached request).
pub fn fingerprint_keyed(text_key: u128, seg: &SegmentData, tokens: usize) -> u64 {
    let mut h = xxh3_64_with_seed(&text_key.to_le_bytes(), tokens as u64);
    if let Some(call) = &seg.tool() {
        h = xxh3_64_with_seed(call.tool.as_deref().unwrap_or("").as_bytes(), h);
        h = xxh3_64_with_seed(call.arguments.as_deref().unwrap_or("").as_bytes(), h);
    }
    if let Some(k) = &seg.key {
        h = xxh3_64_with_seed(k.as_bytes(), h ^ 0x6b65_7973);
    }
    h
}

/// What one fit sent, and how what it did not send left.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sent {
    /// (fingerprint, tokens) of each sent item, in payload order.
    pub items: Vec<(u64, usize)>,
    /// Fingerprint -> how each segment with it left, oldest first (fingerprints can repeat).
    pub left: HashMap<u64, Vec<(Pinned, usize)>>,
    /// The policy's rung names: a cut is repeated only under the same policy.
    pub rungs: Vec<String>,
    /// The request's authoritative total.
    pub total: usize,
    /// Where the payload carries cache breakpoints (Anthropic `cache_control`), as the tokens
    /// before each: what a breakpoint-style cache wrote.
    pub breakpoints: Vec<usize>,
    /// The rendered prompt, for a fit by a chat template: the next fit compares token ids.
    pub prompt: Option<String>,
}

impl Sent {
    /// What `out` sends of segments with fingerprints `fps` and counts `counts`. `front` lists
    /// segments the provider renders before the rest (tool schemas ahead of the messages).
    pub fn of(fps: &[u64], counts: &[usize], front: &[usize], out: &FitOutcome, rungs: Vec<String>) -> Sent {
        let fp = |i: usize| fps.get(i).copied().unwrap_or(0);
        let item = |k: &Kept| match k {
            Kept::Original(i) => (fp(*i), counts.get(*i).copied().unwrap_or(0)),
            Kept::Truncated { index, tokens, .. } => (xxh3_64_with_seed(&fp(*index).to_le_bytes(), *tokens as u64), *tokens),
            Kept::Digest { digest } => {
                let d = out.digests.get(*digest);
                let tokens = d.map_or(0, |d| d.tokens);
                (xxh3_64_with_seed(d.map_or("", |d| d.text.as_str()).as_bytes(), tokens as u64), tokens)
            }
        };
        let is_front = |k: &Kept| matches!(k, Kept::Original(i) if front.contains(i));
        let mut items: Vec<(u64, usize)> = out.kept.iter().filter(|k| is_front(k)).map(item).collect();
        items.extend(out.kept.iter().filter(|k| !is_front(k)).map(item));

        // A digest that a later rung dropped sent nothing: its members count as dropped, by
        // that rung.
        let mut digest_dropped: HashMap<usize, usize> = HashMap::default();
        for r in &out.removals {
            if let (Target::Digest(d), Taken::Drop) = (r.target, r.action) {
                digest_dropped.insert(d, r.rung);
            }
        }
        let digest_of = |m: usize| out.digests.iter().position(|d| d.members.contains(&m));
        let mut gone: Vec<(usize, Pinned, usize)> = Vec::new();
        for r in &out.removals {
            match (r.target, r.action) {
                (Target::Segment(i), Taken::Drop) => gone.push((i, Pinned::Drop, r.rung)),
                (Target::Segment(i), Taken::Digest) => match digest_of(i).and_then(|d| digest_dropped.get(&d)) {
                    Some(&rung) => gone.push((i, Pinned::Drop, rung)),
                    None => gone.push((i, Pinned::Digest, r.rung)),
                },
                (Target::Digest(_), _) => {}
            }
        }
        for t in &out.truncations {
            gone.push((t.index, Pinned::Truncate(t.after), t.rung));
        }
        gone.sort_by_key(|g| g.0);
        let mut left: HashMap<u64, Vec<(Pinned, usize)>> = HashMap::default();
        for (i, how, rung) in gone {
            left.entry(fp(i)).or_default().push((how, rung));
        }
        Sent { items, left, rungs, total: out.total, breakpoints: Vec::new(), prompt: None }
    }

    /// The tokens before each cache breakpoint of the payload `out` sends, in payload order
    /// (`front` first, as `of` orders it): a breakpoint closes each kept segment `flagged` says
    /// carries one, and a digest never does.
    pub fn marks(counts: &[usize], front: &[usize], out: &FitOutcome, flagged: &[bool]) -> Vec<usize> {
        let is_front = |k: &&Kept| matches!(k, Kept::Original(i) if front.contains(i));
        let in_order = out.kept.iter().filter(is_front).chain(out.kept.iter().filter(|k| !is_front(k)));
        let mut at = 0usize;
        let mut marks = Vec::new();
        for k in in_order {
            let (index, tokens) = match k {
                Kept::Original(i) => (Some(*i), counts.get(*i).copied().unwrap_or(0)),
                Kept::Truncated { index, tokens, .. } => (Some(*index), *tokens),
                Kept::Digest { digest } => (None, out.digests.get(*digest).map_or(0, |d| d.tokens)),
            };
            at = at.saturating_add(tokens);
            if index.is_some_and(|i| flagged.get(i).copied().unwrap_or(false)) {
                marks.push(at);
            }
        }
        marks
    }

    /// The leading tokens `self` (this request) shares with `previous`: the items equal from the
    /// start, whole.
    pub fn unchanged_prefix(&self, previous: &Sent) -> usize {
        self.items
            .iter()
            .zip(&previous.items)
            .take_while(|(a, b)| a == b)
            .fold(0usize, |n, (a, _)| n.saturating_add(a.1))
    }

    /// The previous request's removals, found in a request of segments with fingerprints `fps`
    /// (each matched once, oldest first), and the tokens of the segments the previous request
    /// never saw (what this turn added).
    pub fn pins_for(&self, fps: &[u64], counts: &[usize]) -> (Vec<Pin>, usize) {
        let seen: rustc_hash::FxHashSet<u64> = self.items.iter().map(|i| i.0).collect();
        let mut used: HashMap<u64, usize> = HashMap::default();
        let mut pins = Vec::new();
        let mut added = 0usize;
        for (i, fp) in fps.iter().enumerate() {
            if let Some(ways) = self.left.get(fp) {
                let k = used.entry(*fp).or_insert(0);
                if let Some(&(how, rung)) = ways.get(*k) {
                    *k += 1;
                    pins.push(Pin { segment: i, how, rung });
                    continue;
                }
            }
            if !seen.contains(fp) {
                added = added.saturating_add(counts.get(i).copied().unwrap_or(0));
            }
        }
        (pins, added)
    }
}
