//! Binary formats 2 and 3: the snapshot body and the state digests deltas promise.
//!
//! Version 2 differs from 1 in what a restore must rebuild: the `why` ledger travels as its
//! packed records (`record`), read with one copy and one scan, and `held_keys` is not written
//! (it is the held entries' keys). The state digest is no longer a hash of the whole serialised
//! state (~100 µs at turn 60) but of its parts, each kept current as it changes: the ledger's
//! XOR of record digests, one digest per held segment (cached while the segment is unchanged)
//! and the policy's, with the small fields hashed whole. Any difference in any part still
//! changes it, so a delta applied to the wrong window, out of order or with a change missed
//! still fails the check.
//!
//! Version 3 (written now) keeps version 2's body and adds, after it, the digests a reader would
//! otherwise take again (the ledger's and each held segment's), and its deltas promise
//! `state_digest_v3`: the same parts, written as fixed-width fields.

use compact_str::CompactString;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use crate::hash::xxh3_128;

use super::changes::Pending;
use super::fields::Bytes;
use super::ledger::{Counters, Totals};
use super::record::wide;
use super::persist::{hash_filled, hash_of, refused, unhashable};
use super::journal::Journal;
use super::whys::{rung_names, Ledger};
use super::{Entry, Window};
use crate::engine::cache::CacheProfile;
use crate::engine::{policy_format, Policy, SegmentData};
use crate::error::CtxResult;

/// The policy as the binary form carries it: its document as JSON text.
pub(super) fn policy_text(p: &Policy) -> String {
    policy_format::to_value(None, p).to_string()
}

/// The digest of `policy_text(p)`, which the state digests include.
pub(super) fn policy_text_digest(p: &Policy) -> u128 {
    xxh3_128(policy_text(p).as_bytes())
}

#[derive(Serialize)]
pub(super) struct BodyOut<'a> {
    limit: usize,
    reserve: usize,
    policy: String,
    policy_name: &'a Option<String>,
    low_watermark: Option<f64>,
    entries: &'a [Entry],
    next_id: u64,
    cycle: u64,
    fresh_unrecoverable: bool,
    pending: &'a [Pending],
    why: Bytes<'a>,
    counters: &'a Counters,
    totals: &'a Totals,
    last_kept: &'a [(u64, u32)],
    stable_prefix_tokens: usize,
    why_horizon: Option<u64>,
    cache: &'a Option<CacheProfile>,
    revision: u64,
    /// Version 3: the ledger's digest, then each held segment's, 16 bytes little-endian each
    /// (`stored_digests`), so a restore need not hash the state it just read.
    digests: Bytes<'a>,
}

/// A version-2 body as read (`read_v2`): the fields before the entries, the entries (read one
/// by one, each segment's digest taken from its bytes), the fields after them.
pub(super) struct BodyIn<'a> {
    pub(super) head: BodyHead<'a>,
    pub(super) entries: Vec<Entry>,
    pub(super) tail: BodyTail<'a>,
    /// The ledger's digest as a version-3 body stores it (the segments' are already set).
    pub(super) why_sum: Option<u128>,
}

/// `BodyOut`'s fields before `entries`, as read.
#[derive(Deserialize)]
pub(super) struct BodyHead<'a> {
    pub(super) limit: usize,
    pub(super) reserve: usize,
    pub(super) policy: &'a str,
    pub(super) policy_name: Option<String>,
    pub(super) low_watermark: Option<f64>,
}

/// `BodyOut`'s fields after `entries`, as read.
#[derive(Deserialize)]
pub(super) struct BodyTail<'a> {
    pub(super) next_id: u64,
    pub(super) cycle: u64,
    pub(super) fresh_unrecoverable: bool,
    pub(super) pending: Vec<Pending>,
    #[serde(borrow)]
    pub(super) why: Bytes<'a>,
    pub(super) counters: Counters,
    pub(super) totals: Totals,
    pub(super) last_kept: Vec<(u64, u32)>,
    pub(super) stable_prefix_tokens: usize,
    pub(super) why_horizon: Option<u64>,
    pub(super) cache: Option<CacheProfile>,
    pub(super) revision: u64,
}

