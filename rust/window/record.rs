//! One `why` answer as the ledger stores it (`Rec`, without its key) and its packed byte form.
//!
//! A long conversation has answers for every key it ever admitted (hundreds per held segment
//! after a few dozen turns), so each is kept as a few bytes rather than a struct with strings:
//!
//! `key length` · key · status · layer · cause tag [· rung index] · cycle · tokens before ·
//! tokens after · admissions · provenance (0, or 1 · length · text) · rung name (same)
//!
//! Integers are LEB128 varints. The rung name is stored only when it cannot be derived from the
//! cause and the policy (answers saved before causes were recorded); `why()` derives it otherwise.
//! The same bytes are what a snapshot carries, so restoring the ledger is one copy and one
//! checking scan (`scan`), with no allocation per answer.

use super::ledger::{Cause, Status, Why};
use crate::engine::Layer;

/// A stored answer, owned (the ledger's overlay of recent changes holds these).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rec {
    pub status: Status,
    pub layer: Layer,
    pub cause: Option<Cause>,
    pub cycle: u64,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub admissions: u64,
    pub provenance: Option<Box<str>>,
    /// The rung's name when it is not the one `cause` and the policy give (old states only).
    pub rung: Option<Box<str>>,
}

impl Rec {
    /// An answer read in the old, owned form (`Why`), with the rung name to store beside it:
    /// None when the cause and the policy give it. Returns the answer's key and the record.
    pub fn from_why(w: Why, rung: Option<String>) -> (String, Rec) {
        let n = |x: usize| u64::try_from(x).unwrap_or(u64::MAX);
        let rec = Rec {
            status: w.status,
            layer: w.layer,
            cause: w.cause,
            cycle: w.cycle,
            tokens_before: n(w.tokens_before),
            tokens_after: n(w.tokens_after),
            admissions: w.admissions,
            provenance: w.provenance.map(String::into_boxed_str),
            rung: rung.map(String::into_boxed_str),
        };
        (w.key, rec)
    }
}

/// A stored answer, borrowed from the packed bytes or from a `Rec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecView<'a> {
    pub status: Status,
    pub layer: Layer,
    pub cause: Option<Cause>,
    pub cycle: u64,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub admissions: u64,
    pub provenance: Option<&'a str>,
    pub rung: Option<&'a str>,
}

impl Rec {
    pub fn view(&self) -> RecView<'_> {
        RecView {
            status: self.status,
            layer: self.layer,
            cause: self.cause,
            cycle: self.cycle,
            tokens_before: self.tokens_before,
            tokens_after: self.tokens_after,
            admissions: self.admissions,
            provenance: self.provenance.as_deref(),
            rung: self.rung.as_deref(),
        }
    }
}

impl RecView<'_> {
    pub fn to_rec(self) -> Rec {
        Rec {
            status: self.status,
            layer: self.layer,
            cause: self.cause,
            cycle: self.cycle,
            tokens_before: self.tokens_before,
            tokens_after: self.tokens_after,
            admissions: self.admissions,
            provenance: self.provenance.map(Box::from),
            rung: self.rung.map(Box::from),
        }
    }
}

/// A count as the ledger stores it (counts are at most `MAX_COUNT`, far below u64::MAX).
pub fn wide(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

const STATUSES: [Status; 5] = [Status::Held, Status::EvictedRecoverable, Status::EvictedDispensable, Status::Rewritten, Status::Truncated];

fn status_code(s: Status) -> u8 {
    match s {
        Status::Held => 0,
        Status::EvictedRecoverable => 1,
        Status::EvictedDispensable => 2,
        Status::Rewritten => 3,
        Status::Truncated => 4,
    }
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n & 0x7f) as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_text(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
    }
}

/// Appends the packed form of (`key`, `r`) to `out`.
pub fn encode(out: &mut Vec<u8>, key: &str, r: RecView<'_>) {
    put_varint(out, key.len() as u64);
    out.extend_from_slice(key.as_bytes());
    out.push(status_code(r.status));
    out.push(r.layer as u8);
    match r.cause {
        None => out.push(0),
        Some(Cause::Rung(i)) => {
            out.push(1);
            put_varint(out, i as u64);
        }
        Some(Cause::Digest(i)) => {
            out.push(2);
            put_varint(out, i as u64);
        }
        Some(Cause::Discard) => out.push(3),
        Some(Cause::Rewrite) => out.push(4),
        Some(Cause::DigestCall) => out.push(5),
    }
    for n in [r.cycle, r.tokens_before, r.tokens_after, r.admissions] {
        put_varint(out, n);
    }
    put_text(out, r.provenance);
    put_text(out, r.rung);
}

