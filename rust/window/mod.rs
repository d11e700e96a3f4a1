//! ContextWindow: one per conversation, called every turn. Keyed admission (a chunk the model
//! already has is not sent twice), eviction by policy with a ledger that can answer for every
//! key, tagged rewrites that are never spent in the cycle that made them, and an optional low
//! watermark so the cut does not move every turn.

pub mod ledger;

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::engine::digest::digest_text;
use crate::engine::{self, spec, Budget, Counter, FitError, FitOutcome, Layer, Policy, SegmentData, Taken, Target};
use crate::error::{CtxError, CtxResult};
use ledger::{Counters, Status, Totals, Why};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub id: u64,
    pub seg: Arc<SegmentData>,
    pub tokens: usize,
    /// Bumped when the entry's text changes in place (truncated): what a prompt cache sees.
    pub version: u32,
    pub admitted_cycle: u64,
    /// For surrogates: (source key, who made it).
    pub provenance: Option<(Option<String>, String)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Pending {
    /// The entry the rewrite was asked for: a later segment under the same key is not it.
    id: u64,
    key: String,
    text: String,
    tokens: usize,
    provenance: String,
}

/// What a change did to the held entries, for the bindings to mirror on their Python objects.
#[derive(Debug, Default)]
pub struct Changes {
    /// Entries that left, in removal order: (entry, rung or reason, action).
    pub removed: Vec<(Entry, String, &'static str)>,
    /// Entries created or changed in place.
    pub upserted: Vec<Entry>,
}

pub enum Admit {
    Admitted { id: u64, demoted: Option<Entry> },
    Duplicate,
}

pub enum Rewrite {
    Applied(Changes),
    Deferred,
}

pub struct WindowFit {
    pub outcome: FitOutcome,
    /// Entry ids in the order they were handed to the ladder (outcome indices refer to these).
    pub ids: Vec<u64>,
    pub changes: Changes,
    pub stable_prefix_tokens: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Window {
    limit: usize,
    reserve: usize,
    #[serde(with = "policy_serde")]
    policy: Policy,
    policy_name: Option<String>,
    low_watermark: Option<f64>,
    entries: Vec<Entry>,
    next_id: u64,
    held_keys: HashMap<String, u64>,
    cycle: u64,
    fresh_unrecoverable: bool,
    pending: Vec<Pending>,
    why: HashMap<String, Why>,
    counters: Counters,
    totals: Totals,
    last_kept: Vec<(u64, u32)>,
    stable_prefix_tokens: usize,
}

mod policy_serde {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Policy, s: S) -> Result<S::Ok, S::Error> {
        spec::to_value(None, p).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        spec::from_value(&v).map(|(_, p)| p).map_err(serde::de::Error::custom)
    }
}

fn unknown(key: &str) -> CtxError {
    CtxError::UnknownKey(format!("no segment with key {key:?} is held by this window"))
}

impl Window {
    pub fn new(
        limit: usize,
        reserve: usize,
        policy: Policy,
        policy_name: Option<String>,
        low_watermark: Option<f64>,
    ) -> CtxResult<Self> {
        Budget::new(limit, reserve, [None; 8])?;
        if let Some(w) = low_watermark {
            if !(w > 0.0 && w <= 1.0) {
                return Err(CtxError::invalid(format!("low_watermark must be in (0, 1], got {w}")));
            }
        }
        Ok(Self {
            limit,
            reserve,
            policy,
            policy_name,
            low_watermark,
            entries: Vec::new(),
            next_id: 1,
            held_keys: HashMap::new(),
            cycle: 0,
            fresh_unrecoverable: false,
            pending: Vec::new(),
            why: HashMap::new(),
            counters: Counters::default(),
            totals: Totals::default(),
            last_kept: Vec::new(),
            stable_prefix_tokens: 0,
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
    pub fn reserve(&self) -> usize {
        self.reserve
    }
    pub fn policy(&self) -> &Policy {
        &self.policy
    }
    pub fn policy_name(&self) -> Option<&str> {
        self.policy_name.as_deref()
    }
    pub fn low_watermark(&self) -> Option<f64> {
        self.low_watermark
    }
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
    pub fn totals(&self) -> &Totals {
        &self.totals
    }
    pub fn stable_prefix_tokens(&self) -> usize {
        self.stable_prefix_tokens
    }
    pub fn pending_rewrites(&self) -> usize {
        self.pending.len()
    }

    pub fn held_tokens(&self) -> usize {
        self.entries.iter().map(|e| e.tokens).sum()
    }

    pub fn holds(&self, key: &str) -> bool {
        self.held_keys.contains_key(key)
    }

    pub fn why(&self, key: &str) -> CtxResult<&Why> {
        self.why
            .get(key)
            .ok_or_else(|| CtxError::UnknownKey(format!("key {key:?} was never admitted to this window")))
    }

    pub fn whys(&self) -> impl Iterator<Item = &Why> {
        self.why.values()
    }

    fn new_entry(&mut self, seg: Arc<SegmentData>, tokens: usize, provenance: Option<(Option<String>, String)>) -> Entry {
        let id = self.next_id;
        self.next_id += 1;
        Entry { id, seg, tokens, version: 0, admitted_cycle: self.cycle, provenance }
    }

    fn position(&self, id: u64) -> Option<usize> {
        self.entries.iter().position(|e| e.id == id)
    }

    fn set_why(&mut self, key: &str, status: Status, rung: Option<String>, before: usize, after: usize, provenance: Option<String>) {
        let cycle = self.cycle;
        if let Some(w) = self.why.get_mut(key) {
            w.status = status;
            w.cycle = cycle;
            w.rung = rung;
            w.tokens_before = before;
            w.tokens_after = after;
            w.provenance = provenance;
        }
    }

    /// Admits a counted segment; a key already held (in any layer) is refused.
    pub fn admit(&mut self, seg: Arc<SegmentData>, tokens: usize) -> Admit {
        if let Some(k) = &seg.key {
            if self.held_keys.contains_key(k) {
                self.counters.refused_duplicates += 1;
                return Admit::Duplicate;
            }
        }
        // One current turn at a time: the previous one becomes conversation, in its group.
        let mut demoted = None;
        if seg.layer == Layer::CurrentTurn {
            if let Some(pos) = self.entries.iter().position(|e| e.seg.layer == Layer::CurrentTurn) {
                let e = &mut self.entries[pos];
                let mut data = (*e.seg).clone();
                data.layer = Layer::Conversation;
                // Same text, same place: the provider's cached prefix is unaffected.
                e.seg = Arc::new(data);
                if let Some(k) = &e.seg.key {
                    if let Some(w) = self.why.get_mut(k) {
                        w.layer = Layer::Conversation;
                    }
                }
                demoted = Some(e.clone());
            }
        }
        if !seg.recoverable {
            self.fresh_unrecoverable = true;
        }
        let entry = self.new_entry(seg, tokens, None);
        let id = entry.id;
        if let Some(k) = &entry.seg.key {
            self.held_keys.insert(k.clone(), id);
            let admissions = self.why.get(k).map_or(0, |w| w.admissions) + 1;
            let why = Why {
                key: k.clone(),
                status: Status::Held,
                cycle: self.cycle,
                rung: None,
                tokens_before: tokens,
                tokens_after: tokens,
                provenance: None,
                layer: entry.seg.layer,
                admissions,
            };
            self.why.insert(k.clone(), why);
        }
        self.counters.admitted += 1;
        self.totals.admitted += tokens as u64;
        self.entries.push(entry);
        Admit::Admitted { id, demoted }
    }

    /// Removes an entry by id, recording it as evicted (recoverable or dispensable).
    fn evict(&mut self, id: u64, reason: &str, action: &'static str, changes: &mut Changes) {
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
            self.set_why(k, status, Some(reason.to_string()), e.tokens, 0, None);
        }
        changes.removed.push((e, reason.to_string(), action));
    }

    /// Replaces the entries `ids` by one surrogate at the first one's place; the originals are
    /// recorded as rewritten.
    fn replace_with_surrogate(
        &mut self,
        ids: &[u64],
        seg: SegmentData,
        tokens: usize,
        reason: &str,
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
                self.set_why(k, Status::Rewritten, Some(reason.to_string()), e.tokens, tokens, Some(provenance.1.clone()));
            }
            changes.removed.push((e, reason.to_string(), "rewrite"));
        }
        changes.upserted.push(new.clone());
        Some(new)
    }