impl Window {
    /// The ledger's digest and each held segment's, as a version-3 body stores them.
    pub(super) fn stored_digests(&self) -> CtxResult<Vec<u8>> {
        let mut out = Vec::with_capacity(16 * (self.entries.len() + 1));
        out.extend_from_slice(&self.why.digest().to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&seg_digest(&e.seg)?.to_le_bytes());
        }
        Ok(out)
    }

    /// The version-3 body of this window (`packed` is its ledger's packed records, `digests`
    /// what `stored_digests` gives).
    pub(super) fn body_out<'a>(&'a self, packed: &'a [u8], digests: &'a [u8]) -> BodyOut<'a> {
        BodyOut {
            limit: self.limit,
            reserve: self.reserve,
            policy: policy_text(&self.policy),
            policy_name: &self.policy_name,
            low_watermark: self.low_watermark,
            entries: &self.entries,
            next_id: self.next_id,
            cycle: self.cycle,
            fresh_unrecoverable: self.fresh_unrecoverable,
            pending: &self.pending,
            why: Bytes(packed),
            counters: &self.counters,
            totals: &self.totals,
            last_kept: &self.last_kept,
            stable_prefix_tokens: self.stable_prefix_tokens,
            why_horizon: self.why_horizon,
            cache: &self.cache,
            revision: self.revision,
            digests: Bytes(digests),
        }
    }

    /// A window from a version-2 body, not yet validated (see `Window::loaded`).
    pub(super) fn from_body(b: BodyIn<'_>) -> CtxResult<Self> {
        let BodyIn { head: h, entries, tail: t, why_sum } = b;
        let policy_digest = xxh3_128(h.policy.as_bytes());
        let policy = read_policy(h.policy, policy_digest)?;
        let names = rung_names(&policy);
        let why = Ledger::from_packed_summed(t.why.0.to_vec(), names, why_sum).ok_or_else(|| refused("its why ledger is not well formed"))?;
        let held_keys = index_keys(&entries);
        let mut w = Window {
            limit: h.limit,
            reserve: h.reserve,
            policy,
            policy_name: h.policy_name,
            low_watermark: h.low_watermark,
            entries,
            next_id: t.next_id,
            held_keys,
            cycle: t.cycle,
            fresh_unrecoverable: t.fresh_unrecoverable,
            pending: t.pending,
            why,
            counters: t.counters,
            totals: t.totals,
            last_kept: t.last_kept,
            stable_prefix_tokens: t.stable_prefix_tokens,
            why_horizon: t.why_horizon,
            cache: t.cache,
            revision: t.revision,
            journal: Default::default(),
        };
        // The writer hashed this very text: the policy's digest is the one just taken.
        w.journal.policy_digest = Some(policy_digest);
        Ok(w)
    }

    /// A window just read: rung names the policy gives are no longer stored, the state is
    /// validated, and a journal starts at its revision.
    pub(super) fn loaded(self) -> CtxResult<Self> {
        let w = self.settled();
        w.validate()?;
        Ok(w)
    }

    /// A window just read, not yet validated: its rung names settled and its journal started.
    pub(super) fn settled(mut self) -> Self {
        if self.why.names().is_empty() {
            self.why.settle(rung_names(&self.policy));
        }
        let policy = self.policy_digest();
        self.journal = Journal::starting_at(self.revision, policy);
        self
    }

    /// The digest of the policy's text: kept in the journal since the window was made or read,
    /// else taken now.
    fn policy_digest(&self) -> u128 {
        self.journal.policy_digest.unwrap_or_else(|| policy_text_digest(&self.policy))
    }

    /// Takes the held segments' digests now (after a fit or a restore), so the next
    /// `delta_since` finds them: each is taken once in its segment's life (`DigestMemo`).
    pub(super) fn cache_digests(&self) {
        for e in &self.entries {
            // A segment that cannot be hashed (never: it serialises) is hashed when asked.
            let _ = seg_digest(&e.seg);
        }
    }

    /// The digest of the whole state, from its parts (see the module's comment).
    pub(super) fn state_digest_v2(&self) -> CtxResult<u128> {
        let policy = self.policy_digest();
        let mut entries = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            entries.push((e.id, seg_digest(&e.seg)?, e.tokens, e.version, e.admitted_cycle, &e.provenance));
        }
        let parts = (
            (self.limit, self.reserve, policy, &self.policy_name, self.low_watermark),
            entries,
            (self.next_id, self.cycle, self.fresh_unrecoverable, &self.pending),
            (self.why.len(), self.why.digest()),
            (&self.counters, &self.totals, &self.last_kept, self.stable_prefix_tokens),
            (self.why_horizon, &self.cache, self.revision),
        );
        hash_of(&parts)
    }

    /// Version 3's state digest: version 2's parts, with the held entries and `last_kept` as
    /// fixed-width little-endian fields rather than postcard varints (a random 128-bit segment
    /// digest is 19 varint bytes, each a step of a loop: the entries were three quarters of the
    /// version-2 digest, which a park and its resume each take). Lists carry their lengths, so
    /// no two states give the same bytes.
    pub(super) fn state_digest_v3(&self) -> CtxResult<u128> {
        let policy = self.policy_digest();
        hash_filled(|mut buf| {
            let head = (self.limit, self.reserve, policy, &self.policy_name, self.low_watermark);
            buf = postcard::to_extend(&head, buf).map_err(unhashable)?;
            buf.extend_from_slice(&wide(self.entries.len()).to_le_bytes());
            for e in &self.entries {
                // One entry's fixed fields, then its provenance (postcard: 0 when there is none).
                let mut fixed = [0u8; 44];
                let parts: [&[u8]; 5] = [
                    &e.id.to_le_bytes(),
                    &seg_digest(&e.seg)?.to_le_bytes(),
                    &wide(e.tokens).to_le_bytes(),
                    &e.version.to_le_bytes(),
                    &e.admitted_cycle.to_le_bytes(),
                ];
                let mut at = 0;
                for p in parts {
                    if let Some(to) = fixed.get_mut(at..at + p.len()) {
                        to.copy_from_slice(p);
                    }
                    at += p.len();
                }
                buf.extend_from_slice(&fixed);
                match &e.provenance {
                    None => buf.push(0),
                    Some(p) => buf = postcard::to_extend(&Some(p), buf).map_err(unhashable)?,
                }
            }
            buf.extend_from_slice(&wide(self.last_kept.len()).to_le_bytes());
            for &(id, version) in &self.last_kept {
                buf.extend_from_slice(&id.to_le_bytes());
                buf.extend_from_slice(&version.to_le_bytes());
            }
            let rest = (
                (self.next_id, self.cycle, self.fresh_unrecoverable, &self.pending),
                (self.why.len(), self.why.digest()),
                (&self.counters, &self.totals, self.stable_prefix_tokens),
                (self.why_horizon, &self.cache, self.revision),
            );
            postcard::to_extend(&rest, buf).map_err(unhashable)
        })
    }
}

