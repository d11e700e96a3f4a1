//! `fit`: run a policy's rungs against projected totals, then make one authoritative count.
//!
//! Every unit is counted before the ladder starts; a rung's effect on the total is the size of
//! the unit it removed, which is already known, so no rung re-counts anything. Only truncation
//! and digests count new text (the shortened body, the record), once each.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::digest::{digest_text, thousands};
use super::policy::{Action, Filter, Order, Policy};
use super::rank::{sort_indices, RankKey};
use super::segment::{Layer, LayerSet, SegmentData};
use super::trace::{Row, Section, Trace};
use crate::error::{CtxError, CtxResult};

/// What the ladder needs from a tokenizer.
pub trait Counter {
    fn count(&self, text: &str) -> CtxResult<usize>;
    fn truncate(&self, text: &str, max_tokens: usize) -> CtxResult<String>;
    /// Exact count of `texts.join(sep)` given each text's exact count.
    fn count_joined(&self, texts: &[&str], counts: &[usize], sep: &str) -> CtxResult<usize>;
}

#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    pub window: usize,
    pub reserve: usize,
    pub caps: [Option<usize>; 8],
}

impl Budget {
    pub fn new(window: usize, reserve: usize, caps: [Option<usize>; 8]) -> CtxResult<Self> {
        if window == 0 {
            return Err(CtxError::invalid("window must be > 0 tokens"));
        }
        if reserve >= window {
            return Err(CtxError::invalid(format!(
                "reserve ({reserve}) must be smaller than window ({window}): nothing would be left for input"
            )));
        }
        Ok(Self { window, reserve, caps })
    }

