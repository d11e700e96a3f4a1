//! ContextWindow: one per conversation, called every turn. Keyed admission (a chunk the model
//! already has is not sent twice), eviction by policy with a ledger that can answer for every
//! key, tagged rewrites that are never spent in the cycle that made them, and an optional low
//! watermark so the cut does not move every turn.
//!
//! Files by job: this one holds the state, admission and persistence; `apply` runs a fit and
//! maps its outcome onto the entries; `edit` holds the caller's levers (discard, mark_stale,
//! rewrite, digest); `ledger` the counters, totals and `why` answers; `whys` where the answers
//! are kept (packed records sorted by key, see `record`); `changes` what operations hand back;
//! `fields` how maps, the policy and the readable ledger are written; `persist` the binary
//! frame, `persist_v2` the current snapshot body and the state digest, `journal` the revision
//! and what changed when, `delta` the deltas built from it.

mod apply;
mod changes;
pub mod delta;
mod edit;
mod fields;
mod journal;
pub mod ledger;
pub mod persist;
mod persist_v2;
mod read_v2;
mod record;
mod validate;
pub mod whys;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::engine::{Budget, Layer, Policy, SegmentData};
use crate::error::{CtxError, CtxResult};
use crate::limits::{add_total, check_count, checked_total};
pub use changes::{Admit, Changes, Removed, Rewrite, WindowFit};
use changes::Pending;
use journal::Journal;
use ledger::{Cause, Counters, Status, Totals, Why};
use record::{wide, Rec, RecView};
use whys::{rung_names, Ledger};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub id: u64,
    pub seg: Arc<SegmentData>,
    pub tokens: usize,
    /// Bumped when the entry's text changes in place (truncated): what a prompt cache sees.
    pub version: u32,
    pub admitted_cycle: u64,
    /// For surrogates: (source key, who made it).
    /// Boxed: most entries have none, and a restored window holds one `Entry` per segment.
    pub provenance: Option<Box<(Option<String>, String)>>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Window {
    limit: usize,
    reserve: usize,
    #[serde(with = "fields::policy_serde")]
    policy: Policy,
    policy_name: Option<String>,
    low_watermark: Option<f64>,
    entries: Vec<Entry>,
    next_id: u64,
    #[serde(serialize_with = "fields::sorted")]
    /// Held key -> entry id. Keys inline when short (`CompactString`, as the segments hold
    /// them): a restored window's index costs no allocation per key.
    held_keys: rustc_hash::FxHashMap<compact_str::CompactString, u64>,
    cycle: u64,
    fresh_unrecoverable: bool,
    pending: Vec<Pending>,
    /// Every key's answer, packed (see `whys`); written as a map of full answers in JSON.
    #[serde(with = "fields::ledger_map")]
    why: Ledger,
    counters: Counters,
    totals: Totals,
    last_kept: Vec<(u64, u32)>,
    stable_prefix_tokens: usize,
    /// Opt-in: forget the `why` answers of keys absent for more than this many cycles, so a
    /// long-lived conversation's ledger (and its saved state) stays bounded. None keeps them all.
    #[serde(default)]
    why_horizon: Option<u64>,
    /// The provider's prompt cache, for `Fit.cache` and the trace's cache line.
    #[serde(default)]
    cache: Option<crate::engine::cache::CacheProfile>,
    /// Bumped by every operation that may change the state (see `journal`); 0 in states saved
    /// before it existed.
    #[serde(default)]
    revision: u64,
    #[serde(skip)]
    journal: Journal,
}

