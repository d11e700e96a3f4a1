//! The store of `why` answers: one per key the window ever admitted.
//!
//! Most answers are settled (the key left long ago) and only read, so they live packed in one
//! byte buffer sorted by key (`record`), found by binary search over their offsets: a few bytes
//! an answer, its key held once, and a restore copies the buffer and scans it once instead of
//! building a map of structs. Answers written since sit in a small overlay (a tombstone for one
//! forgotten), folded back into the buffer once it grows past half of it, so a change costs O(1)
//! amortised. The ledger also keeps the XOR of its records' digests up to date, so the window's
//! state digest never rereads it (see `persist::state_digest`).

use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use super::ledger::{Cause, Why};
use super::record::{self, Reader, Rec, RecView};
use crate::engine::Policy;

#[derive(Clone, Debug, Default)]
pub struct Ledger {
    packed: Vec<u8>,
    offsets: Vec<u32>,
    /// Answers changed since the last fold; `None` hides a packed one (forgotten).
    overlay: FxHashMap<Box<str>, Option<Rec>>,
    len: usize,
    /// How many answers say their key is held: validation compares it with the held keys
    /// instead of reading every answer.
    held: usize,
    /// Which packed records say so (indices into `offsets`; the overlay may override them).
    held_packed: Vec<u32>,
    sum: u128,
    /// The policy's rung names, so the answer's rung name is derived, not stored.
    names: Vec<Box<str>>,
}

/// The policy's rung names, in rung order (what a `Cause` index refers to).
pub fn rung_names(p: &Policy) -> Vec<Box<str>> {
    p.rungs.iter().map(|r| Box::from(r.name.as_str())).collect()
}

/// The `why` answer's rung name for a cause, given the policy's rung names.
pub fn cause_label(names: &[Box<str>], cause: Cause) -> &str {
    match cause {
        Cause::Rung(r) | Cause::Digest(r) => names.get(r).map_or("", |n| n),
        Cause::Discard => "discard",
        Cause::Rewrite => "rewrite",
        Cause::DigestCall => "digest",
    }
}

impl Ledger {
    pub fn new(names: Vec<Box<str>>) -> Self {
        Self { names, ..Self::default() }
    }

    /// A ledger from packed records (a snapshot's), checked; None when they are not well formed.
    pub fn from_packed(packed: Vec<u8>, names: Vec<Box<str>>) -> Option<Self> {
        Self::from_packed_summed(packed, names, None)
    }

    /// `from_packed`, with the records' digest (`sum`) given when the writer stored it
    /// beside them (a version-3 snapshot, under its frame digest): the checking scan then
    /// does not hash every record again.
    pub fn from_packed_summed(packed: Vec<u8>, names: Vec<Box<str>>, sum: Option<u128>) -> Option<Self> {
        let s = record::scan_with(&packed, sum.is_none())?;
        let len = s.offsets.len();
        let sum = sum.unwrap_or(s.sum);
        Some(Self { packed, offsets: s.offsets, overlay: FxHashMap::default(), len, held: s.held.len(), held_packed: s.held, sum, names })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many answers say their key is held.
    pub fn held_count(&self) -> usize {
        self.held
    }

    /// The XOR of every record's digest (see `record::hash`).
    pub fn digest(&self) -> u128 {
        self.sum
    }

    pub fn names(&self) -> &[Box<str>] {
        &self.names
    }

    /// Sets the rung names and drops stored rung names they now give (states read from JSON).
    pub fn settle(&mut self, names: Vec<Box<str>>) {
        self.names = names;
        let stale: Vec<(Box<str>, Rec)> = self
            .iter()
            .filter(|(_, r)| r.rung.is_some() && r.cause.map(|c| cause_label(&self.names, c)) == r.rung)
            .map(|(k, r)| (Box::from(k), r.to_rec()))
            .collect();
        for (k, mut r) in stale {
            r.rung = None;
            self.put(&k, r);
        }
        self.fold();
    }

    fn packed_at(&self, i: usize) -> Option<(&str, RecView<'_>)> {
        let at = usize::try_from(*self.offsets.get(i)?).ok()?;
        Reader { bytes: &self.packed, at }.next_record()
    }

    fn packed_key(&self, i: usize) -> Option<&[u8]> {
        let at = usize::try_from(*self.offsets.get(i)?).ok()?;
        Reader { bytes: &self.packed, at }.key_bytes()
    }

    fn packed_find(&self, key: &str) -> Option<RecView<'_>> {
        let i = self.offsets_search(key).ok()?;
        self.packed_at(i).map(|(_, r)| r)
    }

