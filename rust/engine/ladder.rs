//! The ladder: a policy's rungs run in order against projected totals. A rung's effect on the
//! total is the size of what it removed, already known, so no rung re-counts anything; only a
//! truncated body and a digest record count new text, once each. What each action does to the
//! ladder's state is in `actions`.

use std::borrow::Cow;
use std::sync::Arc;

use super::naming::InputNames;
use super::outcome::{DigestRecord, Removal, Section, Truncation};
use super::policy::{Action, Policy, Until};
use super::select::Selection;
use super::segment::{Layer, LayerSet, SegmentData};
use super::source::TokenSource;
use super::units::{build_units, Members, Unit, Units};
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
    /// The segments' texts when the caller holds them apart (`FitOptions::texts`); read through
    /// `text`.
    pub(super) texts: Option<&'a [&'a str]>,
    pub(super) sep_tokens: usize,
    /// What a segment the ladder creates (a digest) costs beyond its text: message framing.
    pub(super) framing: usize,
    pub(super) units: Vec<Unit>,
    /// Segment indices by unit when some group is interleaved (`Units::members`); empty when
    /// each unit is the run of positions up to the next unit's.
    member_list: Vec<usize>,
    member_starts: Vec<usize>,
    /// The digest record standing in for each unit (`usize::MAX`: none), by unit; empty until
    /// the first digest, so the units the hot loops read stay small.
    unit_digests: Vec<usize>,
    /// Units that left by a drop (a group with several removed members is one unit).
    pub(super) units_dropped: usize,
    /// Units still in the request: the last one is never dropped.
    pub(super) live_units: usize,
    // Per-segment state as parallel arrays indexed like `segs`: the inputs stay borrowed and
    // untouched, and the hot loop reads plain slices instead of chasing per-segment structs.
    /// The caller's counts until a cut changes one: most fits shorten nothing.
    pub(super) seg_tokens: Cow<'a, [usize]>,
    pub(super) seg_alive: Vec<bool>,
    /// Each segment's layer and whether it is recoverable, copied out of `segs` (`build_units`):
    /// removals read them in rank order, where the segments themselves miss the cache.
    pub(super) seg_layer: Vec<Layer>,
    pub(super) seg_recoverable: Vec<bool>,
    /// A shortened segment's place in `truncations` and `cut_texts` (`usize::MAX`: not shortened);
    /// empty until the first cut, as most fits shorten nothing.
    pub(super) seg_cut: Vec<usize>,
    /// The text sent in place of a shortened segment's, by its place in `truncations`.
    pub(super) cut_texts: Vec<String>,
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
    /// Trace column headings already worked out: (layers changed, heading, layers it names).
    pub(super) columns: Vec<(LayerSet, Arc<str>, LayerSet)>,
    /// How many exchange units there are up to and including each unit, worked out at the first
    /// digest: a digest record numbers its exchange by it.
    exchange_ordinals: Vec<usize>,
}

