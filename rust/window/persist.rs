//! A window's state in binary: a snapshot (the whole state) or a delta (what changed since a
//! revision, see `delta`). Both are framed the same way:
//!
//! `CTXW` · kind (`S` snapshot, `D` delta) · format version · postcard body · xxh3-128 of
//! everything before it (16 bytes, little-endian).
//!
//! Version 2 (see `persist_v2`) packs the `why` ledger; version 3 (written now) has version 2's
//! bodies, and its deltas promise the state digest of `state_digest_v3` (fixed-width fields, a
//! quicker hash than version 2's). Versions 1 (the window's derived serde layout, the ledger as a
//! map of full answers) and 2 are still read, snapshots and deltas alike, so states parked before
//! an upgrade resume after it.
//!
//! postcard (serde, varints, no field names or type markers), written in one pass straight into
//! the output buffer, because parking a conversation is on the serving path: the JSON form
//! (`to_json`) is for people to read. Free-form documents inside (the policy, the tokenizer
//! recipe) travel as JSON text. The
//! digest makes a state changed in a store (a flipped bit, a cut write) fail to load instead of
//! loading as another window; the loader then validates the state itself (`validate`).

use serde::{Deserialize, Serialize};
use crate::hash::xxh3_128;

use super::Window;
use crate::error::{CtxError, CtxResult};

pub const MAGIC: &[u8; 4] = b"CTXW";
pub const KIND_SNAPSHOT: u8 = b'S';
pub const KIND_DELTA: u8 = b'D';
pub const VERSION: u8 = 3;
/// The first binary version, still read.
pub const VERSION_1: u8 = 1;
/// The version before the fixed-width state digest (`state_digest_v3`), still read.
pub const VERSION_2: u8 = 2;
const HEADER: usize = 6;
const DIGEST: usize = 16;

/// What travels with the core state: the callers' `meta` objects as JSON text (`{entry id:
/// meta}`) and how to rebuild the tokenizer (`["encoding", name]`), both the bindings' business.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extras {
    pub metas: Option<String>,
    pub tokenizer: Option<(String, serde_json::Value)>,
}

/// `Extras` as the binary form carries it: the tokenizer's payload as JSON text.
#[derive(Serialize, Deserialize)]
pub(super) struct ExtrasOut {
    metas: Option<String>,
    tokenizer: Option<(String, String)>,
}

impl ExtrasOut {
    pub(super) fn of(e: &Extras) -> Self {
        Self { metas: e.metas.clone(), tokenizer: e.tokenizer.as_ref().map(|(k, v)| (k.clone(), v.to_string())) }
    }

    fn back(self) -> CtxResult<Extras> {
        let tokenizer = match self.tokenizer {
            Some((k, v)) => Some((k, serde_json::from_str(&v).map_err(|e| refused(format!("its tokenizer recipe: {e}")))?)),
            None => None,
        };
        Ok(Extras { metas: self.metas, tokenizer })
    }
}

pub(super) fn refused(what: impl std::fmt::Display) -> CtxError {
    CtxError::State(format!("not a saved ContextWindow: {what}"))
}

/// Whether `bytes` begin like a binary state (anything else may be the JSON form).
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// `body` framed: header, the body serde writes, digest.
pub(super) fn seal<T: Serialize>(kind: u8, body: &T, size_hint: usize) -> CtxResult<Vec<u8>> {
    let mut out = Vec::with_capacity(size_hint + HEADER + DIGEST + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[kind, VERSION]);
    let out = postcard::to_extend(body, out).map_err(|e| CtxError::State(format!("cannot serialise window: {e}")))?;
    let mut out = out;
    let digest = xxh3_128(&out);
    out.extend_from_slice(&digest.to_le_bytes());
    Ok(out)
}

/// The format version and body of a frame of `kind`, once its header and digest check out.
pub(super) fn open(kind: u8, bytes: &[u8]) -> CtxResult<(u8, &[u8])> {
    let what = if kind == KIND_SNAPSHOT { "snapshot" } else { "delta" };
    if bytes.len() < HEADER + DIGEST || !bytes.starts_with(MAGIC) {
        return Err(refused(format!("too short or not a ctxfast binary {what}")));
    }
    if bytes[4] != kind {
        let other = if bytes[4] == KIND_SNAPSHOT { "a snapshot" } else if bytes[4] == KIND_DELTA { "a delta" } else { "of an unknown kind" };
        return Err(refused(format!("expected a {what}, got bytes that are {other}")));
    }
    let version = bytes[5];
    if !(VERSION_1..=VERSION).contains(&version) {
        return Err(refused(format!("format version {version} is not one this ctxfast reads (it reads {VERSION_1} to {VERSION})")));
    }
    let (framed, digest) = bytes.split_at(bytes.len() - DIGEST);
    let mut want = [0u8; DIGEST];
    want.copy_from_slice(digest);
    if xxh3_128(framed) != u128::from_le_bytes(want) {
        return Err(refused("its integrity check failed (the bytes were changed or cut after they were saved)"));
    }
    Ok((version, &framed[HEADER..]))
}

