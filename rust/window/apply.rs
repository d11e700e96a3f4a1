//! A window fit: the ladder over what is held (twice under a low watermark whose target cannot be
//! met), then its outcome mapped onto the entries, the ledger and the `why` answers.

use std::sync::Arc;

use super::ledger::{Cause, Status};
use super::{Changes, Entry, Removed, Window, WindowFit};
use crate::engine::{self, Budget, FitOutcome, Kept, SegmentData, Taken, Target, TokenSource};
use crate::error::{CtxError, CtxResult};

impl Window {
    /// Evicts until what is held fits; on `Unfittable` nothing changes.
    pub fn fit(&mut self, counter: &dyn TokenSource) -> CtxResult<WindowFit> {
        let ids: Vec<u64> = self.entries.iter().map(|e| e.id).collect();
        let segs: Vec<&SegmentData> = self.entries.iter().map(|e| e.seg.as_ref()).collect();
        let counts: Vec<usize> = self.entries.iter().map(|e| e.tokens).collect();
        let budget = Budget::new(self.limit, self.reserve, [None; 8])?;
        let held = self.held_tokens();
        // Hysteresis: once eviction has to fire, go down to the watermark so the next turns
        // append without moving the cut (and the provider's cached prefix survives).
        let outcome = match self.low_watermark {
            Some(w) if held > budget.ceiling() && w < 1.0 => {
                let low = (((budget.ceiling() as f64) * w).floor() as usize).max(1);
                let low_budget = Budget::new(low + self.reserve, self.reserve, [None; 8])?;
                match engine::fit(&segs, &counts, &low_budget, &self.policy, counter, None, 0) {
                    // Report against the real window; the rows are "over" the watermark.
                    Ok(mut o) => {
                        o.ceiling = budget.ceiling();
                        o.over_by = o.trace.start_total.saturating_sub(budget.ceiling());
                        o.trace.window = budget.window;
                        o.trace.ceiling = budget.ceiling();
                        o.trace.target = Some(low);
                        o
                    }
                    Err(CtxError::Unfittable(_)) => engine::fit(&segs, &counts, &budget, &self.policy, counter, None, 0)?,
                    Err(e) => return Err(e),
                }
            }
            _ => engine::fit(&segs, &counts, &budget, &self.policy, counter, None, 0)?,
        };
        let mut changes = Changes::default();
        self.apply(&ids, &outcome, &mut changes)?;
        // Rewrites deferred in this cycle land now, after the fit counted the originals.
        let pending = std::mem::take(&mut self.pending);
        for p in pending {
            if self.position(p.id).is_some() {
                self.apply_rewrite(p.id, &p.key, p.text, p.tokens, p.provenance, &mut changes);
            }
        }
        self.counters.fits += 1;
        if !outcome.removals.is_empty() || !outcome.truncations.is_empty() {
            self.counters.fits_that_evicted += 1;
        }
        for (r, &n) in outcome.ledger.rung_firings.iter().enumerate() {
            if n > 0 {
                let name = self.policy.rungs.get(r).map(|x| x.name.clone()).unwrap_or_default();
                *self.counters.rung_firings.entry(name).or_insert(0) += n as u64;
            }
        }
        let kept: Vec<(u64, u32)> = self.entries.iter().map(|e| (e.id, e.version)).collect();
        let common = kept.iter().zip(&self.last_kept).take_while(|(a, b)| a == b).count();
        self.stable_prefix_tokens = self.entries.iter().take(common).map(|e| e.tokens).sum();
        self.last_kept = kept;
        self.cycle += 1;
        self.fresh_unrecoverable = false;
        Ok(WindowFit { outcome, ids, changes, stable_prefix_tokens: self.stable_prefix_tokens })
    }

