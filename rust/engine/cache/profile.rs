//! What a provider's prompt cache reuses, writes and charges, as data. The figures and where
//! they come from are in the README's "Prompt caching" section; each preset names its source.

use serde::{Deserialize, Serialize};

use crate::error::{CtxError, CtxResult};

/// How a cache decides what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CacheStyle {
    /// Nothing is cached: every token is prefilled.
    None,
    /// The provider caches every prompt's prefix by itself (OpenAI): a later request reads the
    /// longest cached prefix, from `min_prefix` tokens up in steps of `increment`.
    Automatic,
    /// Only prefixes ending at a breakpoint the payload marks are cached (Anthropic
    /// `cache_control`): a request reads up to a breakpoint the previous request wrote, and
    /// writes up to its own last breakpoint.
    Breakpoints,
    /// A server keeps the previous request's KV cache (llama.cpp `cache_prompt`, vLLM prefix
    /// caching): the shared prefix costs nothing to prefill.
    Local,
}

/// A cache, with the prices as multiples of an uncached input token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheProfile {
    pub name: String,
    pub style: CacheStyle,
    /// The shortest prefix the cache holds.
    pub min_prefix: usize,
    /// A cached prefix is a whole number of these beyond `min_prefix` (OpenAI: 128; vLLM: its
    /// block size).
    pub increment: usize,
    /// Price of a cached token read, per uncached token.
    pub read_price: f64,
    /// Price of a token written to the cache, per uncached token (1.0: no surcharge).
    pub write_price: f64,
    /// When the cut must move, the share of the ceiling it moves down to at least.
    pub low_watermark: f64,
    /// When the cut must move, room is made for this many more turns like the last one.
    pub lookahead_turns: usize,
}

/// What a request is predicted to cost under a profile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachePrediction {
    /// Tokens from the start that are the same as the previous request's.
    pub unchanged_prefix: usize,
    pub read: usize,
    pub write: usize,
    pub uncached: usize,
    /// In uncached-token units: uncached + read × read price + write × write price.
    pub cost: f64,
}

impl CacheProfile {
    fn new(name: &str, style: CacheStyle, min_prefix: usize, increment: usize, read: f64, write: f64) -> Self {
        CacheProfile {
            name: name.to_string(),
            style,
            min_prefix,
            increment: increment.max(1),
            read_price: read,
            write_price: write,
            low_watermark: 0.7,
            lookahead_turns: 8,
        }
    }

    /// A profile by name: "none", "openai", "gemini", "anthropic" (or "anthropic-haiku-3", "anthropic-4096"
    /// for the models with a longer minimum, "anthropic-1h" for the one-hour cache),
    /// "llama.cpp", "vllm".
    pub fn named(name: &str) -> CtxResult<Self> {
        Ok(match name {
            "none" => CacheProfile::new("none", CacheStyle::None, 0, 1, 1.0, 1.0),
            // Automatic for prompts of 1,024 tokens or more, hits in 128-token steps; cached
            // input is billed at 10% on the GPT-5 family (25-50% on older models: set
            // read_price), no write surcharge.
            "openai" => CacheProfile::new("openai", CacheStyle::Automatic, 1024, 128, 0.1, 1.0),
            // cache_control breakpoints (at most 4); minimum 1,024 tokens on most models; a
            // 5-minute write costs 1.25x, a 1-hour write 2x, a read 0.1x.
            // Implicit caching on Gemini 2.5 and later: from 1,024 tokens (2,048 on Pro), a 75%
            // discount on what is read, no write charge.
            "gemini" => CacheProfile::new("gemini", CacheStyle::Automatic, 1024, 1, 0.25, 1.0),
            "anthropic" => CacheProfile::new("anthropic", CacheStyle::Breakpoints, 1024, 1, 0.1, 1.25),
            "anthropic-1h" => CacheProfile::new("anthropic-1h", CacheStyle::Breakpoints, 1024, 1, 0.1, 2.0),
            "anthropic-haiku-3" => CacheProfile::new("anthropic-haiku-3", CacheStyle::Breakpoints, 2048, 1, 0.1, 1.25),
            "anthropic-4096" => CacheProfile::new("anthropic-4096", CacheStyle::Breakpoints, 4096, 1, 0.1, 1.25),
            // Prefix reuse of the previous request's KV cache, token by token (llama.cpp) or
            // in 16-token blocks (vLLM's default block size): what is reused costs no prefill.
            "llama.cpp" | "llamacpp" | "local" => CacheProfile::new("llama.cpp", CacheStyle::Local, 0, 1, 0.0, 1.0),
            "vllm" => CacheProfile::new("vllm", CacheStyle::Local, 0, 16, 0.0, 1.0),
            other => {
                let known = ["none", "openai", "gemini", "anthropic", "anthropic-1h", "anthropic-haiku-3", "anthropic-4096", "llama.cpp", "vllm"];
                let hint = crate::suggest::hint(other, &known);
                return Err(CtxError::invalid(format!("unknown cache profile {other:?}{hint}; known profiles: {}", known.join(", "))));
            }
        })
    }

    /// Whether the cut is worth keeping for this cache at all.
    pub fn caches(&self) -> bool {
        self.style != CacheStyle::None
    }

    /// Checks a profile built field by field.
    pub fn validate(&self) -> CtxResult<()> {
        let price = |p: f64| p.is_finite() && (0.0..=100.0).contains(&p);
        if !price(self.read_price) || !price(self.write_price) {
            return Err(CtxError::invalid("cache prices must be finite numbers in [0, 100]"));
        }
        if !(self.low_watermark > 0.0 && self.low_watermark <= 1.0) {
            return Err(CtxError::invalid(format!("low_watermark must be in (0, 1], got {}", self.low_watermark)));
        }
        Ok(())
    }

    /// The tokens a cache of this kind holds of a prefix of `n` tokens.
    fn holdable(&self, n: usize) -> usize {
        if n < self.min_prefix.max(1) {
            return 0;
        }
        let beyond = n - self.min_prefix;
        self.min_prefix + beyond - beyond % self.increment
    }

    /// The prediction for a request of `total` tokens whose first `unchanged` tokens are the
    /// previous request's (None: there was no previous request). For breakpoint caches,
    /// `previous_marks` and `marks` are the tokens before each breakpoint of the previous and
    /// this request.
    pub fn predict(&self, total: usize, unchanged: Option<usize>, previous_marks: &[usize], marks: &[usize]) -> CachePrediction {
        let prefix = unchanged.unwrap_or(0).min(total);
        let (read, write) = match self.style {
            CacheStyle::None => (0, 0),
            CacheStyle::Automatic => (unchanged.map_or(0, |_| self.holdable(prefix)), 0),
            CacheStyle::Local => (self.holdable(prefix), 0),
            CacheStyle::Breakpoints => {
                // A read is a previous breakpoint inside the unchanged prefix (the provider looks
                // back from this request's breakpoints to the ones it wrote).
                let read = previous_marks
                    .iter()
                    .copied()
                    .filter(|&b| b <= prefix && b >= self.min_prefix && unchanged.is_some())
                    .max()
                    .unwrap_or(0);
                let last = marks.iter().copied().filter(|&b| b <= total).max().unwrap_or(0);
                let write = if last >= self.min_prefix { last.saturating_sub(read) } else { 0 };
                (read, write)
            }
        };
        let uncached = total.saturating_sub(read).saturating_sub(write);
        let cost = uncached as f64 + read as f64 * self.read_price + write as f64 * self.write_price;
        CachePrediction { unchanged_prefix: prefix, read, write, uncached, cost }
    }
}
