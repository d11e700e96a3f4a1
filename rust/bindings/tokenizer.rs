//! `ctxfast.Tokenizer`: a frozen, thread-safe handle on a counting engine and its cache.

use std::sync::Arc;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use super::args;
pub use super::cache_info::CacheInfo;
use super::tokenizer_backend::Backend;
use super::callable::truncate_by_calls;
use super::errors::{file_error, FileKind, InvalidArgumentError, TokenizerLoadError};
use super::gil::{self, Work};
use super::tokenizer_batch::{in_batches, joined_items};
use crate::cache::{CountCache, DEFAULT_CAPACITY};
use crate::tokenize::specials::SpecialTokens;
use crate::tokenize::{self, Engine, EngineChoice, TokenCounter, DEFAULT_CHARS_PER_TOKEN};

/// An exact, thread-safe token counter with a bounded per-unit count cache.
///
/// Constructors: default() (o200k_base), from_encoding(name), from_file(path),
/// from_json(text), from_hf(obj), approximate(chars_per_token=4.0), from_callable(func).
#[pyclass(frozen, module = "ctxfast._core", name = "Tokenizer")]
pub struct Tokenizer {
    pub(super) backend: Backend,
}

/// The `special_tokens` argument: `"text"` (None) or `"matched"`.
fn special_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<SpecialTokens> {
    match obj.filter(|o| !o.is_none()) {
        None => Ok(SpecialTokens::Text),
        Some(o) => Ok(SpecialTokens::from_name(args::text(o, "special_tokens")?)?),
    }
}

/// `engine`: `"auto"` (None) or `"huggingface"`.
fn engine_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<EngineChoice> {
    obj.filter(|o| !o.is_none()).map_or(Ok(EngineChoice::Auto), |o| Ok(EngineChoice::from_name(args::text(o, "engine")?)?))
}

fn capacity_or_default(obj: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    Ok(args::opt_count(obj, "cache_capacity")?.unwrap_or(DEFAULT_CAPACITY))
}

#[pymethods]
impl Tokenizer {
    /// The embedded `o200k_base` encoding: no network, no files.
    #[staticmethod]
    #[pyo3(signature = (*, cache_capacity=None, special_tokens=None))]
    fn default(cache_capacity: Option<&Bound<'_, PyAny>>, special_tokens: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let cap = args::opt_count(cache_capacity, "cache_capacity")?;
        let c = TokenCounter::from_encoding_special("o200k_base", cap, special_arg(special_tokens)?)?;
        Ok(Self { backend: Backend::Native(c) })
    }

    /// An encoding embedded in the wheel: `"o200k_base"` or `"cl100k_base"`.
    #[staticmethod]
    #[pyo3(signature = (name, *, cache_capacity=None, special_tokens=None))]
    fn from_encoding(
        name: &Bound<'_, PyAny>,
        cache_capacity: Option<&Bound<'_, PyAny>>,
        special_tokens: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let name = args::text(name, "name")?;
        let cap = args::opt_count(cache_capacity, "cache_capacity")?;
        let c = TokenCounter::from_encoding_special(name, cap, special_arg(special_tokens)?)?;
        Ok(Self { backend: Backend::Native(c) })
    }

    /// The embedded encoding an OpenAI model counts with, by tiktoken's model table.
    #[staticmethod]
    #[pyo3(signature = (model, *, cache_capacity=None, special_tokens=None))]
    fn for_model(model: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>, special_tokens: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let model = args::text(model, "model")?;
        let cap = args::opt_count(cache_capacity, "cache_capacity")?;
        let name = tokenize::require_encoding_for_model(model)?.name();
        Ok(Self::from_counter(TokenCounter::from_encoding_special(name, cap, special_arg(special_tokens)?)?))
    }

    /// A Hugging Face `tokenizer.json` file (Llama, Qwen, Mistral, ...).
    ///
    /// `special_tokens=None` (the default on every engine) counts a special-token string
    /// in a text (`<|eot_id|>` typed by a user) as text; `"matched"` as its control token, as
    /// the `tokenizers` package does. A byte-level vocabulary whose merges cannot reach some of
    /// its tokens (Llama 3's file as often packaged, `ignore_merges: false`) is loaded with
    /// `ignore_merges: true`, as Meta's encoder behaves; `adjustments` says so, and
    /// `as_written=True` keeps the file's setting. `engine="auto"` counts a byte-level BPE with
    /// the fast engine when it serves the file and agrees with the tokenizers crate at load
    /// (`engine` and `engine_note` say which); `"huggingface"` always uses the crate.
    #[staticmethod]
    #[pyo3(signature = (path, *, cache_capacity=None, special_tokens=None, as_written=false, engine=None))]
    fn from_file(path: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>, special_tokens: Option<&Bound<'_, PyAny>>, as_written: bool, engine: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let py = path.py();
        let p = args::path(path, "path")?;
        let cap = capacity_or_default(cache_capacity)?;
        let (special, choice) = (special_arg(special_tokens)?, engine_arg(engine)?);
        let json = std::fs::read_to_string(&p).map_err(|e| file_error(&p, &e, FileKind::Tokenizer))?;
        let c = gil::run(py, Work::Bytes(json.len()), || TokenCounter::from_hf_json_with(&json, cap, special, as_written, choice))
            .map_err(|e| TokenizerLoadError::new_err(format!("{p:?}: {e}")))?;
        Ok(Self::native(c))
    }

