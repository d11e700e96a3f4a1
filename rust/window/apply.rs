//! A window fit: the ladder over what is held (twice under a low watermark whose target cannot be
//! met), then its outcome mapped onto the entries, the ledger and the `why` answers.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::ledger::{Cause, Status};
use super::{Changes, Entry, Removed, Window, WindowFit};
use crate::engine::{self, cache, Budget, FitOptions, FitOutcome, Kept, SegmentData, Taken, Target, TokenSource};
use crate::error::{CtxError, CtxResult};
use crate::limits::{add_total, checked_total};

impl Window {
    /// Evicts until what is held fits; on `Unfittable` nothing changes.
    pub fn fit(&mut self, counter: &dyn TokenSource) -> CtxResult<WindowFit> {
        let ids: Vec<u64> = self.entries.iter().map(|e| e.id).collect();
        let segs: Vec<&SegmentData> = self.entries.iter().map(|e| e.seg.as_ref()).collect();
        // A deferred rewrite lands as this fit returns: what will be held is the larger of the
        // original and its surrogate, so that is what the ladder must fit.
        let landing: HashMap<u64, usize> = self.pending.iter().map(|p| (p.id, p.tokens)).collect();
        let counts: Vec<usize> =
            self.entries.iter().map(|e| landing.get(&e.id).map_or(e.tokens, |&t| t.max(e.tokens))).collect();
        // Digests and landing rewrites are new entries; together they take in at most what is
        // held plus what the rewrites bring.
        let landing_tokens = checked_total(self.pending.iter().map(|p| p.tokens), "the deferred rewrites")?;
        self.room_for(self.entries.len() + self.pending.len(), add_total(self.held_tokens(), landing_tokens, "what a fit may take in")?)?;
        let budget = Budget::new(self.limit, self.reserve, [None; 8])?;
        let held = self.held_tokens();
        // Hysteresis: once eviction has to fire, go down to the watermark so the next turns
        // append without moving the cut (and the provider's cached prefix survives).
        let mut outcome = match self.low_watermark {
            Some(w) if held > budget.ceiling() && w < 1.0 => {
                let low = (((budget.ceiling() as f64) * w).floor() as usize).max(1);
                match cache::plan::fit_aiming(&segs, &counts, &budget, &self.policy, counter, &FitOptions::default(), Some(low)) {
                    Err(CtxError::Unfittable(_)) => engine::fit(&segs, &counts, &budget, &self.policy, counter, None, 0)?,
                    other => other?,
                }
            }
            _ => engine::fit(&segs, &counts, &budget, &self.policy, counter, None, 0)?,
        };
        // Nothing has changed yet: a refused fit leaves even the revision as it was.
        self.touch()?;
        let mut changes = Changes::default();
        self.apply(&ids, &outcome, &mut changes)?;
        // Rewrites deferred in this cycle land now, after the fit counted the originals.
        let pending = std::mem::take(&mut self.pending);
        for p in pending {
            if self.position(p.id).is_some() {
                self.apply_rewrite(p.id, &p.key, p.text, p.tokens, p.provenance, &mut changes);
            }
        }
        self.counters.fits = self.counters.fits.saturating_add(1);
        if !outcome.removals.is_empty() || !outcome.truncations.is_empty() {
            self.counters.fits_that_evicted = self.counters.fits_that_evicted.saturating_add(1);
        }
        for (r, &n) in outcome.ledger.rung_firings.iter().enumerate() {
            if n > 0 {
                let name = self.policy.rungs.get(r).map(|x| x.name.clone()).unwrap_or_default();
                let firings = self.counters.rung_firings.entry(name).or_insert(0);
                *firings = firings.saturating_add(n as u64);
            }
        }
        let kept: Vec<(u64, u32)> = self.entries.iter().map(|e| (e.id, e.version)).collect();
        let common = kept.iter().zip(&self.last_kept).take_while(|(a, b)| a == b).count();
        self.stable_prefix_tokens = self.entries.iter().take(common).map(|e| e.tokens).sum();
        let had_previous = !self.last_kept.is_empty();
        self.last_kept = kept;
        let cache = self.cache.as_ref().map(|p| self.cache_report(p, &outcome, had_previous));
        if let Some(r) = &cache {
            outcome.trace.cache = Some(r.line());
        }
        self.cycle = self.cycle.saturating_add(1);
        self.forget_old_whys();
        self.fresh_unrecoverable = false;
        // Every turn ends in a fit: the new segments' digests are taken now, once.
        self.cache_digests();
        Ok(WindowFit { outcome, ids, changes, stable_prefix_tokens: self.stable_prefix_tokens, cache })
    }

