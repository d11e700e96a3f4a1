//! Exact token counting behind one type, [`TokenCounter`], whatever the vocabulary.
//!
//! Engines: the embedded OpenAI encodings (GitHub's linear-time BPE), a Hugging Face
//! `tokenizer.json`, or the four-characters-a-token estimate. Every engine sits behind the same
//! per-unit count cache.

mod approximate;
mod describe;
mod fast;
mod hf_adjust;
mod huggingface;
pub mod join;
mod models;
pub mod scan;
pub mod specials;
mod tiktoken;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use crate::cache::{CacheInfo, CountCache, DEFAULT_CAPACITY};
use crate::error::CtxResult;

pub use approximate::{approximate_tokens, DEFAULT_CHARS_PER_TOKEN};
pub use models::{encoding_for_model, require_encoding_for_model};
pub use huggingface::EngineChoice;
pub use tiktoken::Encoding;

/// Below this many bytes in a batch, spreading it over threads costs more than it saves.
/// Measured on 2 cores (o200k, prose, 512 B-2 KB texts): a 32 KB batch counts 1.4x faster in
/// parallel than in a loop, 64-128 KB batches 1.5-1.8x; thread hand-off dominates below that.
const PARALLEL_MIN_BYTES: usize = 32 * 1024;

/// Long native work is done in pieces of about this many bytes, with a check for Ctrl-C between
/// them: at 40-70 MB/s that is a check every ~0.15 s, and the pieces are large enough that the
/// check (re-taking the GIL, ~1 µs) costs nothing measurable.
pub const INTERRUPT_CHUNK_BYTES: usize = 8 << 20;

pub enum Engine {
    Tiktoken(Encoding),
    HuggingFace(Box<huggingface::HfEngine>),
    Approximate { chars_per_token: f64 },
}

pub struct TokenCounter {
    engine: Engine,
    cache: CountCache,
    id: u64,
    special: specials::SpecialTokens,
    splitter: OnceLock<specials::Splitter>,
}