    /// A Hugging Face tokenizer from the text of its `tokenizer.json`.
    #[staticmethod]
    #[pyo3(signature = (text, *, cache_capacity=None, special_tokens=None, as_written=false, engine=None))]
    fn from_json(text: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>, special_tokens: Option<&Bound<'_, PyAny>>, as_written: bool, engine: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let py = text.py();
        let json = args::text(text, "text")?;
        let cap = capacity_or_default(cache_capacity)?;
        let (special, choice) = (special_arg(special_tokens)?, engine_arg(engine)?);
        let c = gil::run(py, Work::Bytes(json.len()), || TokenCounter::from_hf_json_with(json, cap, special, as_written, choice))?;
        Ok(Self::native(c))
    }

    /// A `tokenizers.Tokenizer`, serialised into the core once.
    ///
    /// Counting then makes no Python call.
    #[staticmethod]
    #[pyo3(signature = (obj, *, cache_capacity=None, special_tokens=None, as_written=false, engine=None))]
    fn from_hf(obj: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>, special_tokens: Option<&Bound<'_, PyAny>>, as_written: bool, engine: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let json = obj
            .call_method0("to_str")
            .map_err(|_| args::wrong_type(obj, "obj", "a tokenizers.Tokenizer"))?;
        Self::from_json(&json, cache_capacity, special_tokens, as_written, engine)
    }

    /// An estimate, `ceil(characters / chars_per_token)`: for logs, never for a boundary.
    ///
    /// No cache by default: counting characters costs less than hashing them.
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

    /// Any `str -> int` counter the caller trusts, such as a serving stack's own.
    #[staticmethod]
    #[pyo3(signature = (func, *, cache_capacity=None))]
    fn from_callable(func: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        if !func.is_callable() {
            return Err(args::wrong_type(func, "func", "a callable str -> int"));
        }
        let cap = capacity_or_default(cache_capacity)?;
        Ok(Self { backend: Backend::Callable { func: func.clone().unbind(), cache: CountCache::new(cap), id: tokenize::next_counter_id() } })
    }

    /// The number of tokens in `text`.
    ///
    /// `cache=False` bypasses the count cache. A native engine releases the GIL for texts of
    /// 4 KB or more.
    #[pyo3(signature = (text, /, *, cache=None))]
    fn count(&self, text: &Bound<'_, PyAny>, cache: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
        let cache = args::flag(cache, "cache", true)?;
        let t = args::text_joined(text, "text")?;
        self.count_str(text.py(), &t, cache)
    }

    /// The count of every text, in order, as a numpy `int64` array.
    ///
    /// The GIL is released for the whole batch, and large batches are spread across cores.
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

    /// The token ids of `text`, with no special tokens added.
    fn encode(&self, text: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let py = text.py();
        let t = args::text_joined(text, "text")?;
        match &self.backend {
            Backend::Native(c) => Ok(gil::run(py, Work::Bytes(t.len()), || c.encode(&t))?),
            Backend::Callable { .. } => Err(Self::unsupported("encode")),
        }
    }

    /// The token ids of every text, in order: tiktoken's `encode_batch` as `encode_ordinary_batch`
    /// (no special ids), in one call into the core.
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

    /// The text of a sequence of token ids.
    fn decode(&self, ids: &Bound<'_, PyAny>) -> PyResult<String> {
        let ids = args::ids(ids, "ids")?;
        match &self.backend {
            Backend::Native(c) => Ok(c.decode(&ids)?),
            Backend::Callable { .. } => Err(Self::unsupported("decode")),
        }
    }

    /// The longest prefix of `text` that counts at most `max_tokens` tokens.
    ///
    /// The cut falls on a token boundary, never inside a character; `text` itself comes back
    /// when it already fits.
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

    /// Hits, misses, entries and capacity of this tokenizer's count cache.
    fn cache_info(&self) -> CacheInfo {
        match &self.backend {
            Backend::Native(c) => c.cache_info().into(),
            Backend::Callable { cache, .. } => cache.info().into(),
        }
    }

    /// Empties the count cache (a shared cache is emptied for every user) and, for an embedded
    /// encoding, the calling thread's piece cache.
    fn clear_cache(&self) {
        match &self.backend {
            Backend::Native(c) => c.clear_cache(),
            Backend::Callable { cache, .. } => cache.clear(),
        }
    }

    /// What counts: `"o200k_base"`, `"cl100k_base"`, `"huggingface:bpe"`, `"approximate(4)"` or
    /// `"callable:<name>"`.
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

    /// Whether counts are real tokens: False only for `approximate()`.
    #[getter]
    pub(super) fn is_exact(&self) -> bool {
        !matches!(&self.backend, Backend::Native(c) if matches!(c.engine(), Engine::Approximate { .. }))
    }

