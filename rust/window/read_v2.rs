//! Reading a version-2 snapshot body in stages rather than in one derived pass, so each held
//! segment's digest (what the state digest of `persist_v2` is made of) is taken from the very
//! bytes it was read from: one pass of xxh3 over a slice, instead of serialising every segment
//! again when the first delta is applied or written (a third of a restore at turn 60).
//!
//! The stages are the fields of `BodyOut` in order, then the extras: postcard writes a struct
//! as its fields one after another, so a body read in stages is the body written in one.

use std::sync::Arc;

use serde::Deserialize;
use crate::hash::xxh3_128;

use super::fields::Bytes;
use super::persist::{refused, ExtrasOut};
use super::persist_v2::{BodyHead, BodyIn, BodyTail};
use super::Entry;
use crate::engine::SegmentData;
use crate::error::CtxResult;

/// An entry's fields after its segment.
#[derive(Deserialize)]
struct EntryTail {
    tokens: usize,
    version: u32,
    admitted_cycle: u64,
    provenance: Option<Box<(Option<String>, String)>>,
}

/// Fewer bytes than any entry takes (its segment alone has an 8-byte score): a count of
/// entries beyond `bytes / MIN_ENTRY` is refused before anything is allocated for it.
const MIN_ENTRY: usize = 16;

fn take<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> CtxResult<(T, &'a [u8])> {
    postcard::take_from_bytes(bytes).map_err(|e| refused(e.to_string()))
}

/// A version-2 or -3 snapshot body and its extras, each held segment's digest already set:
/// taken from the bytes it was read from (version 2) or read where the body stores it
/// (`stored`: version 3, which also stores the ledger's digest).
pub(super) fn read_body(body: &[u8], stored: bool) -> CtxResult<(BodyIn<'_>, ExtrasOut)> {
    let (head, rest) = take::<BodyHead<'_>>(body)?;
    let (n, mut rest) = take::<usize>(rest)?;
    if n > rest.len() / MIN_ENTRY {
        return Err(refused(format!("it claims {n} entries in {} bytes", rest.len())));
    }
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let (id, at_seg) = take::<u64>(rest)?;
        let (seg, after) = take::<SegmentData>(at_seg)?;
        if !stored {
            // `after` is what follows the segment in `at_seg`: the segment is the bytes before it.
            let written = at_seg.len().checked_sub(after.len()).and_then(|n| at_seg.get(..n)).unwrap_or_default();
            seg.digest.set(xxh3_128(written));
        }
        let (t, after) = take::<EntryTail>(after)?;
        entries.push(Entry { id, seg: Arc::new(seg), tokens: t.tokens, version: t.version, admitted_cycle: t.admitted_cycle, provenance: t.provenance });
        rest = after;
    }
    let (tail, rest) = take::<BodyTail<'_>>(rest)?;
    let (why_sum, rest) = if stored { set_digests(&entries, rest).map(|(s, r)| (Some(s), r))? } else { (None, rest) };
    let (extras, rest) = take::<ExtrasOut>(rest)?;
    if !rest.is_empty() {
        return Err(refused("bytes follow the state"));
    }
    Ok((BodyIn { head, entries, tail, why_sum }, extras))
}

/// Reads a version-3 body's stored digests: gives each held segment its own and returns the
/// ledger's, with what follows them.
fn set_digests<'a>(entries: &[Entry], rest: &'a [u8]) -> CtxResult<(u128, &'a [u8])> {
    let (digests, rest) = take::<Bytes<'_>>(rest)?;
    let words: Vec<u128> = digests.0.chunks_exact(16).filter_map(|c| c.try_into().ok().map(u128::from_le_bytes)).collect();
    if digests.0.len() % 16 != 0 || words.len() != entries.len() + 1 {
        return Err(refused(format!("it stores {} bytes of digests for {} entries", digests.0.len(), entries.len())));
    }
    for (e, &d) in entries.iter().zip(words.iter().skip(1)) {
        e.seg.digest.set(d);
    }
    Ok((words.first().copied().unwrap_or_default(), rest))
}