/// A process-unique id per counter, so a segment can remember which counter its count came from.
/// 64 bits: at a billion counters a second it would take centuries to wrap.
pub fn next_counter_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl TokenCounter {
    pub fn new(engine: Engine, cache_capacity: usize) -> Self {
        Self::with_special(engine, cache_capacity, specials::SpecialTokens::Text)
    }

    /// A counter that reads special-token strings as `special` says (`specials::SpecialTokens`;
    /// a tokenizer.json engine must have been built with the same setting).
    pub fn with_special(engine: Engine, cache_capacity: usize, special: specials::SpecialTokens) -> Self {
        Self { engine, cache: CountCache::new(cache_capacity), id: next_counter_id(), special, splitter: OnceLock::new() }
    }

    pub fn special(&self) -> specials::SpecialTokens {
        self.special
    }

    fn matched_tiktoken(&self) -> Option<Encoding> {
        match (&self.engine, self.special) {
            (Engine::Tiktoken(e), specials::SpecialTokens::Matched) => Some(*e),
            _ => None,
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The process-wide counter for an embedded encoding: one vocabulary and one cache shared by
    /// every caller that did not ask for a private cache.
    pub fn shared(encoding: Encoding) -> Arc<TokenCounter> {
        static O200K: OnceLock<Arc<TokenCounter>> = OnceLock::new();
        static CL100K: OnceLock<Arc<TokenCounter>> = OnceLock::new();
        let cell = match encoding {
            Encoding::O200kBase => &O200K,
            Encoding::Cl100kBase => &CL100K,
        };
        cell.get_or_init(|| Arc::new(Self::new(Engine::Tiktoken(encoding), DEFAULT_CAPACITY)))
            .clone()
    }

    pub fn from_encoding_name(name: &str, cache_capacity: Option<usize>) -> CtxResult<Arc<Self>> {
        Self::from_encoding_special(name, cache_capacity, specials::SpecialTokens::Text)
    }

    /// An embedded encoding; the shared counter unless a cache size or matched special tokens
    /// make it a private one.
    pub fn from_encoding_special(name: &str, cache_capacity: Option<usize>, special: specials::SpecialTokens) -> CtxResult<Arc<Self>> {
        let encoding = Encoding::from_name(name)?;
        Ok(match (cache_capacity, special) {
            (None, specials::SpecialTokens::Text) => Self::shared(encoding),
            (cap, _) => Arc::new(Self::with_special(Engine::Tiktoken(encoding), cap.unwrap_or(DEFAULT_CAPACITY), special)),
        })
    }

    /// The embedded encoding an OpenAI model counts with (see `models`).
    pub fn from_model(model: &str, cache_capacity: Option<usize>) -> CtxResult<Arc<Self>> {
        Self::from_encoding_name(require_encoding_for_model(model)?.name(), cache_capacity)
    }

    pub fn from_hf_json(json: &str, cache_capacity: usize) -> CtxResult<Self> {
        Self::from_hf_json_with(json, cache_capacity, specials::SpecialTokens::Text, false, EngineChoice::Auto)
    }

    /// A tokenizer.json engine: `special` as for every counter; `as_written` keeps the file's
    /// `ignore_merges` even where it loses tokens (see `hf_adjust`); `choice` says whether the
    /// fast engine may serve it (`fast`).
    pub fn from_hf_json_with(json: &str, cache_capacity: usize, special: specials::SpecialTokens, as_written: bool, choice: EngineChoice) -> CtxResult<Self> {
        let engine = huggingface::HfEngine::load(json, special, as_written, choice)?;
        Ok(Self::with_special(Engine::HuggingFace(Box::new(engine)), cache_capacity, special))
    }

    pub fn approximate(chars_per_token: f64, cache_capacity: usize) -> CtxResult<Self> {
        approximate::validate(chars_per_token)?;
        Ok(Self::new(Engine::Approximate { chars_per_token }, cache_capacity))
    }

    /// The vocabulary's control tokens, where a rendered prompt's count splits exactly: a
    /// tokenizer.json's added tokens (those that match as written), an embedded encoding's
    /// special tokens.
    pub fn splitter(&self) -> &specials::Splitter {
        self.splitter.get_or_init(|| match &self.engine {
            Engine::HuggingFace(hf) => specials::Splitter::new(&hf.split_tokens()),
            Engine::Tiktoken(e) => specials::Splitter::new(&e.special_texts()),
            Engine::Approximate { .. } => specials::Splitter::none(),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// A short human-readable name: the encoding, "huggingface:<model>", "approximate(4)".
    pub fn name(&self) -> String {
        match &self.engine {
            Engine::Tiktoken(e) => e.name().to_string(),
            Engine::HuggingFace(hf) => format!("huggingface:{}", hf.model_kind()),
            Engine::Approximate { chars_per_token } => format!("approximate({chars_per_token})"),
        }
    }

    /// Exact count, served from the cache when this text was counted before.
    pub fn count(&self, text: &str) -> CtxResult<usize> {
        self.cache.get_or_count(text, |t| self.count_uncached(t))
    }

    /// Exact count straight from the engine, neither reading nor filling the cache.
    pub fn count_uncached(&self, text: &str) -> CtxResult<usize> {
        if let Some(e) = self.matched_tiktoken() {
            return Ok(e.count_matched(text, self.splitter()));
        }
        match &self.engine {
            Engine::Tiktoken(e) => Ok(e.count(text)),
            Engine::HuggingFace(hf) => hf.count(text),
            Engine::Approximate { chars_per_token } => {
                Ok(approximate::count(text, *chars_per_token))
            }
        }
    }

    /// `count_with` for a long text, calling `between()` after each piece of about
    /// `INTERRUPT_CHUNK_BYTES` (the bindings check for Ctrl-C there). Exact: for the OpenAI
    /// encodings the text is cut only at anchors (see `join`), where counts add up; other engines
    /// count it whole.
    pub fn count_interruptible(&self, text: &str, use_cache: bool, between: &dyn Fn() -> CtxResult<()>) -> CtxResult<usize> {
        let Engine::Tiktoken(e) = &self.engine else { return self.count_with(text, use_cache) };
        if text.len() < INTERRUPT_CHUNK_BYTES || self.matched_tiktoken().is_some() {
            return self.count_with(text, use_cache);
        }
        let pieces = |t: &str| -> CtxResult<usize> {
            let mut total = 0usize;
            let mut start = 0;
            for end in join::cut_points(t, INTERRUPT_CHUNK_BYTES).into_iter().chain([t.len()]) {
                total = total.saturating_add(e.count(&t[start..end]));
                start = end;
                between()?;
            }
            Ok(total)
        };
        if use_cache {
            self.cache.get_or_count(text, pieces)
        } else {
            pieces(text)
        }
    }

    pub fn count_with(&self, text: &str, use_cache: bool) -> CtxResult<usize> {
        if use_cache {
            self.count(text)
        } else {
            self.count_uncached(text)
        }
    }

    /// Counts a batch, across all cores when what is not cached is large enough to pay for it.
    ///
    /// The cache is read first, in one pass on this thread: a warm batch (a server re-sending a
    /// conversation) is lookups alone, and waking the thread pool for those would cost more than
    /// they do (measured: a 115-message request's 343 cached strings took ~250 µs through the pool,
    /// ~25 µs in a loop). Only the misses are spread over threads, and only when they are large.
    pub fn count_many(&self, texts: &[&str], use_cache: bool) -> CtxResult<Vec<usize>> {
        let cached = use_cache && self.cache.enabled();
        let mut out = vec![0usize; texts.len()];
        let mut misses: Vec<(usize, u128)> = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            if cached {
                let key = CountCache::key(t);
                match self.cache.get(key) {
                    Some(n) => out[i] = n,
                    None => misses.push((i, key)),
                }
            } else {
                misses.push((i, 0));
            }
        }
        // A text that repeats in the batch is counted once (it was a hit after its first count).
        let mut first: rustc_hash::FxHashMap<u128, usize> = rustc_hash::FxHashMap::default();
        let mut repeats: Vec<(usize, usize)> = Vec::new(); // (position, the miss it repeats)
        if cached {
            misses.retain(|&(i, key)| match first.get(&key) {
                Some(&j) => {
                    repeats.push((i, j));
                    false
                }
                None => {
                    first.insert(key, i);
                    true
                }
            });
        }
        let bytes: usize = misses.iter().map(|&(i, _)| texts[i].len()).sum();
        let counted: Vec<usize> = if misses.len() > 1 && bytes >= PARALLEL_MIN_BYTES && rayon::current_num_threads() > 1 {
            misses.par_iter().map(|&(i, _)| self.count_uncached(texts[i])).collect::<CtxResult<_>>()?
        } else {
            misses.iter().map(|&(i, _)| self.count_uncached(texts[i])).collect::<CtxResult<_>>()?
        };
        for (&(i, key), n) in misses.iter().zip(counted) {
            if cached {
                self.cache.insert(key, n);
            }
            out[i] = n;
        }
        for (i, j) in repeats {
            out[i] = out[j];
        }
        Ok(out)
    }

    /// One thread, in order; the baseline count_many is measured against.
    pub fn count_many_serial(&self, texts: &[&str], use_cache: bool) -> CtxResult<Vec<usize>> {
        texts.iter().map(|t| self.count_with(t, use_cache)).collect()
    }

    /// The ids of every text, across all cores when the batch is large enough (as `count_many`).
    pub fn encode_many(&self, texts: &[&str]) -> CtxResult<Vec<Vec<u32>>> {
        let total: usize = texts.iter().map(|t| t.len()).sum();
        if texts.len() > 1 && total >= PARALLEL_MIN_BYTES && rayon::current_num_threads() > 1 {
            texts.par_iter().map(|t| self.encode(t)).collect()
        } else {
            texts.iter().map(|t| self.encode(t)).collect()
        }
    }

    pub fn encode(&self, text: &str) -> CtxResult<Vec<u32>> {
        if let Some(e) = self.matched_tiktoken() {
            return Ok(e.encode_matched(text, self.splitter()));
        }
        match &self.engine {
            Engine::Tiktoken(e) => Ok(e.encode(text)),
            Engine::HuggingFace(hf) => hf.encode(text),
            Engine::Approximate { .. } => Err(approximate::no_ids("encode")),
        }
    }

    /// Decodes ids; bytes that do not form valid UTF-8 become U+FFFD and a special id gives its
    /// text (`<|endoftext|>`), as tiktoken does.
    pub fn decode(&self, ids: &[u32]) -> CtxResult<String> {
        match &self.engine {
            Engine::Tiktoken(e) => {
                Ok(String::from_utf8_lossy(&e.decode_bytes(ids)?).into_owned())
            }
            Engine::HuggingFace(hf) => hf.decode(ids),
            Engine::Approximate { .. } => Err(approximate::no_ids("decode")),
        }
    }

    /// The raw bytes of a token sequence (OpenAI encodings only: their tokens are byte strings).
    pub fn decode_bytes(&self, ids: &[u32]) -> CtxResult<Vec<u8>> {
        match &self.engine {
            Engine::Tiktoken(e) => e.decode_bytes(ids),
            Engine::HuggingFace(hf) => Ok(hf.decode(ids)?.into_bytes()),
            Engine::Approximate { .. } => Err(approximate::no_ids("decode_bytes")),
        }
    }

    /// The longest prefix of `text` that ends on a token boundary and on a character boundary
    /// and counts at most `max_tokens`.
    pub fn truncate<'a>(&self, text: &'a str, max_tokens: usize) -> CtxResult<&'a str> {
        // Candidate cut points, ascending: the byte offset after each token.
        let ends: Vec<usize> = match &self.engine {
            Engine::Tiktoken(e) if self.special == specials::SpecialTokens::Matched => e.token_ends_matched(text, self.splitter()),
            Engine::Tiktoken(e) => e.token_ends(text),
            Engine::HuggingFace(hf) => hf.token_ends(text)?,
            Engine::Approximate { chars_per_token } => {
                return Ok(approximate::truncate(text, max_tokens, *chars_per_token));
            }
        };
        if ends.len() <= max_tokens {
            return Ok(text);
        }
        // A prefix can tokenize differently from the whole text, so each cut is re-counted;
        // the first candidate almost always fits, the loop is a guarantee, not a search.
        let mut k = max_tokens;
        while k > 0 {
            let end = ends[k - 1];
            if end <= text.len() && text.is_char_boundary(end) {
                let prefix = &text[..end];
                if self.count_uncached(prefix)? <= max_tokens {
                    return Ok(prefix);
                }
            }
            k -= 1;
        }
        Ok("")
    }

    pub fn cache_info(&self) -> CacheInfo {
        self.cache.info()
    }

    /// Empties the count cache and, for an embedded encoding, the calling thread's piece cache
    /// (other threads keep theirs: a piece cache belongs to its thread).
    pub fn clear_cache(&self) {
        self.cache.clear();
        if let Engine::Tiktoken(e) = &self.engine {
            e.clear_pieces();
        }
    }

    pub fn cache(&self) -> &CountCache {
        &self.cache
    }
}

#[cfg(test)]
mod tests;