    /// The vocabulary's size; None for `approximate()` and `from_callable()`.
    #[getter]
    fn vocab_size(&self) -> Option<usize> {
        match &self.backend {
            Backend::Native(c) => c.vocab_size(),
            Backend::Callable { .. } => None,
        }
    }

    /// tiktoken's `n_vocab`: ids run `0..n_vocab`, special tokens included (cl100k_base 100,277,
    /// o200k_base 200,019). For a tokenizer.json it equals `vocab_size`; None for `approximate()`
    /// and `from_callable()`.
    #[getter]
    fn n_vocab(&self) -> Option<usize> {
        self.native_counter().and_then(|c| c.n_vocab())
    }

    /// tiktoken's `max_token_value`: the highest id, `n_vocab - 1`; None without a vocabulary.
    #[getter]
    fn max_token_value(&self) -> Option<usize> {
        self.n_vocab().and_then(|n| n.checked_sub(1))
    }

    /// tiktoken's `eot_token`, the id of `<|endoftext|>` (cl100k_base 100257, o200k_base 199999);
    /// None for tokenizers other than the embedded encodings.
    #[getter]
    fn eot_token(&self) -> Option<u32> {
        self.native_counter().and_then(|c| c.eot_token())
    }

    /// How a special-token string in a text counts: `"text"` (the default) or `"matched"`.
    #[getter]
    fn special_tokens(&self) -> &'static str {
        self.native_counter().map_or("text", |c| c.special().name())
    }

    /// What loading changed in the vocabulary's file, in words (empty: nothing).
    #[getter]
    fn adjustments(&self) -> Vec<String> {
        self.native_counter().map(|c| c.adjustments()).unwrap_or_default()
    }

    /// The engine that counts: `"bpe"` (fast), `"huggingface"`, `"o200k_base"`, `"approximate"`...
    #[getter]
    fn engine(&self) -> String {
        self.native_counter().map_or("callable".into(), |c| c.engine_info().0)
    }

    /// Why that engine counts, in words (for a tokenizer.json, why the fast engine declined).
    #[getter]
    fn engine_note(&self) -> String {
        self.native_counter().map_or("a Python callable".into(), |c| c.engine_info().1)
    }

    /// The vocabulary's control-token strings found in `text`, each once, in order of first
    /// appearance: `<|eot_id|>` in a user message is read as an end of turn by a server that
    /// renders it into a prompt.
    fn special_tokens_in(&self, text: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let text = args::text(text, "text")?;
        Ok(self.native_counter().map(|c| c.splitter().found(text).into_iter().map(str::to_string).collect()).unwrap_or_default())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("Tokenizer({})", self.name(py))
    }

    /// Pickles as the recipe, not the tables; the cache starts empty on the other side.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let me = slf.get();
        let restore = slf.get_type().getattr("_from_state")?;
        let state: Bound<'py, PyTuple> = match &me.backend {
            Backend::Native(c) => {
                let cap = c.cache_info().capacity;
                let special = c.special().name();
                match c.engine() {
                    Engine::Tiktoken(e) => {
                        let shared = Arc::ptr_eq(c, &TokenCounter::shared(*e));
                        let cap: Option<usize> = if shared { None } else { Some(cap) };
                        ("encoding", e.name(), cap, special).into_pyobject(py)?
                    }
                    Engine::HuggingFace(hf) => {
                        let json = c.hf_json()?.unwrap_or_default();
                        ("huggingface", json, Some(cap), special, hf.choice().name()).into_pyobject(py)?
                    }
                    Engine::Approximate { chars_per_token } => {
                        ("approximate", *chars_per_token, Some(cap), special).into_pyobject(py)?
                    }
                }
            }
            Backend::Callable { func, cache, .. } => {
                ("callable", func.clone_ref(py), Some(cache.info().capacity), "text").into_pyobject(py)?
            }
        };
        Ok((restore, PyTuple::new(py, [state])?))
    }

    /// Internal: rebuilds a tokenizer from its `__reduce__` recipe.
    #[staticmethod]
    fn _from_state(state: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let kind: String = state.get_item(0)?.extract()?;
        let payload = state.get_item(1)?;
        let cap = state.get_item(2)?;
        let cap = Some(&cap);
        // Recipes from before special_tokens existed have three items: those counted as text.
        let special = if state.len() > 3 { Some(state.get_item(3)?) } else { None };
        let special = special.as_ref();
        match kind.as_str() {
            "encoding" => Self::from_encoding(&payload, cap, special),
            // The file was adjusted, if at all, when it was first loaded: it is restored as it is.
            "huggingface" => {
                let engine = if state.len() > 4 { Some(state.get_item(4)?) } else { None };
                Self::from_json(&payload, cap, special, true, engine.as_ref())
            }
            "approximate" => Self::approximate(Some(&payload), cap),
            "callable" => Self::from_callable(&payload, cap),
            other => Err(InvalidArgumentError::new_err(format!("unknown tokenizer state {other:?}"))),
        }
    }
}

/// An estimate at four characters a token: `ceil(code points / 4)`.
#[pyfunction]
pub fn approximate_tokens(text: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(tokenize::approximate_tokens(&args::text_joined(text, "text")?))
}

