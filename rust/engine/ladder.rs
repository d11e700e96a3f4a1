//! The ladder: a policy's rungs run in order against projected totals. A rung's effect on the
//! total is the size of what it removed, already known, so no rung re-counts anything; only a
//! truncated body and a digest record count new text, once each.

use rustc_hash::FxHashSet as HashSet;

use super::digest::digest_text;
use super::outcome::{DigestRecord, Removal, Row, Section, Taken, Target, Truncation};
use super::policy::{Action, Filter, Order, Policy};
use super::rank::{sort_indices, RankKey};
use super::segment::{Layer, LayerSet, SegmentData};
use super::units::{build_units, Unit};
use super::source::TokenSource;
use crate::error::CtxResult;
use crate::limits::{signed, unsigned};

/// Units between checks for an interruption (Ctrl-C) in a long rung: ~1 ms of work.
const INTERRUPT_EVERY: usize = 4096;

pub(super) struct Ladder<'a> {
    pub(super) segs: &'a [&'a SegmentData],
    pub(super) policy: &'a Policy,
    pub(super) counter: &'a dyn TokenSource,
    pub(super) ceiling: usize,
    pub(super) sep_tokens: usize,
    /// What a segment the ladder creates (a digest) costs beyond its text: message framing.
    pub(super) framing: usize,
    pub(super) units: Vec<Unit>,
    /// Units still in the request: the last one is never dropped.
    pub(super) live_units: usize,
    // Per-segment state as parallel arrays indexed like `segs`: the inputs stay borrowed and
    // untouched, and the hot loop reads plain slices instead of chasing per-segment structs.
    pub(super) seg_tokens: Vec<usize>,
    pub(super) seg_alive: Vec<bool>,
    pub(super) seg_text: Vec<Option<String>>,
    pub(super) digests: Vec<DigestRecord>,
    pub(super) sum: usize,
    pub(super) pieces: usize,
    /// Authoritative minus projected, learnt from the joined count.
    pub(super) correction: i64,
    pub(super) layer_sizes: [usize; 8],
    pub(super) removals: Vec<Removal>,
    pub(super) truncations: Vec<Truncation>,
    pub(super) sections: Vec<Section>,
    pub(super) rungs_fired: Vec<usize>,
    pub(super) floor_reached: bool,
}

