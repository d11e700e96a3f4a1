//! `ctxfast.Tokenizer`: a frozen, thread-safe handle on a counting engine and its cache.

use std::sync::Arc;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use super::args;
pub use super::cache_info::CacheInfo;
use super::callable::{call_counter, truncate_by_calls};
use super::errors::{file_error, FileKind, InvalidArgumentError, TokenizerLoadError, UnsupportedOperationError};
use super::gil::{self, Interrupt, Work};
use super::tokenizer_batch::{in_batches, joined_items};
use crate::cache::{CountCache, DEFAULT_CAPACITY};
use crate::tokenize::{self, Engine, TokenCounter, DEFAULT_CHARS_PER_TOKEN, INTERRUPT_CHUNK_BYTES};

/// What counts: a native engine (with its cache), or the user's callable (with one of its own).
enum Backend {
    Native(Arc<TokenCounter>),
    /// A user's `str -> int` callable, trusted as exact; it runs under the GIL.
    Callable { func: Py<PyAny>, cache: CountCache, id: u64 },
}

/// Exact token counting (embedded o200k_base / cl100k_base, a tokenizer.json, a callable or the
/// estimate) with a bounded per-unit count cache. Immutable and thread-safe.
#[pyclass(frozen, module = "ctxfast._core", name = "Tokenizer")]
pub struct Tokenizer {
    backend: Backend,
}

impl Tokenizer {
    pub fn from_counter(counter: Arc<TokenCounter>) -> Self {
        Self { backend: Backend::Native(counter) }
    }

    fn native(counter: TokenCounter) -> Self {
        Self { backend: Backend::Native(Arc::new(counter)) }
    }

    /// The engine, for other binding modules (fit, windows) that count natively.
    pub fn native_counter(&self) -> Option<&Arc<TokenCounter>> {
        match &self.backend {
            Backend::Native(c) => Some(c),
            Backend::Callable { .. } => None,
        }
    }

    /// Identifies the counter a segment's remembered count came from.
    pub fn counter_id(&self) -> u64 {
        match &self.backend {
            Backend::Native(c) => c.id(),
            Backend::Callable { id, .. } => *id,
        }
    }

    /// The user's callable and its cache, for the ladder's Python-side counter.
    pub fn callable(&self) -> Option<(&Py<PyAny>, &CountCache)> {
        match &self.backend {
            Backend::Callable { func, cache, .. } => Some((func, cache)),
            Backend::Native(_) => None,
        }
    }

    fn unsupported(what: &str) -> PyErr {
        UnsupportedOperationError::new_err(format!("{what} needs a vocabulary; a Tokenizer.from_callable counter only counts"))
    }

    /// How another process rebuilds this tokenizer without being handed it: an embedded encoding
    /// by name, or the estimate by its ratio. None for tokenizer.json files and callables.
    pub fn portable_recipe(&self) -> Option<(&'static str, serde_json::Value)> {
        let Backend::Native(c) = &self.backend else { return None };
        match c.engine() {
            Engine::Tiktoken(e) => Some(("encoding", serde_json::Value::from(e.name()))),
            Engine::Approximate { chars_per_token } => Some(("approximate", serde_json::Value::from(*chars_per_token))),
            Engine::HuggingFace(_) => None,
        }
    }

    /// Count through the user's callable, through the cache.
    fn call_count(py: Python<'_>, func: &Py<PyAny>, cache: &CountCache, text: &str) -> PyResult<usize> {
        cache.get_or_count(text, |t| call_counter(py, func, t))
    }

    pub fn count_str(&self, py: Python<'_>, text: &str, use_cache: bool) -> PyResult<usize> {
        match &self.backend {
            Backend::Native(c) if text.len() >= INTERRUPT_CHUNK_BYTES => {
                let interrupt = Interrupt::default();
                let result = py.detach(|| c.count_interruptible(text, use_cache, &|| interrupt.check()));
                interrupt.settle(result)
            }
            Backend::Native(c) => Ok(gil::run(py, Work::Bytes(text.len()), || c.count_with(text, use_cache))?),
            Backend::Callable { func, cache, .. } => {
                if use_cache {
                    Self::call_count(py, func, cache, text)
                } else {
                    call_counter(py, func, text)
                }
            }
        }
    }

