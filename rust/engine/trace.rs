//! The eviction trace: what a reviewer reads to see why the request looks the way it does.

use rustc_hash::FxHashSet as HashSet;

use super::budget::Budget;
use super::ladder::Ladder;
use super::outcome::{Section, Taken, Target};
use super::segment::{Layer, LayerSet, SegmentData};
use crate::fmt::{pad_left, plural, thousands};
use crate::limits::{signed, unsigned};

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Trace {
    pub window: usize,
    pub reserve: usize,
    pub ceiling: usize,
    /// When a low watermark is in force: what eviction aimed for (rows are "over" this).
    pub target: Option<usize>,
    /// Display name of each layer (the policy's labels).
    pub labels: [String; 8],
    /// Per-layer sizes at the start, in order of first appearance.
    pub start_layers: Vec<(String, usize)>,
    pub start_total: usize,
    /// (layer label, size, cap)
    pub caps: Vec<(String, usize, usize)>,
    pub sections: Vec<Section>,
    pub final_total: usize,
    pub count_calls: usize,
    /// Layers that lost nothing though they were eligible to.
    pub untouched: Vec<String>,
    pub units_removed: usize,
    pub units_truncated: usize,
    pub units_digested: usize,
    pub floor_reached: bool,
}

/// Layers in order of first appearance: the order a reader meets them in the request.
pub(super) fn first_appearance(segs: &[&SegmentData]) -> Vec<Layer> {
    let mut seen = HashSet::default();
    segs.iter().map(|s| s.layer).filter(|l| seen.insert(*l)).collect()
}

/// Layers over their cap at the start, with the excess: reported, never enforced.
pub(super) fn cap_overruns(order: &[Layer], budget: &Budget, start_layers: &[usize; 8]) -> Vec<(Layer, usize)> {
    order
        .iter()
        .filter_map(|&l| {
            let cap = budget.caps[l.index()]?;
            (start_layers[l.index()] > cap).then(|| (l, start_layers[l.index()] - cap))
        })
        .collect()
}

impl Trace {
    /// The trace of a finished ladder; takes its sections.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn assemble(
        lad: &mut Ladder<'_>,
        order: &[Layer],
        budget: &Budget,
        start_layers: &[usize; 8],
        cap_overruns: &[(Layer, usize)],
        start_total: usize,
        final_total: usize,
        count_calls: usize,
    ) -> Trace {
        let policy = lad.policy;
        // Layers that share a label ("history") are one figure.
        let mut merged: Vec<(String, usize)> = Vec::new();
        for &l in order {
            let label = policy.label(l);
            match merged.iter_mut().find(|(x, _)| x == label) {
                Some((_, n)) => *n += start_layers[l.index()],
                None => merged.push((label.to_string(), start_layers[l.index()])),
            }
        }
        let caps = cap_overruns
            .iter()
            .map(|&(l, _)| (policy.label(l).to_string(), start_layers[l.index()], budget.caps[l.index()].unwrap_or(0)))
            .collect();
        let untouched = if lad.sections.is_empty() { Vec::new() } else { untouched_labels(lad, order) };
        Trace {
            window: budget.window,
            reserve: budget.reserve,
            ceiling: lad.ceiling,
            labels: policy.labels.clone(),
            target: None,
            start_layers: merged,
            start_total,
            caps,
            sections: std::mem::take(&mut lad.sections),
            final_total,
            count_calls,
            untouched,
            units_removed: units_dropped(lad),
            units_truncated: lad.truncations.iter().filter(|t| lad.seg_alive[t.index]).count(),
            units_digested: lad.digests.len(),
            floor_reached: lad.floor_reached,
        }
    }
}

/// Labels a rung could reach that lost nothing: "retrieval untouched".
fn untouched_labels(lad: &Ladder<'_>, order: &[Layer]) -> Vec<String> {
    let policy = lad.policy;
    let touched: HashSet<&str> = lad
        .removals
        .iter()
        .map(|r| match r.target {
            Target::Segment(i) => lad.segs[i].layer,
            Target::Digest(d) => lad.digests[d].layer,
        })
        .chain(lad.truncations.iter().map(|t| lad.segs[t.index].layer))
        .map(|l| policy.label(l))
        .collect();
    let reachable = LayerSet(policy.rungs.iter().fold(0, |m, r| m | r.layers.0));
    let mut out: Vec<String> = Vec::new();
    for &l in order {
        let label = policy.label(l);
        if reachable.contains(l) && !policy.protected.contains(l) && !touched.contains(label) && !out.iter().any(|x| x == label) {
            out.push(label.to_string());
        }
    }
    out
}