/// The most tokens one window's ledger takes in over its lifetime (admitted plus surrogates
/// added): every operation that adds checks it first, so the totals never wrap or saturate and
/// always balance, and the loader accepts exactly what a window can write.
pub(super) const LIFETIME_MAX: u64 = 1 << 63;
/// The ids one window issues over its lifetime: an operation that would pass it is refused.
pub(super) const ID_LIMIT: u64 = 1 << 62;

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
        let why = Ledger::new(rung_names(&policy));
        Ok(Self {
            limit,
            reserve,
            policy,
            policy_name,
            low_watermark,
            entries: Vec::new(),
            next_id: 1,
            held_keys: Default::default(),
            cycle: 0,
            fresh_unrecoverable: false,
            pending: Vec::new(),
            why,
            counters: Counters::default(),
            totals: Totals::default(),
            last_kept: Vec::new(),
            stable_prefix_tokens: 0,
            why_horizon: None,
            cache: None,
            revision: 0,
            journal: Journal::default(),
        })
        .map(|mut w: Window| {
            w.journal.policy_digest = Some(persist_v2::policy_text_digest(&w.policy));
            w
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
    pub fn set_cache(&mut self, profile: Option<crate::engine::cache::CacheProfile>) -> CtxResult<()> {
        self.touch()?;
        self.cache = profile;
        Ok(())
    }

    pub fn cache(&self) -> Option<&crate::engine::cache::CacheProfile> {
        self.cache.as_ref()
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

    pub fn why(&self, key: &str) -> CtxResult<Why> {
        self.why.get(key).map(|r| self.why.answer(key, r)).ok_or_else(|| {
            let forgotten = match self.why_horizon {
                Some(h) => format!(" (or left it more than why_horizon={h} cycles ago)"),
                None => String::new(),
            };
            CtxError::UnknownKey(format!("key {key:?} was never admitted to this window{forgotten}"))
        })
    }

    pub fn why_horizon(&self) -> Option<u64> {
        self.why_horizon
    }

    /// Bounds the `why` history: answers for keys absent longer than `cycles` fits are dropped.
    pub fn set_why_horizon(&mut self, cycles: Option<u64>) -> CtxResult<()> {
        self.touch()?;
        self.why_horizon = cycles;
        self.forget_old_whys();
        Ok(())
    }

    /// Drops the answers of keys that left more than `why_horizon` cycles ago; held keys always
    /// keep theirs.
    pub(super) fn forget_old_whys(&mut self) {
        let Some(h) = self.why_horizon else { return };
        let now = self.cycle;
        let gone: Vec<String> = self
            .why
            .iter()
            .filter(|(_, w)| !matches!(w.status, Status::Held | Status::Truncated) && now.saturating_sub(w.cycle) > h)
            .map(|(k, _)| k.to_string())
            .collect();
        for k in gone {
            self.why.remove(&k);
            self.stamp_forgotten(k);
        }
    }

    /// Every answer, in key order.
    pub fn whys(&self) -> impl Iterator<Item = Why> + '_ {
        self.why.iter().map(|(k, r)| self.why.answer(k, r))
    }

    /// How many keys have an answer.
    pub fn why_count(&self) -> usize {
        self.why.len()
    }

    pub(super) fn new_entry(&mut self, seg: Arc<SegmentData>, tokens: usize, provenance: Option<(Option<String>, String)>) -> Entry {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        self.stamp_entry(id);
        Entry { id, seg, tokens, version: 0, admitted_cycle: self.cycle, provenance: provenance.map(Box::new) }
    }

    pub(super) fn position(&self, id: u64) -> Option<usize> {
        self.entries.iter().position(|e| e.id == id)
    }

    /// Records what happened to `key` (an answer it already has); the rung's name is derived
    /// from `cause` when asked for.
    pub(super) fn set_why(&mut self, key: &str, status: Status, cause: Option<Cause>, before: usize, after: usize, provenance: Option<String>) {
        let Some(mut w) = self.why.get(key).map(RecView::to_rec) else { return };
        self.stamp_why(key);
        w.status = status;
        w.cycle = self.cycle;
        w.rung = None;
        w.cause = cause;
        w.tokens_before = wide(before);
        w.tokens_after = wide(after);
        w.provenance = provenance.map(String::into_boxed_str);
        self.why.put(key, w);
    }

    /// Whether segments of these counts can all be admitted without passing a limit.
    pub fn can_admit(&self, counts: &[usize]) -> CtxResult<()> {
        for &n in counts {
            check_count(n, "the segment's count")?;
        }
        let adding = checked_total(counts.iter().copied(), "the segments admitted")?;
        add_total(self.held_tokens(), adding, "what the window would hold")?;
        self.room_for(counts.len(), adding)
    }

    /// Refuses, before anything changes, an operation that would issue `entries` new ids and
    /// take in up to `tokens` more over the window's lifetime past `ID_LIMIT` / `LIFETIME_MAX`,
    /// or move the revision past `REVISION_LIMIT` (each admission moves it once), so a batch of
    /// admissions cannot stop half way.
    pub(super) fn room_for(&self, entries: usize, tokens: usize) -> CtxResult<()> {
        if self.next_id.checked_add(entries as u64).is_none_or(|n| n > ID_LIMIT) {
            return Err(CtxError::invalid("this window has issued 2^62 ids in its lifetime; start a new one"));
        }
        self.room_for_changes(entries as u64)?;
        let inflow = u128::from(self.totals.admitted) + u128::from(self.totals.surrogates_added) + tokens as u128;
        if inflow > u128::from(LIFETIME_MAX) {
            return Err(CtxError::invalid("this window has taken in 2^63 tokens in its lifetime; start a new one"));
        }
        Ok(())
    }

    /// Admits a counted segment; a key already held (in any layer) is refused. A count over the
    /// limits, or one that would take what is held past `MAX_TOTAL`, is an error and changes nothing.
    pub fn admit(&mut self, seg: Arc<SegmentData>, tokens: usize) -> CtxResult<Admit> {
        if seg.key.as_deref().is_some_and(|k| self.held_keys.contains_key(k)) {
            return self.admit_checked(seg, tokens);
        }
        self.can_admit(&[tokens])?;
        self.admit_checked(seg, tokens)
    }

    /// `admit` for segments whose counts `can_admit` already accepted, all together: a turn of n
    /// segments then sums what is held once, not n times.
    pub fn admit_checked(&mut self, seg: Arc<SegmentData>, tokens: usize) -> CtxResult<Admit> {
        self.touch()?;
        if let Some(k) = &seg.key {
            if self.held_keys.contains_key(k.as_str()) {
                self.counters.refused_duplicates = self.counters.refused_duplicates.saturating_add(1);
                return Ok(Admit::Duplicate);
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
                let key = e.seg.key.clone();
                demoted = Some(e.clone());
                if let Some(k) = key {
                    if let Some(mut w) = self.why.get(&k).map(RecView::to_rec) {
                        w.layer = Layer::Conversation;
                        self.why.put(&k, w);
                        self.stamp_why(&k);
                    }
                }
                if let Some(d) = &demoted {
                    self.stamp_entry(d.id);
                }
            }
        }
        if !seg.recoverable {
            self.fresh_unrecoverable = true;
        }
        let entry = self.new_entry(seg, tokens, None);
        let id = entry.id;
        if let Some(k) = &entry.seg.key {
            self.held_keys.insert(k.clone(), id);
            let admissions = self.why.get(k).map_or(0, |w| w.admissions).saturating_add(1);
            let why = Rec {
                status: Status::Held,
                layer: entry.seg.layer,
                cause: None,
                cycle: self.cycle,
                tokens_before: wide(tokens),
                tokens_after: wide(tokens),
                admissions,
                provenance: None,
                rung: None,
            };
            self.why.put(k, why);
            self.stamp_why(k);
        }
        self.counters.admitted = self.counters.admitted.saturating_add(1);
        self.totals.admitted = self.totals.admitted.saturating_add(tokens as u64);
        self.entries.push(entry);
        Ok(Admit::Admitted { id, demoted })
    }

    pub fn to_json(&self) -> CtxResult<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| CtxError::State(format!("cannot serialise window: {e}")))
    }

    /// A saved state, refused unless it is one a window could have reached (see `validate`).
    pub fn from_json(bytes: &[u8]) -> CtxResult<Self> {
        let w: Window = serde_json::from_slice(bytes).map_err(|e| CtxError::State(format!("not a saved ContextWindow: {e}")))?;
        w.loaded()
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_persist;
#[cfg(test)]
mod tests_whys;
#[cfg(test)]
mod tests_park_probe;
