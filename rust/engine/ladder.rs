//! The ladder: a policy's rungs run in order against projected totals. A rung's effect on the
//! total is the size of what it removed, already known, so no rung re-counts anything; only a
//! truncated body and a digest record count new text, once each. What each action does to the
//! ladder's state is in `actions`.

use rustc_hash::FxHashSet as HashSet;

use super::naming::InputNames;
use super::outcome::{DigestRecord, Removal, Row, Section, Truncation};
use super::policy::{Action, Filter, Order, Policy, Until};
use super::rank::{sort_indices, RankKey};
use super::segment::{Layer, LayerSet, SegmentData};
use super::source::TokenSource;
use super::units::{build_units, Unit};
use crate::error::CtxResult;
use crate::fmt::thousands;
use crate::limits::{signed, unsigned};

/// Units between checks for an interruption (Ctrl-C) in a long rung: ~1 ms of work.
const INTERRUPT_EVERY: usize = 4096;

pub(super) struct Ladder<'a> {
    pub(super) segs: &'a [&'a SegmentData],
    pub(super) policy: &'a Policy,
    pub(super) counter: &'a dyn TokenSource,
    pub(super) ceiling: usize,
    /// The budget's per-layer caps: what an `until = "cap"` rung trims down to.
    pub(super) caps: [Option<usize>; 8],
    pub(super) names: Option<&'a InputNames>,
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
    /// The layers the request holds a segment of, whatever its size.
    pub(super) present: LayerSet,
    pub(super) removals: Vec<Removal>,
    pub(super) truncations: Vec<Truncation>,
    pub(super) sections: Vec<Section>,
    pub(super) rungs_fired: Vec<usize>,
    pub(super) floor_reached: bool,
}