/// Units that left by a drop (a group with several removed members is one unit).
fn units_dropped(lad: &Ladder<'_>) -> usize {
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
        .filter(|r| r.action == Taken::Drop)
        .map(|r| match r.target {
            Target::Segment(i) => unit_of_seg[i],
            Target::Digest(d) => unit_of_digest[d],
        })
        .collect();
    units.len()
}

fn over_text(over: i64) -> String {
    if over > 0 {
        format!("over by {}", thousands(unsigned(over)))
    } else {
        format!("fits, {} spare", thousands(unsigned(-over)))
    }
}

impl Trace {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, s: String| {
            out.push_str(s.trim_end());
            out.push('\n');
        };
        let target = match self.target {
            Some(t) => format!(" · low watermark: evict down to {}", thousands(t)),
            None => String::new(),
        };
        line(
            &mut out,
            format!(
                "ceiling {}  (window {} − reserve {}){target}",
                thousands(self.ceiling),
                thousands(self.window),
                thousands(self.reserve)
            ),
        );
        let layers: Vec<String> = self
            .start_layers
            .iter()
            .map(|(l, n)| format!("{l} {}", thousands(*n)))
            .collect();
        line(&mut out, format!("start   {}", layers.join("  ")));
        line(
            &mut out,
            format!(
                "        total {}   {}",
                thousands(self.start_total),
                over_text(signed(self.start_total) - signed(self.ceiling))
            ),
        );
        for (label, size, cap) in &self.caps {
            line(
                &mut out,
                format!(
                    "cap     {label} {} over its cap of {} by {}",
                    thousands(*size),
                    thousands(*cap),
                    thousands(size - cap)
                ),
            );
        }
        let label_w = self
            .sections
            .iter()
            .flat_map(|s| s.rows.iter().map(|r| r.label.chars().count()))
            .max()
            .unwrap_or(0)
            .max(3);
        let delta_w = self
            .sections
            .iter()
            .flat_map(|s| s.rows.iter().map(|r| thousands(r.delta).len()))
            .max()
            .unwrap_or(0);
        for s in &self.sections {
            out.push('\n');
            let floor = if s.floor.is_empty() { String::new() } else { format!("  (floor: {})", s.floor) };
            line(&mut out, format!("rung {}  {}{}", s.rung + 1, s.name, floor));
            for r in &s.rows {
                let verb = match r.action {
                    "drop" => "",
                    "truncate" => " truncated",
                    _ => " digested",
                };
                line(
                    &mut out,
                    format!(
                        "   {}  −{}   {} {}   total {}   {}{verb}",
                        pad_left(&r.label, label_w),
                        pad_left(&thousands(r.delta), delta_w),
                        self.labels[r.layer.index()],
                        pad_left(&thousands(r.layer_after), 6),
                        pad_left(&thousands(r.total_after), 6),
                        over_text(r.over_after),
                    ),
                );
            }
            if s.floor_reached {
                line(&mut out, "        floor reached".to_string());
            }
        }
        out.push('\n');
        let mut parts = vec![format!("{} tokens", thousands(self.final_total))];
        if self.units_removed + self.units_truncated + self.units_digested == 0 {
            parts.push("nothing removed".into());
        }
        if self.units_removed > 0 {
            parts.push(format!("{} unit{} dropped", self.units_removed, plural(self.units_removed)));
        }
        if self.units_digested > 0 {
            parts.push(format!("{} digested", self.units_digested));
        }
        if self.units_truncated > 0 {
            parts.push(format!("{} truncated", self.units_truncated));
        }
        for u in &self.untouched {
            parts.push(format!("{u} untouched"));
        }
        if !self.sections.is_empty() {
            parts.push(if self.floor_reached { "floor reached" } else { "floor not reached" }.into());
        }
        parts.push(format!("{} count{}", self.count_calls, plural(self.count_calls)));
        line(&mut out, format!("send    {}", parts.join(" · ")));
        out
    }
}