    /// The cache report of a fit: the window's own stable prefix is the unchanged one; the cut is
    /// kept when the fit removed nothing.
    fn cache_report(&self, profile: &cache::CacheProfile, out: &FitOutcome, had_previous: bool) -> cache::Report {
        let cut = if !had_previous {
            cache::Cut::Fresh
        } else if out.removals.is_empty() && out.truncations.is_empty() {
            cache::Cut::Kept
        } else {
            cache::Cut::Moved { target: out.trace.target }
        };
        let prediction = profile.predict(out.total, had_previous.then_some(self.stable_prefix_tokens), &[], &[]);
        cache::Report { profile: profile.name.clone(), previous: had_previous, prediction, cut, total: out.total }
    }

    /// Maps a fit's outcome onto the entries in one pass over them (indices in `out` are places
    /// in `ids`, the entries as the ladder saw them), so a fit stays linear in what is held.
    fn apply(&mut self, ids: &[u64], out: &FitOutcome, changes: &mut Changes) -> CtxResult<()> {
        if ids.len() != self.entries.len() {
            return Err(CtxError::State("the window changed during its own fit".into()));
        }
        let mut slots: Vec<Option<Entry>> = std::mem::take(&mut self.entries).into_iter().map(Some).collect();
        // Digests first (their members are in the removals too, as "digest"). The entry each
        // becomes is kept aside, so a later rung dropping that digest removes exactly it.
        let mut digest_entries: Vec<Option<Entry>> = Vec::with_capacity(out.digests.len());
        let mut digest_at: Vec<Option<usize>> = vec![None; slots.len()];
        for (d, rec) in out.digests.iter().enumerate() {
            let first = rec.members.first().and_then(|&m| slots.get(m)).and_then(Option::as_ref);
            let Some(first) = first else {
                digest_entries.push(None);
                continue;
            };
            let mut data = SegmentData::new(rec.text.clone(), rec.layer);
            data.group = first.seg.group.clone();
            let provenance = (first.seg.key.as_deref().map(str::to_string), "digest".to_string());
            let new = self.new_entry(Arc::new(data), rec.tokens, Some(provenance.clone()));
            self.totals.surrogates_added = self.totals.surrogates_added.saturating_add(rec.tokens as u64);
            self.counters.digests = self.counters.digests.saturating_add(1);
            for &m in &rec.members {
                if let Some(e) = slots.get_mut(m).and_then(Option::take) {
                    self.record_rewritten(e, Cause::Digest(rec.rung), rec.tokens, &provenance.1, changes);
                }
            }
            changes.upserted.push(new.clone());
            digest_at[rec.members[0]] = Some(d);
            digest_entries.push(Some(new));
        }
        for r in &out.removals {
            let gone = match (r.target, r.action) {
                (Target::Segment(i), Taken::Drop) => slots.get_mut(i).and_then(Option::take),
                // A digest made and dropped in the same fit: the surrogate leaves.
                (Target::Digest(d), Taken::Drop) => digest_entries.get_mut(d).and_then(Option::take),
                (_, Taken::Digest) => None,
            };
            if let Some(e) = gone {
                self.counters.evictions = self.counters.evictions.saturating_add(1);
                self.record_eviction(e, Cause::Rung(r.rung), changes);
            }
        }
        let mut shortened: Vec<Option<&str>> = vec![None; slots.len()];
        for k in &out.kept {
            if let Kept::Truncated { index, text, .. } = k {
                if let Some(slot) = shortened.get_mut(*index) {
                    *slot = Some(text.as_str());
                }
            }
        }
        for t in &out.truncations {
            let (Some(Some(e)), Some(Some(text))) = (slots.get_mut(t.index), shortened.get(t.index)) else { continue };
            let before = e.tokens;
            let mut data = (*e.seg).clone();
            data.text = text.to_string();
            // A caller-given count covered framing beyond the text; the shortened copy keeps
            // stating its whole cost, so its count and the fit's total agree.
            data.tokens = data.tokens.map(|_| t.after);
            e.seg = Arc::new(data);
            e.tokens = t.after;
            e.version = e.version.saturating_add(1);
            let key = e.seg.key.clone();
            let id = e.id;
            changes.upserted.push(e.clone());
            self.stamp_entry(id);
            self.totals.truncated_away = self.totals.truncated_away.saturating_add(before.saturating_sub(t.after) as u64);
            self.counters.truncations = self.counters.truncations.saturating_add(1);
            if let Some(k) = key {
                let orig = self.why.get(&k).and_then(|w| usize::try_from(w.tokens_before).ok()).unwrap_or(before);
                self.set_why(&k, Status::Truncated, Some(Cause::Rung(t.rung)), orig, t.after, None);
            }
        }
        // Rebuild in order: a digest stands where its exchange began.
        let mut entries = Vec::with_capacity(slots.len());
        for (i, slot) in slots.into_iter().enumerate() {
            if let Some(d) = digest_at[i] {
                if let Some(e) = digest_entries.get_mut(d).and_then(Option::take) {
                    entries.push(e);
                }
            }
            if let Some(e) = slot {
                entries.push(e);
            }
        }
        self.entries = entries;
        Ok(())
    }

