//! The caller's levers on a window: discard, mark_stale, rewrite (tagged, possibly deferred) and
//! digest.

use std::sync::Arc;

use super::ledger::Cause;
use super::{unknown, Changes, Entry, Pending, Rewrite, Window};
use crate::engine::digest::digest_text;
use crate::engine::{Layer, SegmentData};
use crate::error::{CtxError, CtxResult};

impl Window {
    /// Whether a segment with `key` would be refused as a duplicate (the key is held).
    pub fn holds_key(&self, key: Option<&str>) -> bool {
        key.is_some_and(|k| self.held_keys.contains_key(k))
    }

    /// The caller removes a held segment now; recorded like an eviction, the key freed.
    pub fn discard(&mut self, key: &str) -> CtxResult<Changes> {
        let id = *self.held_keys.get(key).ok_or_else(|| unknown(key))?;
        self.touch()?;
        let mut changes = Changes::default();
        self.counters.discards = self.counters.discards.saturating_add(1);
        self.evict(id, Cause::Discard, &mut changes);
        Ok(changes)
    }

    /// Flags a held segment stale so stale-first policies take it early.
    pub fn mark_stale(&mut self, key: &str) -> CtxResult<Entry> {
        let id = *self.held_keys.get(key).ok_or_else(|| unknown(key))?;
        let pos = self.position(id).ok_or_else(|| unknown(key))?;
        self.touch()?;
        let e = &mut self.entries[pos];
        if !e.seg.stale {
            let mut data = (*e.seg).clone();
            data.stale = true;
            e.seg = Arc::new(data);
        }
        let e = e.clone();
        self.stamp_entry(e.id);
        Ok(e)
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
        self.room_for(1, tokens)?;
        self.touch()?;
        if self.fresh_unrecoverable {
            self.counters.deferred_rewrites = self.counters.deferred_rewrites.saturating_add(1);
            self.pending.retain(|p| p.id != id);
            self.pending.push(Pending { id, key: key.to_string(), text, tokens, provenance });
            return Ok(Rewrite::Deferred);
        }
        let mut changes = Changes::default();
        self.apply_rewrite(id, key, text, tokens, provenance, &mut changes);
        Ok(Rewrite::Applied(changes))
    }

    pub(super) fn apply_rewrite(&mut self, id: u64, key: &str, text: String, tokens: usize, provenance: String, changes: &mut Changes) {
        let Some(pos) = self.position(id) else { return };
        let orig = &self.entries[pos].seg;
        let mut data = SegmentData::new(text, orig.layer);
        data.group = orig.group.clone();
        data.score = orig.score;
        data.recoverable = orig.recoverable;
        self.counters.rewrites = self.counters.rewrites.saturating_add(1);
        self.replace_with_surrogate(&[id], data, tokens, Cause::Rewrite, (Some(key.to_string()), provenance), changes);
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
        self.room_for(1, tokens)?;
        self.touch()?;
        let mut data = SegmentData::new(text, Layer::Conversation);
        data.group = self.entries[first].seg.group.clone();
        let mut changes = Changes::default();
        self.counters.digests = self.counters.digests.saturating_add(1);
        self.replace_with_surrogate(ids, data, tokens, Cause::DigestCall, (Some(key.to_string()), "digest".into()), &mut changes);
        Ok(changes)
    }
}