impl<'a> Ladder<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        segs: &'a [&'a SegmentData],
        counts: &[usize],
        policy: &'a Policy,
        counter: &'a dyn TokenSource,
        ceiling: usize,
        caps: [Option<usize>; 8],
        sep_tokens: usize,
        framing: usize,
    ) -> Self {
        let mut layer_sizes = [0usize; 8];
        let mut present = LayerSet::default();
        for (s, &n) in segs.iter().zip(counts) {
            layer_sizes[s.layer.index()] += n;
            present.insert(s.layer);
        }
        let mut lad = Ladder {
            segs,
            policy,
            counter,
            ceiling,
            caps,
            names: None,
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
            present,
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

    /// How far `layer` is over its cap (0 when within it or uncapped).
    pub(super) fn cap_excess(&self, layer: Layer) -> usize {
        self.caps[layer.index()].map_or(0, |cap| self.layer_sizes[layer.index()].saturating_sub(cap))
    }

    /// Whether a rung still has work: the request is over (`fits`), or a capped layer it draws
    /// from is over its cap (`cap`).
    fn wants_more(&self, until: Until, layers: LayerSet) -> bool {
        match until {
            Until::Fits => self.over() > 0,
            Until::Cap => layers.iter().any(|l| self.cap_excess(l) > 0),
        }
    }

    pub(super) fn unit_tokens(&self, u: usize) -> usize {
        let unit = &self.units[u];
        match unit.digest {
            Some(d) => self.digests[d].tokens,
            None => unit.members.iter().filter(|&&m| self.seg_alive[m]).map(|&m| self.seg_tokens[m]).sum(),
        }
    }

    /// What a unit is called in the trace: by input positions when the caller named its input.
    pub(super) fn unit_label(&self, u: usize) -> String {
        let unit = &self.units[u];
        match self.names {
            Some(n) => n.name(&unit.members),
            None => super::naming::default_label(self.segs, unit.position),
        }
    }

    /// The policy labels of `layers`, in display order, as one column heading
    /// (`conversation+tool_result`), and what those labels hold now.
    pub(super) fn layer_column(&self, layers: LayerSet) -> (String, usize) {
        let mut labels: Vec<&str> = Vec::new();
        for l in Layer::DISPLAY_ORDER.iter().filter(|l| layers.contains(**l)) {
            let label = self.policy.label(*l);
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        // Layers that share a label ("history") are one figure.
        let size = Layer::ALL.iter().filter(|l| labels.contains(&self.policy.label(**l))).map(|l| self.layer_sizes[l.index()]).sum();
        (labels.join("+"), size)
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

    /// Whether `action` could take anything from the unit: what a floor holding it back costs.
    fn could_take(&self, u: usize, action: Action, layers: LayerSet) -> bool {
        let unit = &self.units[u];
        let alive = || unit.members.iter().copied().filter(|&m| self.seg_alive[m]);
        match action {
            Action::Drop => self.unit_tokens(u) > 0,
            Action::Digest => unit.digest.is_none() && alive().any(|m| self.segs[m].layer == Layer::ToolResult),
            Action::Truncate { min_tokens } => {
                alive().any(|m| layers.contains(self.segs[m].layer) && self.seg_tokens[m] > min_tokens.max(1))
            }
        }
    }

    /// Whether any member of the unit sits in a layer the cap rung must still shrink.
    fn in_over_cap_layer(&self, u: usize, layers: LayerSet) -> bool {
        match self.units[u].digest {
            Some(d) => layers.contains(self.digests[d].layer) && self.cap_excess(self.digests[d].layer) > 0,
            None => self.units[u]
                .members
                .iter()
                .any(|&m| self.seg_alive[m] && layers.contains(self.segs[m].layer) && self.cap_excess(self.segs[m].layer) > 0),
        }
    }

    /// Units the floor keeps from this rung, judged over everything the rung could reach.
    fn floor_kept(&self, eligible: &[usize], rung: &super::policy::Rung) -> Vec<bool> {
        let mut kept = vec![false; self.units.len()];
        let exchanges: Vec<usize> = eligible.iter().copied().filter(|&u| self.units[u].exchange).collect();
        for &u in exchanges.iter().take(rung.floor.keep_first).chain(exchanges.iter().rev().take(rung.floor.keep_last)) {
            kept[u] = true;
        }
        if rung.floor.keep_top > 0 {
            let mut by_score = eligible.to_vec();
            by_score.sort_by(|&a, &b| {
                (self.units[b].score + 0.0)
                    .total_cmp(&(self.units[a].score + 0.0))
                    .then(self.units[a].position.cmp(&self.units[b].position))
            });
            for &u in by_score.iter().take(rung.floor.keep_top) {
                kept[u] = true;
            }
        }
        kept
    }

    pub(super) fn run_rung(&mut self, r: usize) -> CtxResult<()> {
        let rung = self.policy.rungs[r].clone();
        // A cap rung draws only on the layers it can measure against a cap.
        let capped = LayerSet(rung.layers.iter().filter(|l| self.caps[l.index()].is_some()).fold(0, |m, l| m | (1 << l.index())));
        if rung.until == Until::Cap && capped.0 == 0 {
            return Ok(());
        }
        let eligible: Vec<usize> = (0..self.units.len())
            .filter(|&u| {
                let unit = &self.units[u];
                unit.alive && !unit.protected && unit.layers.intersects(rung.layers)
            })
            .collect();
        let floor_kept = self.floor_kept(&eligible, &rung);
        let covered: HashSet<&str> = if rung.filter == Some(Filter::Covered) {
            (0..self.segs.len())
                .filter(|&i| self.seg_alive[i] && self.segs[i].level == Some(2))
                .flat_map(|i| self.segs[i].covers.iter().map(String::as_str))
                .collect()
        } else {
            HashSet::default()
        };
        let mut held_back = Vec::new();
        let mut candidates = Vec::new();
        for &u in &eligible {
            if self.passes(u, rung.filter, &covered) {
                if floor_kept[u] {
                    held_back.push(u);
                } else {
                    candidates.push(u);
                }
            }
        }
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
        // Whether a floor (keep_*, min_tokens, a truncation's minimum) stopped the rung taking.
        let mut floor_stopped = false;
        self.counter.interrupted()?;
        for (step, u) in order.into_iter().enumerate() {
            if !self.wants_more(rung.until, capped) {
                break;
            }
            if step % INTERRUPT_EVERY == INTERRUPT_EVERY - 1 {
                self.counter.interrupted()?;
            }
            if rung.until == Until::Cap && !self.in_over_cap_layer(u, capped) {
                continue;
            }
            let before_total = self.total();
            let before_unit = self.unit_tokens(u);
            let was_digest = self.units[u].digest.is_some();
            let touched = match rung.action {
                Action::Drop => {
                    if rung.floor.min_tokens > 0 && rung_tokens.saturating_sub(before_unit) < rung.floor.min_tokens {
                        floor_stopped = true;
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
                    Some(self.drop_unit(u, r))
                }
                Action::Truncate { min_tokens } => {
                    let (touched, limited) = self.truncate_unit(u, r, rung.layers, min_tokens, rung.until)?;
                    floor_stopped |= limited;
                    touched
                }
                Action::Digest => self.digest_unit(u, r)?,
            };
            if let Some(layers) = touched {
                rung_tokens = rung_tokens.saturating_sub(before_unit.saturating_sub(self.unit_tokens(u)));
                // A digest dropped later is not the exchange it stood for: "digest of ex1".
                let label = self.unit_label(u);
                let label = if was_digest { format!("digest of {label}") } else { label };
                rows.push(self.row(label, layers, before_total, rung.action));
            }
        }
        let still = self.wants_more(rung.until, capped);
        let floor_reached = still && (floor_stopped || held_back.iter().any(|&u| self.could_take(u, rung.action, rung.layers)));
        self.floor_reached |= floor_reached;
        if !rows.is_empty() && !self.rungs_fired.contains(&r) {
            self.rungs_fired.push(r);
        }
        if !rows.is_empty() || floor_reached {
            let caps = match rung.until {
                Until::Fits => Vec::new(),
                Until::Cap => capped
                    .iter()
                    .filter_map(|l| self.caps[l.index()].map(|c| format!("{} {}", self.policy.label(l), thousands(c))))
                    .collect(),
            };
            self.sections.push(Section {
                rung: r,
                name: rung.name.clone(),
                floor: rung.floor.describe(),
                caps,
                exhausted: still && !floor_reached,
                rows,
                floor_reached,
            });
        }
        Ok(())
    }

    pub(super) fn row(&self, label: String, layers: LayerSet, before: usize, action: Action) -> Row {
        let total_after = self.total();
        let (layer, layer_after) = self.layer_column(layers);
        Row {
            label,
            delta: before.saturating_sub(total_after),
            action: match action {
                Action::Drop => "drop",
                Action::Truncate { .. } => "truncate",
                Action::Digest => "digest",
            },
            layer,
            layer_after,
            total_after,
            over_after: signed(total_after) - signed(self.ceiling),
        }
    }
}
