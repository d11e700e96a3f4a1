//! Orders of sacrifice. One sort per rung; ties always fall back to input position.

use std::cmp::Ordering;

use super::policy::Order;

/// What an order needs to know about a candidate.
#[derive(Clone, Copy, Debug)]
pub struct RankKey {
    pub position: usize,
    pub tokens: usize,
    pub score: f64,
    pub recoverable: bool,
    pub stale: bool,
}

pub fn compare(order: Order, a: &RankKey, b: &RankKey) -> Ordering {
    let by_position = a.position.cmp(&b.position);
    // -0.0 and 0.0 are the same relevance (total_cmp alone would order them).
    let by_score = || (a.score + 0.0).total_cmp(&(b.score + 0.0));
    match order {
        Order::Oldest => by_position,
        Order::Newest => by_position.reverse(),
        Order::LowestScore => by_score().then(by_position),
        Order::Largest => b.tokens.cmp(&a.tokens).then(by_position),
        Order::Rank => (!a.recoverable)
            .cmp(&!b.recoverable)
            .then((!a.stale).cmp(&!b.stale))
            .then(by_score())
            .then(b.tokens.cmp(&a.tokens))
            .then(by_position),
    }
}

/// Positions of `keys` in the order they would be sacrificed.
pub fn sort_indices(order: Order, keys: &[RankKey]) -> Vec<usize> {
    let mut keyed: Vec<(RankKey, usize)> = keys.iter().copied().zip(0..).collect();
    sort_by_rank(order, &mut keyed);
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Sorts (key, id) pairs into the order they would be sacrificed, equal keys by id: the order a
/// stable sort of keys listed by increasing id gives, with each key moved with its id instead of
/// looked up through it.
pub fn sort_by_rank(order: Order, keyed: &mut [(RankKey, usize)]) {
    keyed.sort_unstable_by(|a, b| compare(order, &a.0, &b.0).then(a.1.cmp(&b.1)));
}

/// The rank entry point for callers with their own structures: which indices to evict, in rank
/// order, to free at least `deficit` tokens. Protected entries are never returned; when the
/// unprotected ones cannot cover the deficit, all of them are returned.
pub fn evict_for_deficit(
    tokens: &[usize],
    recoverable: &[bool],
    stale: &[bool],
    relevance: &[f64],
    protected: &[bool],
    deficit: usize,
) -> Vec<usize> {
    let keys: Vec<RankKey> = (0..tokens.len())
        .filter(|&i| !protected[i])
        .map(|i| RankKey {
            position: i,
            tokens: tokens[i],
            score: relevance[i],
            recoverable: recoverable[i],
            stale: stale[i],
        })
        .collect();
    let mut out = Vec::new();
    let mut freed = 0usize;
    for k in sort_indices(Order::Rank, &keys) {
        if freed >= deficit {
            break;
        }
        out.push(keys[k].position);
        freed += keys[k].tokens;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_is_recoverable_then_stale_then_relevance_then_size() {
        // 0: pinned-ish instruction, not recoverable, fresh, relevant
        // 1: file read, recoverable, stale, big
        // 2: search result, recoverable, fresh, low relevance
        // 3: few-shot example, not recoverable, fresh, mid relevance, big
        let tokens = [300, 6000, 900, 1200];
        let order = evict_for_deficit(
            &tokens,
            &[false, true, true, false],
            &[false, true, false, false],
            &[0.9, 0.2, 0.1, 0.5],
            &[false; 4],
            usize::MAX,
        );
        assert_eq!(order, vec![1, 2, 3, 0]);
        let just_enough = evict_for_deficit(
            &tokens,
            &[false, true, true, false],
            &[false, true, false, false],
            &[0.9, 0.2, 0.1, 0.5],
            &[false, false, false, true],
            4000,
        );
        assert_eq!(just_enough, vec![1]);
    }

    #[test]
    fn ties_fall_back_to_position() {
        let keys: Vec<RankKey> = (0..5)
            .map(|i| RankKey { position: i, tokens: 10, score: 0.5, recoverable: false, stale: false })
            .collect();
        for order in [Order::Oldest, Order::LowestScore, Order::Largest, Order::Rank] {
            assert_eq!(sort_indices(order, &keys), vec![0, 1, 2, 3, 4]);
        }
        assert_eq!(sort_indices(Order::Newest, &keys), vec![4, 3, 2, 1, 0]);
        let signed: Vec<RankKey> = [0.0, -0.0]
            .iter()
            .enumerate()
            .map(|(i, &s)| RankKey { position: i, tokens: 10, score: s, recoverable: false, stale: false })
            .collect();
        assert_eq!(sort_indices(Order::LowestScore, &signed), vec![0, 1]);
    }
}