impl<'a> Ladder<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        segs: &'a [&'a SegmentData],
        counts: &'a [usize],
        policy: &'a Policy,
        counter: &'a dyn TokenSource,
        ceiling: usize,
        caps: [Option<usize>; 8],
        sep_tokens: usize,
        framing: usize,
    ) -> Self {
        let Units { list: units, members: member_list, starts: member_starts, seg_layer, seg_recoverable } =
            build_units(segs, policy);
        let mut layer_sizes = [0usize; 8];
        let mut present = LayerSet::default();
        for (&layer, &n) in seg_layer.iter().zip(counts) {
            layer_sizes[layer.index()] += n;
            present.insert(layer);
        }
        Ladder {
            segs,
            policy,
            counter,
            ceiling,
            caps,
            names: None,
            texts: None,
            sep_tokens,
            framing,
            live_units: units.len(),
            units,
            member_list,
            member_starts,
            unit_digests: Vec::new(),
            units_dropped: 0,
            seg_tokens: Cow::Borrowed(counts),
            seg_alive: vec![true; segs.len()],
            seg_layer,
            seg_recoverable,
            seg_cut: Vec::new(),
            cut_texts: Vec::new(),
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
            columns: Vec::new(),
            exchange_ordinals: Vec::new(),
        }
    }

    /// Unit `u`'s segment indices, in input order.
    pub(super) fn members(&self, u: usize) -> Members<'_> {
        if self.member_starts.is_empty() {
            let start = self.units.get(u).map_or(0, |x| x.position);
            return Members::Run(start..self.units.get(u + 1).map_or(self.segs.len(), |x| x.position));
        }
        let start = self.member_starts.get(u).copied().unwrap_or(0);
        let end = self.member_starts.get(u + 1).copied().unwrap_or(start);
        Members::Listed(self.member_list.get(start..end).unwrap_or(&[]).iter().copied())
    }

    /// Segment `m`'s own text: the caller's, held apart, or the segment's.
    pub(super) fn text(&self, m: usize) -> &'a str {
        match self.texts {
            Some(texts) => texts.get(m).copied().unwrap_or(""),
            None => self.segs.get(m).map_or("", |s| s.text.as_str()),
        }
    }

    /// The text sent for segment `m` when a rung shortened it.
    pub(super) fn seg_text(&self, m: usize) -> Option<&str> {
        self.seg_cut.get(m).and_then(|&t| self.cut_texts.get(t)).map(String::as_str)
    }

    /// The digest record standing in for unit `u`, once one was made.
    pub(super) fn unit_digest(&self, u: usize) -> Option<usize> {
        self.unit_digests.get(u).copied().filter(|&d| d != usize::MAX)
    }

    pub(super) fn set_unit_digest(&mut self, u: usize, d: usize) {
        if self.unit_digests.is_empty() {
            self.unit_digests = vec![usize::MAX; self.units.len()];
        }
        if let Some(slot) = self.unit_digests.get_mut(u) {
            *slot = d;
        }
    }

    /// Unit `u`'s number among the exchanges (1 for the first), as a digest record names it.
    pub(super) fn exchange_ordinal(&mut self, u: usize) -> usize {
        if self.exchange_ordinals.is_empty() {
            let mut seen = 0;
            self.exchange_ordinals = self
                .units
                .iter()
                .map(|x| {
                    seen += usize::from(x.exchange);
                    seen
                })
                .collect();
        }
        self.exchange_ordinals.get(u).copied().unwrap_or(0)
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
        match self.unit_digest(u) {
            Some(d) => self.digests[d].tokens,
            None => self.members(u).filter(|&m| self.seg_alive[m]).map(|m| self.seg_tokens[m]).sum(),
        }
    }

    /// Whether `action` could take anything from the unit: what a floor holding it back costs.
    fn could_take(&self, u: usize, action: Action, layers: LayerSet) -> bool {
        let alive = || self.members(u).filter(|&m| self.seg_alive[m]);
        match action {
            Action::Drop => self.unit_tokens(u) > 0,
            Action::Digest => self.unit_digest(u).is_none() && alive().any(|m| self.seg_layer[m] == Layer::ToolResult),
            Action::Truncate { min_tokens } => {
                alive().any(|m| layers.contains(self.seg_layer[m]) && self.seg_tokens[m] > min_tokens.max(1))
            }
        }
    }

    /// Whether any member of the unit sits in a layer the cap rung must still shrink.
    fn in_over_cap_layer(&self, u: usize, layers: LayerSet) -> bool {
        match self.unit_digest(u) {
            Some(d) => layers.contains(self.digests[d].layer) && self.cap_excess(self.digests[d].layer) > 0,
            None => self
                .members(u)
                .any(|m| self.seg_alive[m] && layers.contains(self.seg_layer[m]) && self.cap_excess(self.seg_layer[m]) > 0),
        }
    }

    pub(super) fn run_rung(&mut self, r: usize) -> CtxResult<()> {
        let rung = self.policy.rungs[r].clone();
        // A cap rung draws only on the layers it can measure against a cap.
        let capped = LayerSet(rung.layers.iter().filter(|l| self.caps[l.index()].is_some()).fold(0, |m, l| m | (1 << l.index())));
        if rung.until == Until::Cap && capped.0 == 0 {
            return Ok(());
        }
        let Selection { order, held_back, mut rung_tokens, members } = self.select(&rung);
        // A rung removes at most its candidates' members: room for them once, rather than a
        // vector that doubles (and copies itself) as the removals come.
        self.removals.reserve(members);
        let mut rows = Vec::with_capacity(order.len());
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
            let was_digest = self.unit_digest(u).is_some();
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
                let label = if was_digest { compact_str::format_compact!("digest of {label}") } else { label };
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
                rows: {
                    rows.shrink_to_fit();
                    rows
                },
                floor_reached,
            });
        }
        Ok(())
    }
}