/// A reader over packed records; every read is checked, so any bytes give `None`, never a panic.
pub struct Reader<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    #[inline]
    fn varint(&mut self) -> Option<u64> {
        // Most fields fit one byte.
        if let Some(&b) = self.bytes.get(self.at) {
            if b < 0x80 {
                self.at += 1;
                return Some(u64::from(b));
            }
        }
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let part = u64::from(b & 0x7f);
            // The tenth byte may carry only the top bit of a u64.
            if shift == 63 && part > 1 {
                return None;
            }
            n |= part << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    #[inline]
    fn slice(&mut self, len: u64) -> Option<&'a [u8]> {
        let len = usize::try_from(len).ok()?;
        let end = self.at.checked_add(len)?;
        let s = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    #[inline]
    fn text(&mut self) -> Option<&'a str> {
        let n = self.varint()?;
        std::str::from_utf8(self.slice(n)?).ok()
    }

    #[inline]
    fn opt_text(&mut self) -> Option<Option<&'a str>> {
        match self.byte()? {
            0 => Some(None),
            1 => Some(Some(self.text()?)),
            _ => None,
        }
    }

    /// The key of the record at the cursor, leaving the cursor after it.
    #[inline]
    pub fn key(&mut self) -> Option<&'a str> {
        self.text()
    }

    /// The key's bytes, unchecked as text: for comparing keys of records already scanned
    /// (a str orders as its bytes do).
    #[inline]
    pub fn key_bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.varint()?;
        self.slice(n)
    }

    /// The rest of the record after its key.
    #[inline]
    pub fn rec(&mut self) -> Option<RecView<'a>> {
        let status = *STATUSES.get(usize::from(self.byte()?))?;
        let layer = Layer::from_index(usize::from(self.byte()?))?;
        let cause = match self.byte()? {
            0 => None,
            1 => Some(Cause::Rung(usize::try_from(self.varint()?).ok()?)),
            2 => Some(Cause::Digest(usize::try_from(self.varint()?).ok()?)),
            3 => Some(Cause::Discard),
            4 => Some(Cause::Rewrite),
            5 => Some(Cause::DigestCall),
            _ => return None,
        };
        let cycle = self.varint()?;
        let tokens_before = self.varint()?;
        let tokens_after = self.varint()?;
        let admissions = self.varint()?;
        let provenance = self.opt_text()?;
        let rung = self.opt_text()?;
        Some(RecView { status, layer, cause, cycle, tokens_before, tokens_after, admissions, provenance, rung })
    }

    /// The whole record at the cursor.
    #[inline]
    pub fn next_record(&mut self) -> Option<(&'a str, RecView<'a>)> {
        let key = self.key()?;
        Some((key, self.rec()?))
    }
}

/// What a checking scan of packed records found.
pub struct Scanned {
    pub offsets: Vec<u32>,
    pub sum: u128,
    /// The indices (into `offsets`) of the records that say their key is held (held or
    /// truncated): validation checks them against the held entries without a search each.
    pub held: Vec<u32>,
}

/// Whether an answer says its key is held.
pub fn says_held(s: Status) -> bool {
    matches!(s, Status::Held | Status::Truncated)
}

/// Checks packed records (each well formed, keys strictly increasing, so unique) and returns
/// where each starts and the combined digest of them; `None` names no reason, the caller does.
pub fn scan(bytes: &[u8]) -> Option<Scanned> {
    scan_with(bytes, true)
}

/// `scan`, with the records hashed into `sum` only when `hashed` (else it is 0): a snapshot
/// of version 3 carries the sum, and a fold already has it.
pub fn scan_with(bytes: &[u8], hashed: bool) -> Option<Scanned> {
    u32::try_from(bytes.len()).ok()?;
    let mut offsets = Vec::with_capacity(bytes.len() / 16);
    let mut sum = 0u128;
    let mut held = Vec::new();
    let mut r = Reader { bytes, at: 0 };
    let mut last: Option<&[u8]> = None;
    while r.at < bytes.len() {
        let start = r.at;
        let key = r.key_bytes()?;
        // Keys are mostly ASCII, which is UTF-8: the general check (a call per key) only for
        // the others. A str orders as its bytes do.
        if !key.is_ascii() && std::str::from_utf8(key).is_err() {
            return None;
        }
        if last.is_some_and(|l| l >= key) {
            return None;
        }
        if says_held(r.rec()?.status) {
            held.push(u32::try_from(offsets.len()).ok()?);
        }
        last = Some(key);
        offsets.push(u32::try_from(start).ok()?);
        if hashed {
            sum ^= hash(bytes.get(start..r.at)?);
        }
    }
    offsets.shrink_to_fit();
    Some(Scanned { offsets, sum, held })
}

/// One record's digest: the ledger's digest combines them by XOR, which is order-free (a key
/// has one record, so no two equal records cancel) and updates in O(1) as answers change.
pub fn hash(packed: &[u8]) -> u128 {
    crate::hash::xxh3_128(packed)
}