/// Reads a body; every byte must belong to it. postcard's types nest only as deep as the Rust
/// types do (the free-form documents are JSON text, parsed with serde_json's depth limit).
pub(super) fn decode<'de, T: Deserialize<'de>>(body: &'de [u8]) -> CtxResult<T> {
    match postcard::take_from_bytes(body) {
        Ok((value, [])) => Ok(value),
        Ok(_) => Err(refused("bytes follow the state")),
        Err(e) => Err(refused(e.to_string())),
    }
}

/// The xxh3-128 of `value`'s postcard form: written out into a buffer kept per thread, then
/// hashed in one pass. (Hashing it as it was written, in 256-byte pieces, took twice as long:
/// each streaming update has a set cost, and the one-shot hash of a long form runs on AVX2.)
/// A buffer grown past `SCRATCH_KEPT` by a large state is released rather than kept.
pub(super) fn hash_of<T: Serialize + ?Sized>(value: &T) -> CtxResult<u128> {
    hash_filled(|buf| postcard::to_extend(value, buf).map_err(unhashable))
}

pub(super) fn unhashable(e: postcard::Error) -> CtxError {
    CtxError::State(format!("cannot hash window: {e}"))
}

/// The xxh3-128 of what `fill` writes into this thread's scratch buffer (given empty).
pub(super) fn hash_filled(fill: impl FnOnce(Vec<u8>) -> CtxResult<Vec<u8>>) -> CtxResult<u128> {
    SCRATCH.with(|cell| {
        let mut buf = cell.take();
        buf.clear();
        let written = fill(buf)?;
        let digest = xxh3_128(&written);
        if written.capacity() <= SCRATCH_KEPT {
            cell.set(written);
        }
        Ok(digest)
    })
}

const SCRATCH_KEPT: usize = 1 << 20;

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The version-1 digest of the whole core state (the hash of its whole version-1 form): what
/// a version-1 delta promises the window it leads to hashes to.
pub(super) fn state_digest(w: &Window) -> CtxResult<u128> {
    hash_of(w)
}

impl Window {
    /// The whole state as a binary snapshot.
    pub fn to_snapshot(&self, extras: &Extras) -> CtxResult<Vec<u8>> {
        let packed = self.why.packed();
        let digests = self.stored_digests()?;
        let hint = self.entries.iter().map(|e| e.seg.text.len() + 80).sum::<usize>() + packed.len() + 1024;
        seal(KIND_SNAPSHOT, &(self.body_out(&packed, &digests), ExtrasOut::of(extras)), hint)
    }

    /// A snapshot back, refused unless it is intact and a state a window could have reached.
    pub fn from_snapshot(bytes: &[u8]) -> CtxResult<(Self, Extras)> {
        let (w, extras) = Self::read_snapshot(bytes)?;
        Ok((w.loaded()?, extras.back()?))
    }

    /// A snapshot with the deltas written after it applied in order. The state is validated
    /// once, where it ends (with the last delta's digest check, see `with_deltas`): the
    /// snapshot's frame digest already stands for its bytes, and a state that was not valid on
    /// the way cannot end valid and hashing as the writer's did.
    pub fn from_snapshot_and_deltas(bytes: &[u8], deltas: &[&[u8]]) -> CtxResult<(Self, Extras, Vec<super::delta::Applied>)> {
        if deltas.is_empty() {
            let (w, extras) = Self::from_snapshot(bytes)?;
            return Ok((w, extras, Vec::new()));
        }
        let (w, extras) = Self::read_snapshot(bytes)?;
        let (w, applied) = w.settled().with_deltas(deltas)?;
        Ok((w, extras.back()?, applied))
    }

    /// A snapshot's frame checked and its body read, the state not yet validated.
    fn read_snapshot(bytes: &[u8]) -> CtxResult<(Self, ExtrasOut)> {
        Ok(match open(KIND_SNAPSHOT, bytes)? {
            (VERSION_1, body) => decode::<(Window, ExtrasOut)>(body)?,
            (version, body) => {
                let (b, extras) = super::read_v2::read_body(body, version > VERSION_2)?;
                (Window::from_body(b)?, extras)
            }
        })
    }
}