    /// Removes an entry by id, recording it as evicted (recoverable or dispensable).
    pub(super) fn evict(&mut self, id: u64, cause: Cause, changes: &mut Changes) {
        let Some(pos) = self.position(id) else { return };
        let e = self.entries.remove(pos);
        self.record_eviction(e, cause, changes);
    }

    /// The ledger's side of an eviction: totals, the freed key, its `why`, the change list.
    fn record_eviction(&mut self, e: Entry, cause: Cause, changes: &mut Changes) {
        let id = e.id;
        self.pending.retain(|p| p.id != id);
        self.unstamp_entry(id);
        let status = if e.seg.recoverable { Status::EvictedRecoverable } else { Status::EvictedDispensable };
        if e.seg.recoverable {
            self.totals.evicted_recoverable = self.totals.evicted_recoverable.saturating_add(e.tokens as u64);
        } else {
            self.totals.evicted_dispensable = self.totals.evicted_dispensable.saturating_add(e.tokens as u64);
        }
        if let Some(k) = &e.seg.key {
            self.held_keys.remove(k.as_str());
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
        self.totals.surrogates_added = self.totals.surrogates_added.saturating_add(tokens as u64);
        for e in removed {
            self.record_rewritten(e, cause, tokens, &provenance.1, changes);
        }
        changes.upserted.push(new.clone());
        Some(new)
    }

    /// The ledger's side of a rewrite: the original's tokens go to `rewritten_away`.
    fn record_rewritten(&mut self, e: Entry, cause: Cause, surrogate_tokens: usize, by: &str, changes: &mut Changes) {
        // A deferred rewrite of this entry is moot now that something else replaced it.
        let id = e.id;
        self.pending.retain(|p| p.id != id);
        self.unstamp_entry(id);
        self.totals.rewritten_away = self.totals.rewritten_away.saturating_add(e.tokens as u64);
        if let Some(k) = &e.seg.key {
            self.held_keys.remove(k.as_str());
            self.set_why(k, Status::Rewritten, Some(cause), e.tokens, surrogate_tokens, Some(by.to_string()));
        }
        changes.removed.push(Removed { entry: e, cause });
    }
}
