//! The byte-pair merge loop with a heap: n log n in the length of a piece, never quadratic.
//!
//! Hugging Face's BPE merges, in a word, the adjacent pair whose merge comes first in the file,
//! leftmost first among equals, until no listed pair is left. The fast engine uses it in two
//! places: to serve the pieces the `bpe` crate's automaton cannot (tokens its merges never reach,
//! or reach through a token of later rank, as 678 of Llama 3's do), with the file's own merges;
//! and, at build time, to check which tokens the automaton can hold (each must encode to itself
//! when every pair whose bytes form a token may merge, rank-first: what the crate asserts).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

const NONE: usize = usize::MAX;

/// Merges `symbols` while `pair(left, right)` names a merge: Some((priority, merged)), the lowest
/// priority first, the leftmost first among equals.
pub fn merge_all(mut symbols: Vec<u32>, pair: &dyn Fn(u32, u32) -> Option<(u32, u32)>) -> Vec<u32> {
    let n = symbols.len();
    if n < 2 {
        return symbols;
    }
    let mut prev: Vec<usize> = (0..n).map(|i| if i == 0 { NONE } else { i - 1 }).collect();
    let mut next: Vec<usize> = (0..n).map(|i| if i + 1 < n { i + 1 } else { NONE }).collect();
    let mut alive = vec![true; n];
    let mut heap: BinaryHeap<Reverse<(u32, usize, u32)>> = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        if let Some((p, merged)) = pair(symbols[i], symbols[i + 1]) {
            heap.push(Reverse((p, i, merged)));
        }
    }
    while let Some(Reverse((p, i, merged))) = heap.pop() {
        let j = next[i];
        // A stale entry: its left symbol was merged away, or the pair it saw has changed.
        if !alive[i] || j == NONE || pair(symbols[i], symbols[j]) != Some((p, merged)) {
            continue;
        }
        symbols[i] = merged;
        alive[j] = false;
        let k = next[j];
        next[i] = k;
        if k != NONE {
            prev[k] = i;
            if let Some((p2, m2)) = pair(symbols[i], symbols[k]) {
                heap.push(Reverse((p2, i, m2)));
            }
        }
        let h = prev[i];
        if h != NONE {
            if let Some((p2, m2)) = pair(symbols[h], symbols[i]) {
                heap.push(Reverse((p2, h, m2)));
            }
        }
    }
    symbols.into_iter().zip(alive).filter_map(|(s, a)| a.then_some(s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_priority_first_leftmost_among_equals() {
        // ids: a=0 b=1 ab=2 bb=3; "ab" merges before "bb".
        let pair = |l: u32, r: u32| match (l, r) {
            (0, 1) => Some((0, 2)),
            (1, 1) => Some((1, 3)),
            _ => None,
        };
        assert_eq!(merge_all(vec![0, 1, 1], &pair), vec![2, 1]);
        assert_eq!(merge_all(vec![1, 1, 1], &pair), vec![3, 1], "leftmost first");
        assert_eq!(merge_all(vec![1], &pair), vec![1]);
    }

    #[test]
    fn a_long_run_is_not_quadratic() {
        // Counted, not timed: each merge looks at most three pairs, so a megabyte run costs a
        // few million lookups, where a rescanning loop would cost about 10^12.
        let calls = std::cell::Cell::new(0usize);
        let pair = |l: u32, r: u32| {
            calls.set(calls.get() + 1);
            (l == r).then_some((l, l + 1))
        };
        let n = 1 << 20;
        assert_eq!(merge_all(vec![0; n], &pair), vec![20]);
        assert!(calls.get() <= 4 * n, "{} pair lookups for {n} symbols", calls.get());
    }
}