    fn offsets_search(&self, key: &str) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.offsets.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.packed_key(mid).map_or(Ordering::Greater, |k| k.cmp(key.as_bytes())) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    pub fn get(&self, key: &str) -> Option<RecView<'_>> {
        match self.overlay.get(key) {
            Some(r) => r.as_ref().map(Rec::view),
            None => self.packed_find(key),
        }
    }

    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    fn record_hash(key: &str, r: RecView<'_>) -> u128 {
        let mut buf = Vec::with_capacity(key.len() + 24);
        record::encode(&mut buf, key, r);
        record::hash(&buf)
    }

    /// Writes `key`'s answer (new or changed).
    pub fn put(&mut self, key: &str, rec: Rec) {
        match self.get(key).map(|old| (Self::record_hash(key, old), record::says_held(old.status))) {
            Some((hash, held)) => {
                self.sum ^= hash;
                if held {
                    self.held = self.held.saturating_sub(1);
                }
            }
            None => self.len = self.len.saturating_add(1),
        }
        if record::says_held(rec.status) {
            self.held = self.held.saturating_add(1);
        }
        self.sum ^= Self::record_hash(key, rec.view());
        self.overlay.insert(Box::from(key), Some(rec));
        self.maybe_fold();
    }

    /// Forgets `key`'s answer; whether it had one.
    pub fn remove(&mut self, key: &str) -> bool {
        let Some((hash, held)) = self.get(key).map(|old| (Self::record_hash(key, old), record::says_held(old.status))) else {
            return false;
        };
        self.sum ^= hash;
        self.len = self.len.saturating_sub(1);
        if held {
            self.held = self.held.saturating_sub(1);
        }
        if self.packed_find(key).is_some() {
            self.overlay.insert(Box::from(key), None);
        } else {
            self.overlay.remove(key);
        }
        self.maybe_fold();
        true
    }

    fn maybe_fold(&mut self) {
        if self.overlay.len() > 64 + self.offsets.len() / 2 {
            self.fold();
        }
    }

    /// Every answer packed, sorted by key (the overlay folded in). The packed records between
    /// two overlay keys are copied as they are, not read and written again.
    pub fn packed(&self) -> std::borrow::Cow<'_, [u8]> {
        if self.overlay.is_empty() {
            return std::borrow::Cow::Borrowed(&self.packed);
        }
        let mut over: Vec<(&str, Option<&Rec>)> = self.overlay.iter().map(|(k, v)| (&**k, v.as_ref())).collect();
        over.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let start = |i: usize| self.offsets.get(i).and_then(|&o| usize::try_from(o).ok()).unwrap_or(self.packed.len());
        let mut out = Vec::with_capacity(self.packed.len() + self.overlay.len() * 32);
        let mut next = 0;
        for (k, r) in over {
            let (at, found) = match self.offsets_search(k) {
                Ok(i) => (i, true),
                Err(i) => (i, false),
            };
            out.extend_from_slice(self.packed.get(start(next)..start(at)).unwrap_or_default());
            next = if found { at + 1 } else { at };
            if let Some(r) = r {
                record::encode(&mut out, k, r.view());
            }
        }
        out.extend_from_slice(self.packed.get(start(next)..).unwrap_or_default());
        std::borrow::Cow::Owned(out)
    }

    /// Folds the overlay into the packed records.
    pub fn fold(&mut self) {
        if self.overlay.is_empty() {
            return;
        }
        let packed = self.packed().into_owned();
        // Written by `encode` from sorted, unique keys: the scan cannot fail; if it ever did,
        // keeping the overlay as it is loses nothing.
        if let Some(s) = record::scan_with(&packed, false) {
            self.packed = packed;
            self.offsets = s.offsets;
            self.held_packed = s.held;
            self.overlay = FxHashMap::default();
        }
    }

    /// The keys whose answers say they are held (as bytes; any order): the packed ones the
    /// overlay leaves alone, then the overlay's. Validation matches them with the held entries
    /// by hashing instead of searching the ledger once per entry.
    pub fn held_keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let packed = self.held_packed.iter().filter_map(|&i| self.packed_key(usize::try_from(i).ok()?));
        let packed = packed.filter(|k| self.overlay.is_empty() || std::str::from_utf8(k).map_or(true, |k| !self.overlay.contains_key(k)));
        let over = self.overlay.iter().filter(|(_, r)| r.as_ref().is_some_and(|r| record::says_held(r.status))).map(|(k, _)| k.as_bytes());
        packed.chain(over)
    }

    /// Every answer in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, RecView<'_>)> + '_ {
        let mut over: Vec<(&str, Option<&Rec>)> = self.overlay.iter().map(|(k, v)| (&**k, v.as_ref())).collect();
        over.sort_unstable_by(|a, b| a.0.cmp(b.0));
        Merge { packed: Reader { bytes: &self.packed, at: 0 }, next: None, over: over.into_iter().peekable() }.flatten()
    }

    /// The answer as `why()` gives it: the key, and the rung's name derived unless stored.
    pub fn answer(&self, key: &str, r: RecView<'_>) -> Why {
        let rung = r.rung.map(str::to_string).or_else(|| r.cause.map(|c| cause_label(&self.names, c).to_string()));
        Why {
            key: key.to_string(),
            status: r.status,
            cycle: r.cycle,
            rung,
            cause: r.cause,
            tokens_before: usize::try_from(r.tokens_before).unwrap_or(usize::MAX),
            tokens_after: usize::try_from(r.tokens_after).unwrap_or(usize::MAX),
            provenance: r.provenance.map(str::to_string),
            layer: r.layer,
            admissions: r.admissions,
        }
    }
}

/// The packed records and the sorted overlay, merged by key (the overlay wins; a tombstone
/// hides). Yields `None` for a hidden record, flattened away by `iter`.
struct Merge<'a, I: Iterator<Item = (&'a str, Option<&'a Rec>)>> {
    packed: Reader<'a>,
    next: Option<(&'a str, RecView<'a>)>,
    over: std::iter::Peekable<I>,
}

impl<'a, I: Iterator<Item = (&'a str, Option<&'a Rec>)>> Iterator for Merge<'a, I> {
    type Item = Option<(&'a str, RecView<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next.is_none() && self.packed.at < self.packed.bytes.len() {
            self.next = self.packed.next_record();
            if self.next.is_none() {
                // Never for scanned bytes; stop rather than read on from inside a record.
                self.packed.at = self.packed.bytes.len();
            }
        }
        let take_over = match (self.next, self.over.peek()) {
            (None, None) => return None,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (Some((pk, _)), Some((ok, _))) => *ok <= pk,
        };
        if take_over {
            let (k, r) = self.over.next()?;
            if self.next.is_some_and(|(pk, _)| pk == k) {
                self.next = None;
            }
            Some(r.map(|r| (k, r.view())))
        } else {
            Some(self.next.take())
        }
    }
}
