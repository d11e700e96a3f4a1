//! The eviction trace: what a reviewer reads to see why the request looks the way it does. This
//! file assembles it from a finished ladder; `render` writes it out.

use super::budget::Budget;
use super::ladder::Ladder;
use super::outcome::{Section, Target};
use super::segment::{Layer, LayerSet};

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Trace {
    pub window: usize,
    pub reserve: usize,
    pub ceiling: usize,
    /// When a low watermark is in force: what eviction aimed for (rows are "over" this).
    pub target: Option<usize>,
    /// Display name of each layer (the policy's labels).
    pub labels: [String; 8],
    /// Per-layer sizes at the start, in display order (`Layer::DISPLAY_ORDER`, system first).
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
    /// Some rung's floor stopped it while the request was still over.
    pub floor_reached: bool,
    /// The trace of an attempt that ended `Unfittable`: the last line says so.
    pub failed: bool,
    /// What the provider's prompt cache will do with the request, in one line.
    pub cache: Option<String>,
}

/// The layers the request holds, in display order: system first, the current turn last, so the
/// same kind of request always reads the same however its payload is laid out.
pub(super) fn display_order(present: LayerSet) -> Vec<Layer> {
    Layer::DISPLAY_ORDER.into_iter().filter(|l| present.contains(*l)).collect()
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
            units_removed: lad.units_dropped,
            units_truncated: lad.truncations.iter().filter(|t| lad.seg_alive[t.index]).count(),
            units_digested: lad.digests.len(),
            floor_reached: lad.floor_reached,
            failed: false,
            cache: None,
        }
    }
}

/// Labels a rung could reach that lost nothing: "retrieval untouched".
fn untouched_labels(lad: &Ladder<'_>, order: &[Layer]) -> Vec<String> {
    let policy = lad.policy;
    // The layers first (a bit each), then their labels: one label per removal would be a string
    // hashed per removal.
    let mut touched_layers = LayerSet::default();
    for r in &lad.removals {
        touched_layers.insert(match r.target {
            Target::Segment(i) => lad.seg_layer[i],
            Target::Digest(d) => lad.digests[d].layer,
        });
    }
    for t in &lad.truncations {
        touched_layers.insert(lad.seg_layer[t.index]);
    }
    let touched = |label: &str| touched_layers.iter().any(|l| policy.label(l) == label);
    let reachable = LayerSet(policy.rungs.iter().fold(0, |m, r| m | r.layers.0));
    let mut out: Vec<String> = Vec::new();
    for &l in order {
        let label = policy.label(l);
        if reachable.contains(l) && !policy.protected.contains(l) && !touched(label) && !out.iter().any(|x| x == label) {
            out.push(label.to_string());
        }
    }
    out
}