    /// Evicts until what is held fits; on `Unfittable` nothing changes.
    pub fn fit(&mut self, counter: &dyn Counter) -> Result<WindowFit, FitError> {
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
                    Err(FitError::Unfittable(_)) => engine::fit(&segs, &counts, &budget, &self.policy, counter, None, 0)?,
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
        let names: Vec<String> = self.policy.rungs.iter().map(|x| x.name.clone()).collect();
        let rung_name = |r: usize| names.get(r).cloned().unwrap_or_default();
        // Digests first (their members are in the removals too, as "digest"). The entry each
        // becomes is remembered, so a later rung dropping that digest removes exactly it.
        let mut digest_entry: Vec<Option<u64>> = vec![None; out.digests.len()];
        for (d, rec) in out.digests.iter().enumerate() {
            let member_ids: Vec<u64> = rec.members.iter().map(|&m| ids[m]).collect();
            let Some(first) = member_ids.first().and_then(|&id| self.position(id)) else { continue };
            let mut data = SegmentData::new(rec.text.clone(), rec.layer);
            data.group = self.entries[first].seg.group.clone();
            let source = self.entries[first].seg.key.clone();
            let name = rung_name(rec.rung);
            self.counters.digests += 1;
            digest_entry[d] = self
                .replace_with_surrogate(&member_ids, data, rec.tokens, &name, (source, "digest".into()), changes)
                .map(|e| e.id);
        }
        for r in &out.removals {
            match (r.target, r.action) {
                (Target::Segment(i), Taken::Drop) => {
                    self.counters.evictions += 1;
                    self.evict(ids[i], &rung_name(r.rung), "drop", changes);
                }
                // A digest made and dropped in the same fit: the surrogate leaves.
                (Target::Digest(d), Taken::Drop) => {
                    if let Some(id) = digest_entry.get(d).copied().flatten() {
                        self.counters.evictions += 1;
                        self.evict(id, &rung_name(r.rung), "drop", changes);
                    }
                }
                (_, Taken::Digest) => {}
            }
        }
        for t in &out.truncations {
            let id = ids[t.index];
            let Some(pos) = self.position(id) else { continue };
            let text = match out.kept.iter().find_map(|k| match k {
                engine::Kept::Truncated { index, text, .. } if *index == t.index => Some(text.clone()),
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
                self.set_why(&k, Status::Truncated, Some(rung_name(t.rung)), orig, t.after, None);
            }
            changes.upserted.push(updated);
        }
        Ok(())
    }

    /// The caller removes a held segment now; recorded like an eviction, the key freed.
    pub fn discard(&mut self, key: &str) -> CtxResult<Changes> {
        let id = *self.held_keys.get(key).ok_or_else(|| unknown(key))?;
        let mut changes = Changes::default();
        self.counters.discards += 1;
        self.evict(id, "discard", "discard", &mut changes);
        Ok(changes)
    }

    /// Flags a held segment stale so stale-first policies take it early.
    pub fn mark_stale(&mut self, key: &str) -> CtxResult<Entry> {
        let id = *self.held_keys.get(key).ok_or_else(|| unknown(key))?;
        let pos = self.position(id).ok_or_else(|| unknown(key))?;
        let e = &mut self.entries[pos];
        if !e.seg.stale {
            let mut data = (*e.seg).clone();
            data.stale = true;
            e.seg = Arc::new(data);
        }
        Ok(e.clone())
    }

    /// The text a surrogate carries: a model-visible tag naming what it stands for.
    pub fn surrogate_text(key: &str, provenance: &str, text: &str) -> String {
        format!("[lossy summary of {key} by {provenance}] {text}")
    }

    /// Replaces a held segment by a tagged lossy surrogate (already counted: `tokens`).
    pub fn rewrite(&mut self, key: &str, text: String, tokens: usize, provenance: Option<&str>) -> CtxResult<Rewrite> {
        let provenance = match provenance.map(str::trim) {
            Some(p) if !p.is_empty() => p.to_string(),
            _ => {
                return Err(CtxError::UntaggedRewrite(format!(
                    "rewrite of {key:?} has no provenance: an untagged surrogate cannot say what it stands \
                     for; drop the segment instead (discard) so it can be re-fetched"
                )))
            }
        };
        let id = *self.held_keys.get(key).ok_or_else(|| unknown(key))?;
        let pos = self.position(id).ok_or_else(|| unknown(key))?;
        let original = &self.entries[pos];
        if tokens >= original.tokens && !original.seg.recoverable {
            return Err(CtxError::LedgerInconsistency(format!(
                "rewrite of {key:?} does not compress: {} -> {tokens} tokens, and there is no external copy",
                original.tokens
            )));
        }
        if self.fresh_unrecoverable {
            self.counters.deferred_rewrites += 1;
            self.pending.retain(|p| p.id != id);
            self.pending.push(Pending { id, key: key.to_string(), text, tokens, provenance });
            return Ok(Rewrite::Deferred);
        }
        let mut changes = Changes::default();
        self.apply_rewrite(id, key, text, tokens, provenance, &mut changes);
        Ok(Rewrite::Applied(changes))
    }

    fn apply_rewrite(&mut self, id: u64, key: &str, text: String, tokens: usize, provenance: String, changes: &mut Changes) {
        let Some(pos) = self.position(id) else { return };
        let orig = &self.entries[pos].seg;
        let mut data = SegmentData::new(text, orig.layer);
        data.group = orig.group.clone();
        data.score = orig.score;
        data.recoverable = orig.recoverable;
        self.counters.rewrites += 1;
        self.replace_with_surrogate(&[id], data, tokens, "rewrite", (Some(key.to_string()), provenance), changes);
    }

    /// The digest a tool exchange would get (text only; the caller counts it).
    pub fn digest_text_for(&self, key: &str) -> CtxResult<(Vec<u64>, String)> {
        let id = *self.held_keys.get(key).ok_or_else(|| unknown(key))?;
        let pos = self.position(id).ok_or_else(|| unknown(key))?;
        let members: Vec<&Entry> = match &self.entries[pos].seg.group {
            Some(g) => self.entries.iter().filter(|e| e.seg.group.as_ref() == Some(g)).collect(),
            None => vec![&self.entries[pos]],
        };
        if !members.iter().any(|e| e.seg.layer == Layer::ToolResult) {
            return Err(CtxError::invalid(format!(
                "{key:?} is not part of a tool exchange (no TOOL_RESULT segment in its group)"
            )));
        }
        let datas: Vec<&SegmentData> = members.iter().map(|e| e.seg.as_ref()).collect();
        let tokens: Vec<usize> = members.iter().map(|e| e.tokens).collect();
        let ordinal = self.entries.iter().filter(|e| e.seg.layer == Layer::Conversation).count();
        Ok((members.iter().map(|e| e.id).collect(), digest_text(&datas, &tokens, ordinal)))
    }

    /// Replaces a tool exchange by its short durable record now.
    pub fn digest(&mut self, key: &str, ids: &[u64], text: String, tokens: usize) -> CtxResult<Changes> {
        let first = ids.first().and_then(|&id| self.position(id)).ok_or_else(|| unknown(key))?;
        let members: Vec<&Entry> = ids.iter().filter_map(|&id| self.position(id)).map(|p| &self.entries[p]).collect();
        let before: usize = members.iter().map(|e| e.tokens).sum();
        if tokens >= before && !members.iter().all(|e| e.seg.recoverable) {
            return Err(CtxError::LedgerInconsistency(format!(
                "digest of {key:?} does not compress: {before} -> {tokens} tokens, and there is no external copy"
            )));
        }
        let mut data = SegmentData::new(text, Layer::Conversation);
        data.group = self.entries[first].seg.group.clone();
        let mut changes = Changes::default();
        self.counters.digests += 1;
        self.replace_with_surrogate(ids, data, tokens, "digest", (Some(key.to_string()), "digest".into()), &mut changes);
        Ok(changes)
    }

    pub fn to_json(&self) -> CtxResult<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| CtxError::State(format!("cannot serialise window: {e}")))
    }

    pub fn from_json(bytes: &[u8]) -> CtxResult<Self> {
        serde_json::from_slice(bytes).map_err(|e| CtxError::State(format!("not a saved ContextWindow: {e}")))
    }
}

#[cfg(test)]
mod tests;
