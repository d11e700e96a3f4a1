//! What each action does to the ladder's state: drop a unit, shorten a body, digest a tool
//! exchange. Each returns the layers it changed (None when it changed nothing), for the trace's
//! layer column.

use super::digest::digest_text_of;
use super::ladder::Ladder;
use super::outcome::{DigestRecord, Removal, Taken, Target, Truncation};
use super::policy::Until;
use super::segment::{Layer, LayerSet, SegmentData};
use crate::error::CtxResult;
use crate::limits::unsigned;

impl Ladder<'_> {
    pub(super) fn drop_unit(&mut self, u: usize, rung: usize) -> LayerSet {
        let unit_digest = self.unit_digest(u);
        self.units[u].alive = false;
        self.live_units -= 1;
        if let Some(d) = unit_digest {
            let rec = &self.digests[d];
            self.layer_sizes[rec.layer.index()] -= rec.tokens;
            self.sum -= rec.tokens;
            self.pieces -= 1;
            let layers = LayerSet::of(&[rec.layer]);
            self.removals.push(Removal { target: Target::Digest(d), rung, tokens: rec.tokens, action: Taken::Drop });
            self.units_dropped += 1;
            return layers;
        }
        let mut layers = LayerSet::default();
        let before = self.removals.len();
        for k in 0..self.members(u).len() {
            let Some(m) = self.members(u).nth(k) else { break };
            if self.seg_alive[m] {
                self.remove_segment(m, rung, Taken::Drop, &mut layers);
            }
        }
        self.units_dropped += usize::from(self.removals.len() > before);
        layers
    }

    /// Takes live segment `m` out of the request (dropped, or folded into a digest), recording
    /// the removal and the layer it changed.
    fn remove_segment(&mut self, m: usize, rung: usize, action: Taken, layers: &mut LayerSet) {
        self.seg_alive[m] = false;
        let t = self.seg_tokens[m];
        let layer = self.seg_layer[m];
        layers.insert(layer);
        self.layer_sizes[layer.index()] -= t;
        self.sum -= t;
        self.pieces -= 1;
        self.removals.push(Removal { target: Target::Segment(m), rung, tokens: t, action });
    }

    /// Shortens the unit's largest body in the rung's layers to reclaim what the rung still
    /// needs (the request's excess, or for a cap rung its layer's excess over the cap), never
    /// below `min_tokens` and never to nothing: a non-empty text keeps at least one token.
    /// Returns the layer it changed, and whether the minimum held it back.
    pub(super) fn truncate_unit(
        &mut self,
        u: usize,
        rung: usize,
        layers: LayerSet,
        min_tokens: usize,
        until: Until,
    ) -> CtxResult<(Option<LayerSet>, bool)> {
        let Some(m) = self
            .members(u)
            .filter(|&m| self.seg_alive[m] && layers.contains(self.seg_layer[m]))
            .max_by_key(|&m| (self.seg_tokens[m], std::cmp::Reverse(m)))
        else {
            return Ok((None, false));
        };
        let layer = self.segs[m].layer;
        let before = self.seg_tokens[m];
        let need = match until {
            Until::Fits => unsigned(self.over()),
            Until::Cap => self.cap_excess(layer),
        };
        if need == 0 {
            return Ok((None, false));
        }
        if before <= min_tokens {
            return Ok((None, true));
        }
        let limited = before.saturating_sub(need) < min_tokens;
        // A caller-given count covers more than the text (message framing, say): that overhead
        // stays with the shortened body.
        let overhead = match self.segs[m].tokens {
            Some(given) => given.saturating_sub(self.counter.count(self.text(m))?),
            None => 0,
        };
        let text = self.seg_text(m).unwrap_or(self.text(m));
        // Never to nothing: an empty body is not a shorter message, it is a lost one.
        let keep = if text.is_empty() { 0 } else { 1 };
        let target = before.saturating_sub(need).max(min_tokens).saturating_sub(overhead).max(keep);
        let cut = self.counter.truncate(text, target)?;
        if cut.is_empty() && !text.is_empty() {
            return Ok((None, limited));
        }
        Ok((self.shorten(m, cut, overhead, rung)?, limited))
    }

    /// Segment `m` shortened to at most `after` tokens (framing included), as the previous
    /// request sent it: the same cut of the same text is the same text.
    pub(super) fn truncate_to(&mut self, m: usize, after: usize, rung: usize) -> CtxResult<Option<LayerSet>> {
        if !self.seg_alive[m] || after >= self.seg_tokens[m] {
            return Ok(None);
        }
        let overhead = match self.segs[m].tokens {
            Some(given) => given.saturating_sub(self.counter.count(self.text(m))?),
            None => 0,
        };
        let text = self.seg_text(m).unwrap_or(self.text(m));
        let cut = self.counter.truncate(text, after.saturating_sub(overhead).max(1))?;
        if cut.is_empty() {
            return Ok(None);
        }
        self.shorten(m, cut, overhead, rung)
    }

    /// Sends `cut` in place of segment `m`'s text, when that is smaller.
    fn shorten(&mut self, m: usize, cut: String, overhead: usize, rung: usize) -> CtxResult<Option<LayerSet>> {
        let layer = self.segs[m].layer;
        let before = self.seg_tokens[m];
        let after = self.counter.count(&cut)? + overhead;
        if after >= before {
            return Ok(None);
        }
        if let Some(t) = self.seg_tokens.to_mut().get_mut(m) {
            *t = after;
        }
        self.layer_sizes[layer.index()] -= before - after;
        self.sum -= before - after;
        // A body shortened again keeps its first entry (its size before any cut), found by its
        // place, not by a search of every truncation so far.
        if self.seg_cut.is_empty() {
            self.seg_cut = vec![usize::MAX; self.segs.len()];
        }
        let t = self.seg_cut.get(m).copied().unwrap_or(usize::MAX);
        match (self.truncations.get_mut(t), self.cut_texts.get_mut(t)) {
            (Some(entry), Some(text)) => {
                entry.after = after;
                *text = cut;
            }
            _ => {
                if let Some(slot) = self.seg_cut.get_mut(m) {
                    *slot = self.truncations.len();
                }
                self.truncations.push(Truncation { index: m, rung, before, after });
                self.cut_texts.push(cut);
            }
        }
        Ok(Some(LayerSet::of(&[layer])))
    }

    /// Replaces a tool exchange by its record when that is smaller.
    pub(super) fn digest_unit(&mut self, u: usize, rung: usize) -> CtxResult<Option<LayerSet>> {
        if self.unit_digest(u).is_some() {
            return Ok(None);
        }
        let alive: Vec<usize> = self.members(u).filter(|&m| self.seg_alive[m]).collect();
        if !alive.iter().any(|&m| self.seg_layer[m] == Layer::ToolResult) {
            return Ok(None);
        }
        let members: Vec<&SegmentData> = alive.iter().map(|&m| self.segs[m]).collect();
        let texts: Vec<&str> = alive.iter().map(|&m| self.text(m)).collect();
        let tokens: Vec<usize> = alive.iter().map(|&m| self.seg_tokens[m]).collect();
        let ordinal = self.exchange_ordinal(u);
        let text = digest_text_of(&members, &texts, &tokens, ordinal);
        let d_tokens = self.counter.count(&text)? + self.framing;
        let unit_tokens: usize = tokens.iter().sum();
        // Smaller than what it replaces, joins aside: a record that only pays for itself through
        // the separators it saves would make the ledger's "digested" negative.
        if d_tokens >= unit_tokens {
            return Ok(None);
        }
        let layer = self.segs[alive[0]].layer;
        let mut layers = LayerSet::default();
        for &m in &alive {
            self.remove_segment(m, rung, Taken::Digest, &mut layers);
        }
        self.digests.push(DigestRecord { members: alive, text, tokens: d_tokens, layer, rung });
        self.set_unit_digest(u, self.digests.len() - 1);
        self.layer_sizes[layer.index()] += d_tokens;
        self.sum += d_tokens;
        self.pieces += 1;
        Ok(Some(layers))
    }
}