    fn apply(&mut self, ids: &[u64], out: &FitOutcome, changes: &mut Changes) -> CtxResult<()> {
        // Digests first (their members are in the removals too, as "digest"). The entry each
        // becomes is remembered, so a later rung dropping that digest removes exactly it.
        let mut digest_entry: Vec<Option<u64>> = vec![None; out.digests.len()];
        for (d, rec) in out.digests.iter().enumerate() {
            let member_ids: Vec<u64> = rec.members.iter().map(|&m| ids[m]).collect();
            let Some(first) = member_ids.first().and_then(|&id| self.position(id)) else { continue };
            let mut data = SegmentData::new(rec.text.clone(), rec.layer);
            data.group = self.entries[first].seg.group.clone();
            let source = self.entries[first].seg.key.clone();
            self.counters.digests += 1;
            digest_entry[d] = self
                .replace_with_surrogate(&member_ids, data, rec.tokens, Cause::Digest(rec.rung), (source, "digest".into()), changes)
                .map(|e| e.id);
        }
        for r in &out.removals {
            match (r.target, r.action) {
                (Target::Segment(i), Taken::Drop) => {
                    self.counters.evictions += 1;
                    self.evict(ids[i], Cause::Rung(r.rung), changes);
                }
                // A digest made and dropped in the same fit: the surrogate leaves.
                (Target::Digest(d), Taken::Drop) => {
                    if let Some(id) = digest_entry.get(d).copied().flatten() {
                        self.counters.evictions += 1;
                        self.evict(id, Cause::Rung(r.rung), changes);
                    }
                }
                (_, Taken::Digest) => {}
            }
        }
        for t in &out.truncations {
            let id = ids[t.index];
            let Some(pos) = self.position(id) else { continue };
            let text = match out.kept.iter().find_map(|k| match k {
                Kept::Truncated { index, text, .. } if *index == t.index => Some(text.clone()),
                _ => None,
            }) {
                Some(text) => text,
                None => continue,
            };
            let e = &mut self.entries[pos];
            let before = e.tokens;
            let mut data = (*e.seg).clone();
            data.text = text;
            data.tokens = None;
            e.seg = Arc::new(data);
            e.tokens = t.after;
            e.version += 1;
            let key = e.seg.key.clone();
            let updated = e.clone();
            self.totals.truncated_away += (before - t.after) as u64;
            self.counters.truncations += 1;
            if let Some(k) = key {
                let orig = self.why.get(&k).map(|w| w.tokens_before).unwrap_or(before);
                self.set_why(&k, Status::Truncated, Some(Cause::Rung(t.rung)), orig, t.after, None);
            }
            changes.upserted.push(updated);
        }
        Ok(())
    }

    /// Removes an entry by id, recording it as evicted (recoverable or dispensable).
    pub(super) fn evict(&mut self, id: u64, cause: Cause, changes: &mut Changes) {
        let Some(pos) = self.position(id) else { return };
        let e = self.entries.remove(pos);
        self.pending.retain(|p| p.id != id);
        let status = if e.seg.recoverable { Status::EvictedRecoverable } else { Status::EvictedDispensable };
        if e.seg.recoverable {
            self.totals.evicted_recoverable += e.tokens as u64;
        } else {
            self.totals.evicted_dispensable += e.tokens as u64;
        }
        if let Some(k) = &e.seg.key {
            self.held_keys.remove(k);
            self.set_why(k, status, Some(cause), e.tokens, 0, None);
        }
        changes.removed.push(Removed { entry: e, cause });
    }

    /// Replaces the entries `ids` by one surrogate at the first one's place; the originals are
    /// recorded as rewritten.
    pub(super) fn replace_with_surrogate(
        &mut self,
        ids: &[u64],
        seg: SegmentData,
        tokens: usize,
        cause: Cause,
        provenance: (Option<String>, String),
        changes: &mut Changes,
    ) -> Option<Entry> {
        let at = ids.iter().filter_map(|&id| self.position(id)).min()?;
        let mut removed = Vec::new();
        for &id in ids {
            if let Some(pos) = self.position(id) {
                removed.push(self.entries.remove(pos));
            }
        }
        let new = self.new_entry(Arc::new(seg), tokens, Some(provenance.clone()));
        let at = at.min(self.entries.len());
        self.entries.insert(at, new.clone());
        self.totals.surrogates_added += tokens as u64;
        for e in removed {
            self.totals.rewritten_away += e.tokens as u64;
            if let Some(k) = &e.seg.key {
                self.held_keys.remove(k);
                self.set_why(k, Status::Rewritten, Some(cause), e.tokens, tokens, Some(provenance.1.clone()));
            }
            changes.removed.push(Removed { entry: e, cause });
        }
        changes.upserted.push(new.clone());
        Some(new)
    }
}
