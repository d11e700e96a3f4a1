//! What a restored window must satisfy before it is used: the constructor's rules plus the
//! state's own invariants. A state that breaks any of them is refused whole, with the reason;
//! nothing is repaired silently.

use rustc_hash::FxHashSet as HashSet;

use super::journal::REVISION_LIMIT;
use super::record::says_held;
use super::{Window, ID_LIMIT, LIFETIME_MAX};
use crate::engine::{Budget, Layer};
use crate::error::{CtxError, CtxResult};
use crate::limits::{check_count, checked_total};

fn broken(what: impl std::fmt::Display) -> CtxError {
    CtxError::State(format!("not a consistent saved ContextWindow: {what}"))
}

impl Window {
    /// Every rule a window built by `new` and changed by its methods keeps.
    pub(super) fn validate(&self) -> CtxResult<()> {
        Budget::new(self.limit, self.reserve, [None; 8]).map_err(broken)?;
        if let Some(w) = self.low_watermark {
            if !(w > 0.0 && w <= 1.0) {
                return Err(broken(format!("low_watermark {w} is outside (0, 1]")));
            }
        }
        if let Some(c) = &self.cache {
            c.validate().map_err(broken)?;
        }
        // Ids start at 1 and stop at ID_LIMIT (the window refuses work that would pass it), so a
        // next_id outside that range was not written by a window. The counters, the cycle and
        // the versions are statistics that saturate: any value is one a window could write.
        if self.next_id == 0 || self.next_id > ID_LIMIT {
            return Err(broken(format!("next_id {} is outside 1..={ID_LIMIT}", self.next_id)));
        }
        // A revision past the limit was not written by a window (see `REVISION_LIMIT`).
        if self.revision > REVISION_LIMIT {
            return Err(broken(format!("revision {} is above {REVISION_LIMIT}", self.revision)));
        }
        let t = &self.totals;
        let inflow = u128::from(t.admitted) + u128::from(t.surrogates_added);
        if inflow > u128::from(LIFETIME_MAX) || [t.evicted_recoverable, t.evicted_dispensable, t.rewritten_away, t.truncated_away].iter().any(|&n| n > LIFETIME_MAX) {
            return Err(broken("a ledger total is out of range"));
        }
        let mut ids = HashSet::with_capacity_and_hasher(self.entries.len(), Default::default());
        // Keyed entries, each found under its key in the key index (so no key is held twice:
        // the index gives one id a key, and ids are unique).
        let mut keyed = 0usize;
        let mut current_turns = 0;
        for (i, e) in self.entries.iter().enumerate() {
            // Built only for a message: formatting it for every entry costs a restore ~1 µs each.
            let at = || format!("entries[{i}]");
            if !ids.insert(e.id) {
                return Err(broken(format!("{}: id {} is used twice", at(), e.id)));
            }
            if e.id == 0 || e.id >= self.next_id {
                return Err(broken(format!("{}: id {} is not in 1..next_id ({})", at(), e.id, self.next_id)));
            }
            e.seg.validate().map_err(|err| broken(format!("{}: {err}", at())))?;
            check_count(e.tokens, "a held count").map_err(|err| broken(format!("{}: {err}", at())))?;
            if e.seg.layer == Layer::CurrentTurn {
                current_turns += 1;
            }
            if let Some(k) = &e.seg.key {
                if self.held_keys.get(k.as_str()) != Some(&e.id) {
                    return Err(broken(format!("{}: key {k:?} is held twice, or the key index says otherwise", at())));
                }
                keyed += 1;
            }
        }
        if current_turns > 1 {
            return Err(broken(format!("{current_turns} current turns are held; a window holds one")));
        }
        if self.held_keys.len() != keyed {
            return Err(broken("held_keys does not match the held entries"));
        }
        // The held keys and the keys whose answers say held are one set: every answer that
        // says held names a held key (each once: the ledger's keys are unique), and there are
        // as many of those answers as held keys.
        let mut said_held = 0usize;
        for k in self.why.held_keys() {
            if !std::str::from_utf8(k).is_ok_and(|k| self.held_keys.contains_key(k)) {
                return Err(broken(format!("the ledger says {:?} is held, but no entry holds it", String::from_utf8_lossy(k))));
            }
            said_held += 1;
        }
        if said_held != keyed {
            let missing = self.entries.iter().filter_map(|e| e.seg.key.as_deref()).find(|k| !self.why.get(k).is_some_and(|w| says_held(w.status)));
            return Err(broken(format!("key {:?} is held but its ledger says otherwise", missing.unwrap_or_default())));
        }
        let held = checked_total(self.entries.iter().map(|e| e.tokens), "what the window holds").map_err(broken)?;
        if !self.totals.balances(held as u64) {
            return Err(broken("the ledger's token totals do not balance"));
        }
        for p in &self.pending {
            let holds = self.entries.iter().any(|e| e.id == p.id && e.seg.key.as_deref() == Some(p.key.as_str()));
            if !holds {
                return Err(broken(format!("a deferred rewrite of {:?} refers to no held entry", p.key)));
            }
        }
        Ok(())
    }
}