/// The key index of `entries` (key -> entry id): each key copied from its segment, inline
/// when short (boxing every key again was a tenth of a restore).
pub(super) fn index_keys(entries: &[Entry]) -> FxHashMap<CompactString, u64> {
    let mut index = FxHashMap::with_capacity_and_hasher(entries.len(), Default::default());
    for e in entries {
        if let Some(k) = &e.seg.key {
            index.insert(k.clone(), e.id);
        }
    }
    index
}

/// Policies read lately, by the digest of their text: a server restores windows of a few
/// policies over and over, and parsing the document was a tenth of a restore.
const POLICIES_KEPT: usize = 8;

thread_local! {
    static POLICIES: std::cell::RefCell<Vec<(u128, String, Policy)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The policy a body carries as JSON text (`digest` is the text's).
fn read_policy(text: &str, digest: u128) -> CtxResult<Policy> {
    // The text is compared too: a digest is not proof against a made-up collision.
    let known = POLICIES.with(|p| p.borrow().iter().find(|(d, t, _)| *d == digest && t == text).map(|(_, _, p)| p.clone()));
    if let Some(p) = known {
        return Ok(p);
    }
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| refused(format!("its policy: {e}")))?;
    let (_, policy) = policy_format::from_value(&doc).map_err(|e| refused(format!("its policy: {e}")))?;
    POLICIES.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() >= POLICIES_KEPT {
            p.remove(0);
        }
        p.push((digest, text.to_string(), policy.clone()));
    });
    Ok(policy)
}

/// A held segment's digest (of its serialised form), taken once and kept in the segment.
pub(super) fn seg_digest(seg: &SegmentData) -> CtxResult<u128> {
    if let Some(d) = seg.digest.get() {
        return Ok(d);
    }
    let d = hash_of(seg)?;
    seg.digest.set(d);
    Ok(d)
}