    pub fn count_strs(&self, py: Python<'_>, texts: &[&str], use_cache: bool) -> PyResult<Vec<usize>> {
        match &self.backend {
            Backend::Native(c) => in_batches(py, texts, |batch| c.count_many(batch, use_cache)),
            Backend::Callable { .. } => texts.iter().map(|t| self.count_str(py, t, use_cache)).collect(),
        }
    }
}

fn capacity_or_default(obj: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    Ok(args::opt_count(obj, "cache_capacity")?.unwrap_or(DEFAULT_CAPACITY))
}

#[pymethods]
impl Tokenizer {
    /// The embedded o200k_base encoding; no network, no files.
    #[staticmethod]
    #[pyo3(signature = (*, cache_capacity=None))]
    fn default(cache_capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let cap = args::opt_count(cache_capacity, "cache_capacity")?;
        let c = TokenCounter::from_encoding_name("o200k_base", cap)?;
        Ok(Self { backend: Backend::Native(c) })
    }

    #[staticmethod]
    #[pyo3(signature = (name, *, cache_capacity=None))]
    fn from_encoding(
        name: &Bound<'_, PyAny>,
        cache_capacity: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let name = args::text(name, "name")?;
        let cap = args::opt_count(cache_capacity, "cache_capacity")?;
        let c = TokenCounter::from_encoding_name(name, cap)?;
        Ok(Self { backend: Backend::Native(c) })
    }

    /// The embedded encoding an OpenAI model counts with, by tiktoken's model table.
    #[staticmethod]
    #[pyo3(signature = (model, *, cache_capacity=None))]
    fn for_model(model: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let model = args::text(model, "model")?;
        let cap = args::opt_count(cache_capacity, "cache_capacity")?;
        Ok(Self::from_counter(TokenCounter::from_model(model, cap)?))
    }

    #[staticmethod]
    #[pyo3(signature = (path, *, cache_capacity=None))]
    fn from_file(path: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let py = path.py();
        let p = args::path(path, "path")?;
        let cap = capacity_or_default(cache_capacity)?;
        let json = std::fs::read_to_string(&p).map_err(|e| file_error(&p, &e, FileKind::Tokenizer))?;
        let c = gil::run(py, Work::Bytes(json.len()), || TokenCounter::from_hf_json(&json, cap))
            .map_err(|e| TokenizerLoadError::new_err(format!("{p:?}: {e}")))?;
        Ok(Self::native(c))
    }

    #[staticmethod]
    #[pyo3(signature = (text, *, cache_capacity=None))]
    fn from_json(text: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let py = text.py();
        let json = args::text(text, "text")?;
        let cap = capacity_or_default(cache_capacity)?;
        let c = gil::run(py, Work::Bytes(json.len()), || TokenCounter::from_hf_json(json, cap))?;
        Ok(Self::native(c))
    }

    /// A `tokenizers.Tokenizer`, serialised into the core once: no Python call per count.
    #[staticmethod]
    #[pyo3(signature = (obj, *, cache_capacity=None))]
    fn from_hf(obj: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let json = obj
            .call_method0("to_str")
            .map_err(|_| args::wrong_type(obj, "obj", "a tokenizers.Tokenizer"))?;
        Self::from_json(&json, cache_capacity)
    }

    /// The four-characters-a-token estimate (for logs; not for boundary checks). Not cached:
    /// counting characters is cheaper than hashing them.
    #[staticmethod]
    #[pyo3(signature = (chars_per_token=None, *, cache_capacity=None))]
    fn approximate(
        chars_per_token: Option<&Bound<'_, PyAny>>,
        cache_capacity: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let cpt = match chars_per_token {
            Some(o) => args::positive_float(o, "chars_per_token")?,
            None => DEFAULT_CHARS_PER_TOKEN,
        };
        let cap = args::opt_count(cache_capacity, "cache_capacity")?.unwrap_or(0);
        Ok(Self::native(TokenCounter::approximate(cpt, cap)?))
    }

