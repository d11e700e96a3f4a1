//! Repeating the previous request's cut on the ladder before any rung runs: a unit whose members
//! all left by drop leaves again, a tool exchange that was digested is digested again (the record
//! is deterministic, so it is the same text), a body that was shortened is shortened to the same
//! size. Each is a trace row under its rung, marked as the previous cut.

use std::collections::BTreeMap;

use super::{Pin, Pinned};
use crate::engine::ladder::Ladder;
use crate::engine::outcome::{Row, Section};
use crate::engine::policy::Action;
use crate::engine::segment::LayerSet;
use crate::error::CtxResult;

impl Ladder<'_> {
    /// Applies `pins`; returns how many removals and truncations they made (they come first in
    /// the outcome's lists). A pin that no longer applies (a protected unit, a unit that is not
    /// wholly pinned, a rung the policy lacks) is passed over: the rungs decide about it.
    pub(in crate::engine) fn apply_pins(&mut self, pins: &[Pin]) -> CtxResult<(usize, usize)> {
        if pins.is_empty() {
            return Ok((0, 0));
        }
        let mut unit_of = vec![usize::MAX; self.segs.len()];
        for u in 0..self.units.len() {
            for m in self.members(u) {
                if let Some(slot) = unit_of.get_mut(m) {
                    *slot = u;
                }
            }
        }
        let mut by_unit: BTreeMap<usize, Vec<Pin>> = BTreeMap::new();
        for p in pins {
            match unit_of.get(p.segment) {
                Some(&u) if u != usize::MAX && p.rung < self.policy.rungs.len() => by_unit.entry(u).or_default().push(*p),
                _ => {}
            }
        }
        let mut sections: Vec<Section> = Vec::new();
        for (u, ps) in by_unit {
            if self.units[u].protected || !self.units[u].alive {
                continue;
            }
            let rung = ps[0].rung;
            let before = self.total();
            let label = self.unit_label(u);
            let all_dropped = ps.len() == self.members(u).len() && ps.iter().all(|p| p.how == Pinned::Drop);
            let (touched, action): (Option<LayerSet>, Action) = if all_dropped {
                if self.live_units <= 1 {
                    break;
                }
                (Some(self.drop_unit(u, rung)), Action::Drop)
            } else if ps.iter().any(|p| p.how == Pinned::Digest) {
                (self.digest_unit(u, rung)?, Action::Digest)
            } else if let [Pin { segment, how: Pinned::Truncate(after), .. }] = ps.as_slice() {
                (self.truncate_to(*segment, *after, rung)?, Action::Truncate { min_tokens: 0 })
            } else {
                (None, Action::Drop)
            };
            let Some(layers) = touched else { continue };
            let row: Row = self.row(label, layers, before, action);
            match sections.iter_mut().find(|s| s.rung == rung) {
                Some(s) => s.rows.push(row),
                None => sections.push(Section {
                    rung,
                    name: format!("{} (the previous request's cut, kept for the cache)", self.policy.rungs[rung].name),
                    floor: String::new(),
                    caps: Vec::new(),
                    rows: vec![row],
                    floor_reached: false,
                    exhausted: false,
                }),
            }
        }
        for s in &sections {
            if !self.rungs_fired.contains(&s.rung) {
                self.rungs_fired.push(s.rung);
            }
        }
        self.sections.extend(sections);
        Ok((self.removals.len(), self.truncations.len()))
    }
}