    pub fn ceiling(&self) -> usize {
        self.window - self.reserve
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kept {
    Original(usize),
    Truncated { index: usize, text: String, tokens: usize },
    Digest { digest: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Segment(usize),
    Digest(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    Drop,
    Digest,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Removal {
    pub target: Target,
    pub rung: usize,
    pub tokens: usize,
    pub action: Taken,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    pub index: usize,
    pub rung: usize,
    pub before: usize,
    pub after: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DigestRecord {
    pub members: Vec<usize>,
    pub text: String,
    pub tokens: usize,
    pub layer: Layer,
    pub rung: usize,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct FitLedger {
    pub evicted_recoverable: usize,
    pub evicted_dispensable: usize,
    pub truncated: usize,
    pub digested: usize,
    /// Removals (rows) per rung, by rung index.
    pub rung_firings: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FitOutcome {
    pub kept: Vec<Kept>,
    pub removals: Vec<Removal>,
    pub truncations: Vec<Truncation>,
    pub digests: Vec<DigestRecord>,
    pub total: usize,
    pub ceiling: usize,
    pub over_by: usize,
    pub cap_overruns: Vec<(Layer, usize)>,
    pub rungs_fired: Vec<usize>,
    pub count_calls: usize,
    pub trace: Trace,
    pub ledger: FitLedger,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Unfittable {
    /// Each protected component (label, tokens), then what the floors kept.
    pub components: Vec<(String, usize)>,
    pub floor_tokens: usize,
    pub ceiling: usize,
    pub total: usize,
    pub shortfall: usize,
}

impl Unfittable {
    pub fn message(&self) -> String {
        let parts: Vec<String> = self
            .components
            .iter()
            .map(|(l, n)| format!("{l} {}", thousands(*n)))
            .collect();
        let floors = if self.floor_tokens > 0 {
            format!(" + {} kept by floors", thousands(self.floor_tokens))
        } else {
            String::new()
        };
        format!(
            "cannot fit: the protected set ({}){floors} leaves {} tokens against a ceiling of {}; short by {}",
            if parts.is_empty() { "empty".to_string() } else { parts.join(", ") },
            thousands(self.total),
            thousands(self.ceiling),
            thousands(self.shortfall)
        )
    }
}

pub enum FitError {
    Unfittable(Box<Unfittable>),
    Other(CtxError),
}

impl From<CtxError> for FitError {
    fn from(e: CtxError) -> Self {
        FitError::Other(e)
    }
}

struct Unit {
    members: Vec<usize>,
    position: usize,
    protected: bool,
    layers: LayerSet,
    recoverable: bool,
    stale: bool,
    score: f64,
    exchange: bool,
    alive: bool,
    digest: Option<usize>,
}

struct Ladder<'a> {
    segs: &'a [&'a SegmentData],
    policy: &'a Policy,
    counter: &'a dyn Counter,
    ceiling: usize,
    sep_tokens: usize,
    /// What a segment the ladder creates (a digest) costs beyond its text: message framing.
    framing: usize,
    units: Vec<Unit>,
    seg_tokens: Vec<usize>,
    seg_alive: Vec<bool>,
    seg_text: Vec<Option<String>>,
    digests: Vec<DigestRecord>,
    sum: usize,
    pieces: usize,
    /// Authoritative minus projected, learnt from the joined count.
    correction: i64,
    layer_sizes: [usize; 8],
    removals: Vec<Removal>,
    truncations: Vec<Truncation>,
    sections: Vec<Section>,
    rungs_fired: Vec<usize>,
    floor_reached: bool,
}

impl<'a> Ladder<'a> {
    fn total(&self) -> usize {
        let joins = self.sep_tokens * self.pieces.saturating_sub(1);
        ((self.sum + joins) as i64 + self.correction).max(0) as usize
    }

    fn over(&self) -> i64 {
        self.total() as i64 - self.ceiling as i64
    }

    fn unit_tokens(&self, u: usize) -> usize {
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
            over_after: total_after as i64 - self.ceiling as i64,
        }
    }

    fn drop_unit(&mut self, u: usize, rung: usize) {
        let unit_digest = self.units[u].digest;
        self.units[u].alive = false;
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
        let over = self.over().max(0) as usize;
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
        let saved_joins = self.sep_tokens * alive.len().saturating_sub(1);
        if d_tokens >= unit_tokens + saved_joins {
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

    fn run_rung(&mut self, r: usize) -> CtxResult<()> {
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
        for u in order {
            if self.over() <= 0 {
                break;
            }
            let before_total = self.total();
            let before_unit = self.unit_tokens(u);
            let changed = match rung.action {
                Action::Drop => {
                    if rung.floor.min_tokens > 0 && rung_tokens.saturating_sub(before_unit) < rung.floor.min_tokens {
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

fn build_units(segs: &[&SegmentData], policy: &Policy) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    let mut by_group: HashMap<&str, usize> = HashMap::default();
    for (i, s) in segs.iter().enumerate() {
        let slot = match s.group.as_deref() {
            Some(g) => match by_group.get(g) {
                Some(&u) => Some(u),
                None => {
                    by_group.insert(g, units.len());
                    None
                }
            },
            None => None,
        };
        let u = match slot {
            Some(u) => u,
            None => {
                units.push(Unit {
                    members: Vec::new(),
                    position: i,
                    protected: false,
                    layers: LayerSet::default(),
                    recoverable: true,
                    stale: true,
                    score: f64::NEG_INFINITY,
                    exchange: false,
                    alive: true,
                    digest: None,
                });
                units.len() - 1
            }
        };
        let unit = &mut units[u];
        unit.members.push(i);
        unit.layers.insert(s.layer);
        unit.protected |= policy.protected.contains(s.layer);
        unit.recoverable &= s.recoverable;
        unit.stale &= s.stale;
        unit.score = unit.score.max(s.score);
        unit.exchange |= s.layer == Layer::Conversation;
    }
    units
}

/// Fits `segs` (with their exact `counts`) under `budget` by `policy`.
pub fn fit(
    segs: &[&SegmentData],
    counts: &[usize],
    budget: &Budget,
    policy: &Policy,
    counter: &dyn Counter,
    separator: Option<&str>,
    framing: usize,
) -> Result<FitOutcome, FitError> {
    let sep_tokens = match separator {
        Some(s) if !s.is_empty() => counter.count(s)?,
        _ => 0,
    };
    let mut layer_sizes = [0usize; 8];
    for (s, &n) in segs.iter().zip(counts) {
        layer_sizes[s.layer.index()] += n;
    }
    let ceiling = budget.ceiling();
    let mut lad = Ladder {
        segs,
        policy,
        counter,
        ceiling,
        sep_tokens,
        framing,
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
    let start_layers = layer_sizes;
    let start_total = lad.total();

    let mut count_calls = 0;
    let mut next_rung = 0;
    let total = loop {
        while lad.over() > 0 && next_rung < policy.rungs.len() {
            lad.run_rung(next_rung)?;
            if lad.over() > 0 {
                next_rung += 1;
            }
        }
        if lad.over() > 0 {
            return Err(FitError::Unfittable(Box::new(unfittable(&lad))));
        }
        // The one authoritative count of what is sent.
        count_calls += 1;
        let authoritative = match separator {
            None => lad.sum,
            Some(sep) => {
                let (texts, counts) = kept_texts(&lad);
                counter.count_joined(&texts, &counts, sep)?
            }
        };
        let projected = lad.total() as i64 - lad.correction;
        lad.correction = authoritative as i64 - projected;
        if authoritative <= ceiling || next_rung >= policy.rungs.len() {
            if authoritative > ceiling {
                return Err(FitError::Unfittable(Box::new(unfittable(&lad))));
            }
            break authoritative;
        }
    };

    let mut seen = HashSet::default();
    let order_of_first_appearance: Vec<Layer> =
        segs.iter().map(|s| s.layer).filter(|l| seen.insert(*l)).collect();
    let cap_overruns: Vec<(Layer, usize)> = order_of_first_appearance
        .iter()
        .filter_map(|&l| {
            let cap = budget.caps[l.index()]?;
            (start_layers[l.index()] > cap).then(|| (l, start_layers[l.index()] - cap))
        })
        .collect();
    let touched: HashSet<Layer> = lad
        .removals
        .iter()
        .map(|r| match r.target {
            Target::Segment(i) => segs[i].layer,
            Target::Digest(d) => lad.digests[d].layer,
        })
        .chain(lad.truncations.iter().map(|t| segs[t.index].layer))
        .collect();
    let reachable: LayerSet = LayerSet(policy.rungs.iter().fold(0, |m, r| m | r.layers.0));
    let fired_any = !lad.sections.is_empty();
    // Counted before the trace takes the sections.
    let mut rung_firings = vec![0; policy.rungs.len()];
    for s in &lad.sections {
        rung_firings[s.rung] += s.rows.len();
    }
    let trace = Trace {
        window: budget.window,
        reserve: budget.reserve,
        ceiling,
        labels: policy.labels.clone(),
        target: None,
        start_layers: {
            let mut merged: Vec<(String, usize)> = Vec::new();
            for &l in &order_of_first_appearance {
                let label = policy.label(l);
                match merged.iter_mut().find(|(x, _)| x == label) {
                    Some((_, n)) => *n += start_layers[l.index()],
                    None => merged.push((label.to_string(), start_layers[l.index()])),
                }
            }
            merged
        },
        start_total,
        caps: cap_overruns
            .iter()
            .map(|&(l, _)| {
                let cap = budget.caps[l.index()].unwrap_or(0);
                (policy.label(l).to_string(), start_layers[l.index()], cap)
            })
            .collect(),
        sections: std::mem::take(&mut lad.sections),
        final_total: total,
        count_calls,
        untouched: if fired_any {
            // A label is untouched when none of the layers it names lost anything.
            let touched_labels: HashSet<&str> = touched.iter().map(|&l| policy.label(l)).collect();
            let mut out: Vec<String> = Vec::new();
            for &l in &order_of_first_appearance {
                let label = policy.label(l);
                if reachable.contains(l)
                    && !policy.protected.contains(l)
                    && !touched_labels.contains(label)
                    && !out.iter().any(|x| x == label)
                {
                    out.push(label.to_string());
                }
            }
            out
        } else {
            Vec::new()
        },
        units_removed: count_units(&lad, Taken::Drop),
        units_truncated: lad.truncations.iter().filter(|t| lad.seg_alive[t.index]).count(),
        units_digested: lad.digests.len(),
        floor_reached: lad.floor_reached,
    };

    let mut ledger = FitLedger { rung_firings, ..Default::default() };
    for r in &lad.removals {
        match (r.action, r.target) {
            (Taken::Digest, _) => ledger.digested += r.tokens,
            (Taken::Drop, Target::Segment(i)) if segs[i].recoverable => ledger.evicted_recoverable += r.tokens,
            (Taken::Drop, _) => ledger.evicted_dispensable += r.tokens,
        }
    }
    for d in &lad.digests {
        ledger.digested = ledger.digested.saturating_sub(d.tokens);
    }
    ledger.truncated = lad.truncations.iter().map(|t| t.before - t.after).sum();

    Ok(FitOutcome {
        kept: kept_list(&lad),
        removals: lad.removals,
        // A body truncated and then dropped by a later rung is an eviction, not a truncation.
        truncations: lad.truncations.into_iter().filter(|t| lad.seg_alive[t.index]).collect(),
        digests: lad.digests,
        total,
        ceiling,
        over_by: start_total.saturating_sub(ceiling),
        cap_overruns,
        rungs_fired: lad.rungs_fired,
        count_calls,
        trace,
        ledger,
    })
}

fn count_units(lad: &Ladder<'_>, action: Taken) -> usize {
    let mut unit_of_seg = vec![0usize; lad.segs.len()];
    let mut unit_of_digest = vec![0usize; lad.digests.len()];
    for (u, unit) in lad.units.iter().enumerate() {
        for &m in &unit.members {
            unit_of_seg[m] = u;
        }
        if let Some(d) = unit.digest {
            unit_of_digest[d] = u;
        }
    }
    let units: HashSet<usize> = lad
        .removals
        .iter()
        .filter(|r| r.action == action)
        .map(|r| match r.target {
            Target::Segment(i) => unit_of_seg[i],
            Target::Digest(d) => unit_of_digest[d],
        })
        .collect();
    units.len()
}

/// Kept items in input order; a digest stands where its exchange began.
fn kept_list(lad: &Ladder<'_>) -> Vec<Kept> {
    let mut out = Vec::new();
    let mut digest_at: HashMap<usize, usize> = HashMap::default();
    for (d, rec) in lad.digests.iter().enumerate() {
        digest_at.insert(rec.members[0], d);
    }
    let alive_digests: HashSet<usize> = lad.units.iter().filter(|u| u.alive).filter_map(|u| u.digest).collect();
    let digest_alive = |d: usize| alive_digests.contains(&d);
    for i in 0..lad.segs.len() {
        if let Some(&d) = digest_at.get(&i) {
            if digest_alive(d) {
                out.push(Kept::Digest { digest: d });
            }
        }
        if lad.seg_alive[i] {
            out.push(match &lad.seg_text[i] {
                Some(text) => Kept::Truncated { index: i, text: text.clone(), tokens: lad.seg_tokens[i] },
                None => Kept::Original(i),
            });
        }
    }
    out
}

fn kept_texts<'l>(lad: &'l Ladder<'_>) -> (Vec<&'l str>, Vec<usize>) {
    kept_list(lad)
        .into_iter()
        .map(|k| match k {
            Kept::Original(i) => (lad.segs[i].text.as_str(), lad.seg_tokens[i]),
            Kept::Truncated { index, .. } => (lad.seg_text[index].as_deref().unwrap_or(""), lad.seg_tokens[index]),
            Kept::Digest { digest } => (lad.digests[digest].text.as_str(), lad.digests[digest].tokens),
        })
        .unzip()
}

fn unfittable(lad: &Ladder<'_>) -> Unfittable {
    let mut components = Vec::new();
    for u in lad.units.iter().filter(|u| u.alive && u.protected) {
        for &m in u.members.iter().filter(|&&m| lad.seg_alive[m]) {
            let s = lad.segs[m];
            let label = match &s.key {
                Some(k) => format!("{} {k:?}", lad.policy.label(s.layer)),
                None => lad.policy.label(s.layer).to_string(),
            };
            components.push((label, lad.seg_tokens[m]));
        }
    }
    let protected_tokens: usize = components.iter().map(|(_, n)| n).sum();
    let total = lad.total();
    Unfittable {
        floor_tokens: total.saturating_sub(protected_tokens),
        components,
        ceiling: lad.ceiling,
        total,
        shortfall: total.saturating_sub(lad.ceiling),
    }
}