    /// Any `str -> int` the caller trusts, e.g. a serving stack's own counter.
    #[staticmethod]
    #[pyo3(signature = (func, *, cache_capacity=None))]
    fn from_callable(func: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        if !func.is_callable() {
            return Err(args::wrong_type(func, "func", "a callable str -> int"));
        }
        let cap = capacity_or_default(cache_capacity)?;
        Ok(Self { backend: Backend::Callable { func: func.clone().unbind(), cache: CountCache::new(cap), id: tokenize::next_counter_id() } })
    }

    #[pyo3(signature = (text, /, *, cache=None))]
    fn count(&self, text: &Bound<'_, PyAny>, cache: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
        let cache = args::flag(cache, "cache", true)?;
        let t = args::text_joined(text, "text")?;
        self.count_str(text.py(), &t, cache)
    }

    /// Counts of every text, as a numpy int64 array; the GIL is released for the whole batch.
    #[pyo3(signature = (texts, /, *, cache=None))]
    fn count_many<'py>(&self, texts: &Bound<'py, PyAny>, cache: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let py = texts.py();
        let cache = args::flag(cache, "cache", true)?;
        let items = args::texts(texts, "texts")?;
        let joined = joined_items(&items, "texts")?;
        let strs: Vec<&str> = joined.iter().map(|t| t.as_ref()).collect();
        let counts = self.count_strs(py, &strs, cache)?;
        Ok(PyArray1::from_vec(py, counts.into_iter().map(|n| n as i64).collect()))
    }

    fn encode(&self, text: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let py = text.py();
        let t = args::text_joined(text, "text")?;
        match &self.backend {
            Backend::Native(c) => Ok(gil::run(py, Work::Bytes(t.len()), || c.encode(&t))?),
            Backend::Callable { .. } => Err(Self::unsupported("encode")),
        }
    }

    /// tiktoken's `encode_batch` (as `encode_ordinary_batch`: no special ids): the ids of every
    /// text, in one crossing, across cores when the batch is large enough, as `count_many`.
    #[pyo3(signature = (texts, /))]
    fn encode_batch(&self, texts: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<u32>>> {
        let py = texts.py();
        let items = args::texts(texts, "texts")?;
        let joined = joined_items(&items, "texts")?;
        let strs: Vec<&str> = joined.iter().map(|t| t.as_ref()).collect();
        match &self.backend {
            Backend::Native(c) => in_batches(py, &strs, |batch| c.encode_many(batch)),
            Backend::Callable { .. } => Err(Self::unsupported("encode_batch")),
        }
    }

    fn decode(&self, ids: &Bound<'_, PyAny>) -> PyResult<String> {
        let ids = args::ids(ids, "ids")?;
        match &self.backend {
            Backend::Native(c) => Ok(c.decode(&ids)?),
            Backend::Callable { .. } => Err(Self::unsupported("decode")),
        }
    }

    /// The longest prefix with at most `max_tokens` tokens, cut on a token boundary and never
    /// inside a character. With a callable counter (no token boundaries known) it is the longest
    /// character prefix the callable counts within the limit.
    fn truncate<'py>(&self, text: &Bound<'py, PyAny>, max_tokens: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
        let py = text.py();
        let t = args::text_joined(text, "text")?;
        let max = args::limit_arg(max_tokens, "max_tokens")?;
        let cut = match &self.backend {
            Backend::Native(c) => gil::run(py, Work::Bytes(t.len()), || c.truncate(&t, max))?,
            Backend::Callable { func, .. } => truncate_by_calls(py, func, &t, max)?,
        };
        if cut.len() == t.len() {
            // Untouched: hand back the same object, no copy.
            return Ok(text.cast::<PyString>().map_err(|_| args::wrong_type(text, "text", "str"))?.clone());
        }
        Ok(PyString::new(py, cut))
    }

    fn cache_info(&self) -> CacheInfo {
        match &self.backend {
            Backend::Native(c) => c.cache_info().into(),
            Backend::Callable { cache, .. } => cache.info().into(),
        }
    }

    fn clear_cache(&self) {
        match &self.backend {
            Backend::Native(c) => c.clear_cache(),
            Backend::Callable { cache, .. } => cache.clear(),
        }
    }

    /// "o200k_base", "cl100k_base", "huggingface:bpe", "approximate(4)" or "callable:<name>".
    #[getter]
    fn name(&self, py: Python<'_>) -> String {
        match &self.backend {
            Backend::Native(c) => c.name(),
            Backend::Callable { func, .. } => {
                let f = func.bind(py);
                let n = f
                    .getattr("__qualname__")
                    .or_else(|_| f.get_type().getattr("__qualname__"))
                    .map(|n| n.to_string())
                    .unwrap_or_else(|_| "?".into());
                format!("callable:{n}")
            }
        }
    }

    /// Whether counts are real tokens (False for the character estimate).
    #[getter]
    fn is_exact(&self) -> bool {
        !matches!(&self.backend, Backend::Native(c) if matches!(c.engine(), Engine::Approximate { .. }))
    }

    #[getter]
    fn vocab_size(&self) -> Option<usize> {
        match &self.backend {
            Backend::Native(c) => c.vocab_size(),
            Backend::Callable { .. } => None,
        }
    }

    /// tiktoken's `n_vocab`: ids run 0..n_vocab, special tokens included.
    #[getter]
    fn n_vocab(&self) -> Option<usize> {
        self.native_counter().and_then(|c| c.n_vocab())
    }

    /// tiktoken's `max_token_value`: the highest id, special tokens included.
    #[getter]
    fn max_token_value(&self) -> Option<usize> {
        self.n_vocab().and_then(|n| n.checked_sub(1))
    }

    /// tiktoken's `eot_token`, the id of `<|endoftext|>` (OpenAI encodings only).
    #[getter]
    fn eot_token(&self) -> Option<u32> {
        self.native_counter().and_then(|c| c.eot_token())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("Tokenizer({})", self.name(py))
    }

    /// Pickles as the recipe, not the tables: an encoding name, the tokenizer.json text, the
    /// estimate's ratio, or the callable itself. The cache starts empty on the other side.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let me = slf.get();
        let restore = slf.get_type().getattr("_from_state")?;
        let state: Bound<'py, PyTuple> = match &me.backend {
            Backend::Native(c) => {
                let cap = c.cache_info().capacity;
                match c.engine() {
                    Engine::Tiktoken(e) => {
                        let shared = Arc::ptr_eq(c, &TokenCounter::shared(*e));
                        let cap: Option<usize> = if shared { None } else { Some(cap) };
                        ("encoding", e.name(), cap).into_pyobject(py)?
                    }
                    Engine::HuggingFace(_) => {
                        let json = c.hf_json()?.unwrap_or_default();
                        ("huggingface", json, Some(cap)).into_pyobject(py)?
                    }
                    Engine::Approximate { chars_per_token } => {
                        ("approximate", *chars_per_token, Some(cap)).into_pyobject(py)?
                    }
                }
            }
            Backend::Callable { func, cache, .. } => {
                ("callable", func.clone_ref(py), Some(cache.info().capacity)).into_pyobject(py)?
            }
        };
        Ok((restore, PyTuple::new(py, [state])?))
    }

    #[staticmethod]
    fn _from_state(state: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let kind: String = state.get_item(0)?.extract()?;
        let payload = state.get_item(1)?;
        let cap = state.get_item(2)?;
        let cap = Some(&cap);
        match kind.as_str() {
            "encoding" => Self::from_encoding(&payload, cap),
            "huggingface" => Self::from_json(&payload, cap),
            "approximate" => Self::approximate(Some(&payload), cap),
            "callable" => Self::from_callable(&payload, cap),
            other => Err(InvalidArgumentError::new_err(format!("unknown tokenizer state {other:?}"))),
        }
    }
}

/// Four characters a token: the module-level estimate.
#[pyfunction]
pub fn approximate_tokens(text: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(tokenize::approximate_tokens(&args::text_joined(text, "text")?))
}

