//! Which units a rung may take, and in what order: the units in its layers that are neither
//! protected nor gone, less what its filter leaves out and what its floor keeps.

use rustc_hash::FxHashSet as HashSet;

use super::ladder::Ladder;
use super::policy::{Filter, Order, Rung};
use super::rank::{sort_by_rank, RankKey};

/// A rung's candidates in the order it takes them, the units its floor held back, and what all
/// the units it reaches hold.
pub(super) struct Selection {
    pub order: Vec<usize>,
    pub held_back: Vec<usize>,
    pub rung_tokens: usize,
    /// How many segments the candidates hold: the most removals the rung can make.
    pub members: usize,
}

impl Ladder<'_> {
    pub(super) fn select(&self, rung: &Rung) -> Selection {
        let reaches = |u: usize| {
            let unit = &self.units[u];
            unit.alive && !unit.protected && unit.layers.intersects(rung.layers)
        };
        let covered: HashSet<&str> = if rung.filter == Some(Filter::Covered) {
            (0..self.segs.len())
                .filter(|&i| self.seg_alive[i] && self.segs[i].level() == Some(2))
                .flat_map(|i| self.segs[i].covers().iter().map(String::as_str))
                .collect()
        } else {
            HashSet::default()
        };
        let floor = rung.floor;
        let mut held_back = Vec::new();
        // Sized once for the most there can be: a vector grown by doubling copies itself.
        let mut candidates = Vec::with_capacity(self.units.len());
        let mut rung_tokens = 0;
        let mut members = 0;
        if floor.keep_first > 0 || floor.keep_last > 0 || floor.keep_top > 0 {
            let eligible: Vec<usize> = (0..self.units.len()).filter(|&u| reaches(u)).collect();
            let kept = self.floor_kept(&eligible, rung);
            for &u in &eligible {
                rung_tokens += self.unit_tokens(u);
                if self.passes(u, rung.filter, &covered) {
                    if kept[u] {
                        held_back.push(u);
                    } else {
                        members += self.members(u).len();
                        candidates.push(u);
                    }
                }
            }
        } else {
            // Without a floor, one pass: nothing needs the list of what the rung reaches.
            for u in (0..self.units.len()).filter(|&u| reaches(u)) {
                rung_tokens += self.unit_tokens(u);
                if self.passes(u, rung.filter, &covered) {
                    members += self.members(u).len();
                    candidates.push(u);
                }
            }
        }
        // Units are numbered in input order, so position orders need no sort.
        let order = match rung.order {
            Order::Oldest => candidates,
            Order::Newest => {
                candidates.reverse();
                candidates
            }
            _ => {
                // Each key sorted with its unit, not through an index into the keys: a sort that
                // chases indices misses the cache on every comparison once the request is large.
                let mut keyed: Vec<(RankKey, usize)> = candidates.iter().map(|&u| (self.rank_key(u), u)).collect();
                sort_by_rank(rung.order, &mut keyed);
                keyed.into_iter().map(|(_, u)| u).collect()
            }
        };
        Selection { order, held_back, rung_tokens, members }
    }

    fn rank_key(&self, u: usize) -> RankKey {
        let unit = &self.units[u];
        RankKey {
            position: unit.position,
            tokens: self.unit_tokens(u),
            score: unit.score,
            recoverable: unit.recoverable,
            stale: unit.stale,
        }
    }

    fn passes(&self, u: usize, filter: Option<Filter>, covered: &HashSet<&str>) -> bool {
        let unit = &self.units[u];
        let members = || self.members(u).map(|m| self.segs[m]);
        match filter {
            None => true,
            Some(Filter::Stale) => unit.stale,
            Some(Filter::Recoverable) => unit.recoverable,
            Some(Filter::Level(n)) => members().any(|s| s.level() == Some(n)),
            Some(Filter::Covered) => members().any(|s| {
                s.level() == Some(1) && s.key.as_deref().is_some_and(|k| covered.contains(k))
            }),
        }
    }

    /// Units the floor keeps from this rung, judged over everything the rung could reach.
    fn floor_kept(&self, eligible: &[usize], rung: &Rung) -> Vec<bool> {
        let mut kept = vec![false; self.units.len()];
        if rung.floor.keep_first > 0 || rung.floor.keep_last > 0 {
            let exchanges: Vec<usize> = eligible.iter().copied().filter(|&u| self.units[u].exchange).collect();
            for &u in exchanges.iter().take(rung.floor.keep_first).chain(exchanges.iter().rev().take(rung.floor.keep_last)) {
                kept[u] = true;
            }
        }
        let top = rung.floor.keep_top;
        if top > 0 {
            // Highest score first, ties by position: a total order, so the first `top` are one
            // set whichever way they are found, and a partition finds them without a full sort.
            let by_score = |a: &usize, b: &usize| {
                (self.units[*b].score + 0.0)
                    .total_cmp(&(self.units[*a].score + 0.0))
                    .then(self.units[*a].position.cmp(&self.units[*b].position))
            };
            let mut best = eligible.to_vec();
            if top < best.len() {
                best.select_nth_unstable_by(top - 1, by_score);
                best.truncate(top);
            }
            for u in best {
                kept[u] = true;
            }
        }
        kept
    }
}
