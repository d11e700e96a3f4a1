//! The fast engine's automaton, kept on disk so a vocabulary is built once per machine (the
//! build takes 0.6-1.5 s; reading it back, tens of milliseconds).
//!
//! Where: `$CTXFAST_CACHE_DIR`, else `$XDG_CACHE_HOME/ctxfast`, else `~/.cache/ctxfast`;
//! `CTXFAST_CACHE_DIR=off` (or empty) turns it off. A file is named by the hash of the
//! tokenizer.json text, this library's version and the build's (`automaton::BUILD`), and carries the hash of its own contents:
//! a file that is truncated, altered or for another vocabulary is ignored and rebuilt, and every
//! token the automaton holds is compared with the file's before it is used. Writes go to a
//! temporary file renamed into place, so concurrent loaders never read half a file.

use std::path::{Path, PathBuf};

use super::automaton::Automaton;
use super::plan::Plan;

const MAGIC: &[u8; 8] = b"CTXFBPE2";
const HEADER: usize = 8 + 16 + 16;

fn directory() -> Option<PathBuf> {
    match std::env::var_os("CTXFAST_CACHE_DIR") {
        Some(d) if d.is_empty() || d == "off" || d == "0" => None,
        Some(d) => Some(PathBuf::from(d)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(|d| PathBuf::from(d).join("ctxfast"))
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("ctxfast"))),
    }
}

fn key(json: &str) -> u128 {
    let mut h = crate::hash::Xxh3::new();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(&super::automaton::BUILD.to_le_bytes());
    h.update(json.as_bytes());
    h.digest128()
}

fn path_in(dir: &Path, json: &str) -> PathBuf {
    dir.join(format!("bpe-{:032x}.bin", key(json)))
}

type Stored = (Vec<u32>, Vec<u32>, Vec<u32>, bpe::byte_pair_encoding::BytePairEncoding);

/// The cached automaton for this file, if one is there and checks out.
pub fn load(json: &str, plan: &Plan) -> Option<Automaton> {
    load_from(&directory()?, json, plan)
}

/// Saves the automaton; the path written, or why not.
pub fn store(json: &str, a: &Automaton) -> Result<PathBuf, String> {
    store_in(&directory().ok_or("the cache is off")?, json, a)
}

pub fn load_from(dir: &Path, json: &str, plan: &Plan) -> Option<Automaton> {
    let data = std::fs::read(path_in(dir, json)).ok()?;
    if data.len() < HEADER || &data[..8] != MAGIC {
        return None;
    }
    let stored_key = u128::from_le_bytes(data[8..24].try_into().ok()?);
    let digest = u128::from_le_bytes(data[24..40].try_into().ok()?);
    let payload = &data[HEADER..];
    if stored_key != key(json) || crate::hash::xxh3_128(payload) != digest {
        return None;
    }
    let (to_id, left_out, merge_loop, bpe): Stored = rmp_serde::from_slice(payload).ok()?;
    let same = to_id.len() == bpe.num_tokens()
        && to_id.iter().enumerate().all(|(i, &id)| plan.tokens.get(id as usize).and_then(|t| t.as_deref()) == Some(bpe.token_bytes(i as u32)))
        && left_out.iter().chain(&merge_loop).all(|&id| (id as usize) < plan.tokens.len());
    same.then_some(Automaton { bpe, to_id, left_out, merge_loop })
}

pub fn store_in(dir: &Path, json: &str, a: &Automaton) -> Result<PathBuf, String> {
    let target = path_in(dir, json);
    let payload = rmp_serde::to_vec(&(&a.to_id, &a.left_out, &a.merge_loop, &a.bpe)).map_err(|e| e.to_string())?;
    let mut data = Vec::with_capacity(HEADER + payload.len());
    data.extend_from_slice(MAGIC);
    data.extend_from_slice(&key(json).to_le_bytes());
    data.extend_from_slice(&crate::hash::xxh3_128(&payload).to_le_bytes());
    data.extend_from_slice(&payload);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Unique per process and per call, so two loads of one file (threads or processes) never
    // write the same temporary file.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let partial = target.with_extension(format!("{}-{call}.tmp", std::process::id()));
    std::fs::write(&partial, &data).map_err(|e| format!("{}: {e}", partial.display()))?;
    std::fs::rename(&partial, &target).map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        format!("{}: {e}", target.display())
    })?;
    Ok(target)
}