impl<'a> Ladder<'a> {
    pub(super) fn new(
        segs: &'a [&'a SegmentData],
        counts: &[usize],
        policy: &'a Policy,
        counter: &'a dyn TokenSource,
        ceiling: usize,
        sep_tokens: usize,
        framing: usize,
    ) -> Self {
        let mut layer_sizes = [0usize; 8];
        for (s, &n) in segs.iter().zip(counts) {
            layer_sizes[s.layer.index()] += n;
        }
        let mut lad = Ladder {
            segs,
            policy,
            counter,
            ceiling,
            sep_tokens,
            framing,
            live_units: 0,
            units: build_units(segs, policy),
            seg_tokens: counts.to_vec(),
            seg_alive: vec![true; segs.len()],
            seg_text: vec![None; segs.len()],
            digests: Vec::new(),
            sum: counts.iter().sum(),
            pieces: segs.len(),
            correction: 0,
            layer_sizes,
            removals: Vec::new(),
            truncations: Vec::new(),
            sections: Vec::new(),
            rungs_fired: Vec::new(),
            floor_reached: false,
        };
        lad.live_units = lad.units.len();
        lad
    }

    pub(super) fn total(&self) -> usize {
        let joins = self.sep_tokens * self.pieces.saturating_sub(1);
        unsigned(signed(self.sum + joins) + self.correction)
    }

    pub(super) fn over(&self) -> i64 {
        signed(self.total()) - signed(self.ceiling)
    }

    pub(super) fn unit_tokens(&self, u: usize) -> usize {
        let unit = &self.units[u];
        match unit.digest {
            Some(d) => self.digests[d].tokens,
            None => unit.members.iter().filter(|&&m| self.seg_alive[m]).map(|&m| self.seg_tokens[m]).sum(),
        }
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

    /// The layer a row reports: the unit's first member in the rung's layers.
    fn row_layer(&self, u: usize, layers: LayerSet) -> Layer {
        let unit = &self.units[u];
        unit.members
            .iter()
            .map(|&m| self.segs[m].layer)
            .find(|l| layers.contains(*l))
            .unwrap_or(self.segs[unit.members[0]].layer)
    }

    fn passes(&self, u: usize, filter: Option<Filter>, covered: &HashSet<&str>) -> bool {
        let unit = &self.units[u];
        let members = || unit.members.iter().map(|&m| self.segs[m]);
        match filter {
            None => true,
            Some(Filter::Stale) => unit.stale,
            Some(Filter::Recoverable) => unit.recoverable,
            Some(Filter::Level(n)) => members().any(|s| s.level == Some(n)),
            Some(Filter::Covered) => members().any(|s| {
                s.level == Some(1) && s.key.as_deref().is_some_and(|k| covered.contains(k))
            }),
        }
    }

    fn row(&self, u: usize, layers: LayerSet, before: usize, action: &'static str) -> Row {
        let layer = self.row_layer(u, layers);
        let total_after = self.total();
        // A unit is named by its group, else its key, else its position.
        let first = self.units[u].position;
        let s = self.segs[first];
        let label = s.group.clone().or_else(|| s.key.clone()).unwrap_or_else(|| format!("#{first}"));
        Row {
            label,
            delta: before.saturating_sub(total_after),
            action,
            layer,
            // Layers that share a label ("history") are one column in the trace.
            layer_after: Layer::ALL
                .iter()
                .filter(|l| self.policy.label(**l) == self.policy.label(layer))
                .map(|l| self.layer_sizes[l.index()])
                .sum(),
            total_after,
            over_after: signed(total_after) - signed(self.ceiling),
        }
    }

    fn drop_unit(&mut self, u: usize, rung: usize) {
        let unit_digest = self.units[u].digest;
        self.units[u].alive = false;
        self.live_units -= 1;
        if let Some(d) = unit_digest {
            let rec = &self.digests[d];
            self.layer_sizes[rec.layer.index()] -= rec.tokens;
            self.sum -= rec.tokens;
            self.pieces -= 1;
            self.removals.push(Removal { target: Target::Digest(d), rung, tokens: rec.tokens, action: Taken::Drop });
            return;
        }
        for i in 0..self.units[u].members.len() {
            let m = self.units[u].members[i];
            if !self.seg_alive[m] {
                continue;
            }
            self.seg_alive[m] = false;
            let t = self.seg_tokens[m];
            self.layer_sizes[self.segs[m].layer.index()] -= t;
            self.sum -= t;
            self.pieces -= 1;
            self.removals.push(Removal { target: Target::Segment(m), rung, tokens: t, action: Taken::Drop });
        }
    }

    /// Shortens the unit's largest body in the rung's layers; returns whether anything changed.
    fn truncate_unit(&mut self, u: usize, rung: usize, layers: LayerSet, min_tokens: usize) -> CtxResult<bool> {
        let Some(&m) = self.units[u]
            .members
            .iter()
            .filter(|&&m| self.seg_alive[m] && layers.contains(self.segs[m].layer))
            .max_by_key(|&&m| (self.seg_tokens[m], std::cmp::Reverse(m)))
        else {
            return Ok(false);
        };
        let before = self.seg_tokens[m];
        let over = unsigned(self.over());
        if before <= min_tokens || over == 0 {
            return Ok(false);
        }
        // A caller-given count covers more than the text (message framing, say): that overhead
        // stays with the shortened body.
        let overhead = match self.segs[m].tokens {
            Some(given) => given.saturating_sub(self.counter.count(&self.segs[m].text)?),
            None => 0,
        };
        let target = before.saturating_sub(over).max(min_tokens).saturating_sub(overhead);
        let text = self.seg_text[m].as_deref().unwrap_or(&self.segs[m].text);
        let cut = self.counter.truncate(text, target)?;
        let after = self.counter.count(&cut)? + overhead;
        if after >= before {
            return Ok(false);
        }
        self.seg_tokens[m] = after;
        self.seg_text[m] = Some(cut);
        self.layer_sizes[self.segs[m].layer.index()] -= before - after;
        self.sum -= before - after;
        match self.truncations.iter_mut().find(|t| t.index == m) {
            Some(t) => t.after = after,
            None => self.truncations.push(Truncation { index: m, rung, before, after }),
        }
        Ok(true)
    }

    /// Replaces a tool exchange by its record when that is smaller; returns whether it did.
    fn digest_unit(&mut self, u: usize, rung: usize) -> CtxResult<bool> {
        let unit = &self.units[u];
        if unit.digest.is_some() {
            return Ok(false);
        }
        let alive: Vec<usize> = unit.members.iter().copied().filter(|&m| self.seg_alive[m]).collect();
        if !alive.iter().any(|&m| self.segs[m].layer == Layer::ToolResult) {
            return Ok(false);
        }
        let members: Vec<&SegmentData> = alive.iter().map(|&m| self.segs[m]).collect();
        let tokens: Vec<usize> = alive.iter().map(|&m| self.seg_tokens[m]).collect();
        let ordinal = self.units.iter().take(u + 1).filter(|x| x.exchange).count();
        let text = digest_text(&members, &tokens, ordinal);
        let d_tokens = self.counter.count(&text)? + self.framing;
        let unit_tokens: usize = tokens.iter().sum();
        // Smaller than what it replaces, joins aside: a record that only pays for itself through
        // the separators it saves would make the ledger's "digested" negative.
        if d_tokens >= unit_tokens {
            return Ok(false);
        }
        let layer = self.segs[alive[0]].layer;
        for &m in &alive {
            self.seg_alive[m] = false;
            let t = self.seg_tokens[m];
            self.layer_sizes[self.segs[m].layer.index()] -= t;
            self.sum -= t;
            self.pieces -= 1;
            self.removals.push(Removal { target: Target::Segment(m), rung, tokens: t, action: Taken::Digest });
        }
        self.digests.push(DigestRecord { members: alive, text, tokens: d_tokens, layer, rung });
        self.units[u].digest = Some(self.digests.len() - 1);
        self.layer_sizes[layer.index()] += d_tokens;
        self.sum += d_tokens;
        self.pieces += 1;
        Ok(true)
    }

    pub(super) fn run_rung(&mut self, r: usize) -> CtxResult<()> {
        let rung = self.policy.rungs[r].clone();
        let eligible: Vec<usize> = (0..self.units.len())
            .filter(|&u| {
                let unit = &self.units[u];
                unit.alive && !unit.protected && unit.layers.intersects(rung.layers)
            })
            .collect();
        // Floors are judged over everything the rung could reach, before its filter.
        let mut floor_kept = vec![false; self.units.len()];
        let exchanges: Vec<usize> = eligible.iter().copied().filter(|&u| self.units[u].exchange).collect();
        for &u in exchanges.iter().take(rung.floor.keep_first).chain(exchanges.iter().rev().take(rung.floor.keep_last)) {
            floor_kept[u] = true;
        }
        if rung.floor.keep_top > 0 {
            let mut by_score = eligible.clone();
            by_score.sort_by(|&a, &b| {
                (self.units[b].score + 0.0)
                    .total_cmp(&(self.units[a].score + 0.0))
                    .then(self.units[a].position.cmp(&self.units[b].position))
            });
            for &u in by_score.iter().take(rung.floor.keep_top) {
                floor_kept[u] = true;
            }
        }
        let covered: HashSet<&str> = if rung.filter == Some(Filter::Covered) {
            (0..self.segs.len())
                .filter(|&i| self.seg_alive[i] && self.segs[i].level == Some(2))
                .flat_map(|i| self.segs[i].covers.iter().map(String::as_str))
                .collect()
        } else {
            HashSet::default()
        };
        let candidates: Vec<usize> = eligible
            .iter()
            .copied()
            .filter(|&u| !floor_kept[u] && self.passes(u, rung.filter, &covered))
            .collect();
        // Units are numbered in input order, so position orders need no sort.
        let order: Vec<usize> = match rung.order {
            Order::Oldest => candidates,
            Order::Newest => candidates.into_iter().rev().collect(),
            _ => {
                let keys: Vec<RankKey> = candidates.iter().map(|&u| self.rank_key(u)).collect();
                sort_indices(rung.order, &keys).into_iter().map(|k| candidates[k]).collect()
            }
        };

        let mut rung_tokens: usize = eligible.iter().map(|&u| self.unit_tokens(u)).sum();
        let mut rows = Vec::new();
        self.counter.interrupted()?;
        for (step, u) in order.into_iter().enumerate() {
            if self.over() <= 0 {
                break;
            }
            if step % INTERRUPT_EVERY == INTERRUPT_EVERY - 1 {
                self.counter.interrupted()?;
            }
            let before_total = self.total();
            let before_unit = self.unit_tokens(u);
            let changed = match rung.action {
                Action::Drop => {
                    if rung.floor.min_tokens > 0 && rung_tokens.saturating_sub(before_unit) < rung.floor.min_tokens {
                        break;
                    }
                    if before_unit == 0 {
                        // Frees nothing: dropping it would only lose it.
                        continue;
                    }
                    if self.live_units <= 1 {
                        // Never an empty request: the last unit stays, and the fit is Unfittable.
                        break;
                    }
                    self.drop_unit(u, r);
                    true
                }
                Action::Truncate { min_tokens } => self.truncate_unit(u, r, rung.layers, min_tokens)?,
                Action::Digest => self.digest_unit(u, r)?,
            };
            if changed {
                rung_tokens = rung_tokens.saturating_sub(before_unit.saturating_sub(self.unit_tokens(u)));
                let action = match rung.action {
                    Action::Drop => "drop",
                    Action::Truncate { .. } => "truncate",
                    Action::Digest => "digest",
                };
                rows.push(self.row(u, rung.layers, before_total, action));
            }
        }
        // Still over once the rung has nothing left it may take: its floor (or its supply) is reached.
        let floor_reached = self.over() > 0;
        self.floor_reached |= floor_reached;
        if !rows.is_empty() && !self.rungs_fired.contains(&r) {
            self.rungs_fired.push(r);
        }
        if !rows.is_empty() || floor_reached {
            self.sections.push(Section {
                rung: r,
                name: rung.name.clone(),
                floor: rung.floor.describe(),
                rows,
                floor_reached,
            });
        }
        Ok(())
    }
}
