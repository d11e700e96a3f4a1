//! `Segment`: one piece of a request, immutable, validated once at construction; it remembers its
//! count for the last tokenizer that counted it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use portable_atomic::AtomicU128;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyMapping, PyString, PyTuple};

use super::args::{self, ident_arg, score_arg};
use super::counting::resolve_tokenizer;
use super::errors::{ArgumentTypeError, InvalidArgumentError};
use super::layer::{layer_arg, PromptLayer};
use super::tool_meta::tool_call;
use super::tokenizer::Tokenizer;
use crate::engine::{Layer, SegmentData};

/// One piece of a request, immutable once built; a missing `layer` is CONVERSATION.
///
/// Segment(text, layer=CONVERSATION, key=None, score=0.0, *, tokens=None, recoverable=False,
/// stale=False, group=None, level=None, covers=(), meta=None): each argument is the property of
/// that name below.
#[pyclass(frozen, module = "ctxfast._core", name = "Segment")]
pub struct Segment {
    pub data: Arc<SegmentData>,
    meta: Option<Py<PyAny>>,
    /// (counter id << 64) | count: the count travels with the segment, for the tokenizer that
    /// made it. One atomic, so a count is never read with another counter's id.
    memo: AtomicU128,
}

impl Segment {
    /// The constructor, with every field but the text taken from a dict (replace, unpickling).
    fn from_kwargs(text: &Bound<'_, PyAny>, kw: &Bound<'_, PyDict>) -> PyResult<Self> {
        let g = |k: &str| kw.get_item(k).ok().flatten();
        Segment::new(
            text,
            g("layer").as_ref(),
            g("key").as_ref(),
            g("score").as_ref(),
            g("tokens").as_ref(),
            g("recoverable").as_ref(),
            g("stale").as_ref(),
            g("group").as_ref(),
            g("level").as_ref(),
            g("covers").as_ref(),
            g("meta").as_ref(),
        )
    }

    pub fn from_data(data: SegmentData, meta: Option<Py<PyAny>>) -> Self {
        Self::from_shared(Arc::new(data), meta)
    }

    pub fn from_shared(data: Arc<SegmentData>, meta: Option<Py<PyAny>>) -> Self {
        Self { data, meta, memo: AtomicU128::new(0) }
    }

    pub fn with_count(data: SegmentData, meta: Option<Py<PyAny>>, counter_id: u64, count: usize) -> Self {
        let s = Self::from_data(data, meta);
        s.remember(counter_id, count);
        s
    }

    pub fn meta_ref(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.meta.as_ref().map(|m| m.clone_ref(py))
    }

    /// The count for this tokenizer: given by the caller, or remembered from an earlier count.
    pub fn known_count(&self, counter_id: u64) -> Option<usize> {
        if let Some(t) = self.data.tokens {
            return Some(t);
        }
        let m = self.memo.load(Ordering::Relaxed);
        let id = u64::try_from(m >> 64).unwrap_or(0);
        let count = u64::try_from(m & u128::from(u64::MAX)).unwrap_or(0);
        (id == counter_id && counter_id != 0).then(|| usize::try_from(count).ok()).flatten()
    }

    pub fn remember(&self, counter_id: u64, count: usize) {
        if let Ok(c) = u64::try_from(count) {
            self.memo.store((u128::from(counter_id) << 64) | u128::from(c), Ordering::Relaxed);
        }
    }
}

#[pymethods]
impl Segment {
    #[new]
    #[pyo3(signature = (text, layer=None, key=None, score=None, *, tokens=None, recoverable=None, stale=None, group=None, level=None, covers=None, meta=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        text: &Bound<'_, PyAny>,
        layer: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        score: Option<&Bound<'_, PyAny>>,
        tokens: Option<&Bound<'_, PyAny>>,
        recoverable: Option<&Bound<'_, PyAny>>,
        stale: Option<&Bound<'_, PyAny>>,
        group: Option<&Bound<'_, PyAny>>,
        level: Option<&Bound<'_, PyAny>>,
        covers: Option<&Bound<'_, PyAny>>,
        meta: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let recoverable = args::flag(recoverable, "recoverable", false)?;
        let stale = args::flag(stale, "stale", false)?;
        let text_s = args::text_joined(text, "text")?.into_owned();
        let layer = match layer {
            Some(l) if !l.is_none() => layer_arg(l, "layer")?,
            _ => Layer::Conversation,
        };
        let tokens = args::opt_tokens(tokens, "tokens")?;
        let level = match level {
            Some(l) if !l.is_none() => {
                if l.is_instance_of::<PyBool>() || !l.is_instance_of::<PyInt>() {
                    return Err(args::wrong_type(l, "level", "int or None"));
                }
                Some(l.extract::<i64>().map_err(|_| InvalidArgumentError::new_err(format!("argument 'level' is out of range: {}", args::preview(l))))?)
            }
            _ => None,
        };
        let covers = match covers {
            Some(c) if !c.is_none() => args::texts(c, "covers")?
                .iter()
                .map(|s| Ok(s.to_str()?.to_string()))
                .collect::<PyResult<Vec<_>>>()?,
            _ => Vec::new(),
        };
        let meta = meta.filter(|m| !m.is_none());
        let tool = match meta {
            Some(m) => tool_call(m)?,
            None => None,
        };
        let mut data = SegmentData::new(text_s, layer);
        data.key = ident_arg(key, "key")?;
        data.score = score_arg(score)?;
        data.tokens = tokens;
        data.recoverable = recoverable;
        data.stale = stale;
        data.group = ident_arg(group, "group")?;
        data.set_level(level);
        data.set_covers(covers);
        data.set_tool(tool);
        Ok(Self::from_data(data, meta.map(|m| m.clone().unbind())))
    }

    /// The text that is sent.
    #[getter]
    fn text(&self) -> &str {
        &self.data.text
    }
    /// The layer this segment belongs to.
    #[getter]
    fn layer(&self) -> PromptLayer {
        self.data.layer.into()
    }
    /// The identity key (an int key comes back as its decimal text), or None.
    #[getter]
    fn key(&self) -> Option<&str> {
        self.data.key.as_deref()
    }
    /// Relevance in [0, 1]; 0.0 unless given.
    #[getter]
    fn score(&self) -> f64 {
        self.data.score
    }
    /// The count the caller gave (`tokens=`), or None; `count()` gives the counted one.
    #[getter]
    fn tokens(&self) -> Option<usize> {
        self.data.tokens
    }
    /// Whether an authoritative copy exists outside the request.
    #[getter]
    fn recoverable(&self) -> bool {
        self.data.recoverable
    }
    /// Whether the content is marked out of date.
    #[getter]
    fn stale(&self) -> bool {
        self.data.stale
    }
    /// The eviction unit this segment belongs to, or None (a unit of its own).
    #[getter]
    fn group(&self) -> Option<&str> {
        self.data.group.as_deref()
    }
    /// The summary level, or None.
    #[getter]
    fn level(&self) -> Option<i64> {
        self.data.level()
    }
    /// Keys of the level-1 summaries this summary covers; empty unless given.
    #[getter]
    fn covers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.data.covers())
    }
    /// The caller's object, unchanged, or None.
    #[getter]
    fn meta(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.meta_ref(py)
    }

    /// This segment's token count under `tokenizer`, computed once.
    ///
    /// `tokenizer`: a Tokenizer, a `str -> int` callable, or None for the embedded o200k_base.
    /// A caller-given `tokens=` is returned as is.
    #[pyo3(signature = (tokenizer=None))]
    fn count(&self, py: Python<'_>, tokenizer: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
        let tok = resolve_tokenizer(py, tokenizer)?;
        let tok = tok.get();
        if let Some(n) = self.known_count(tok.counter_id()) {
            return Ok(n);
        }
        let n = tok.count_str(py, &self.data.text, true)?;
        self.remember(tok.counter_id(), n);
        Ok(n)
    }

    /// A copy with some fields changed, e.g. `seg.replace(stale=True)`.
    #[pyo3(signature = (**changes))]
    fn replace(slf: &Bound<'_, Self>, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = slf.py();
        let me = slf.get();
        let d = &me.data;
        let kw = PyDict::new(py);
        kw.set_item("layer", PromptLayer::from(d.layer))?;
        kw.set_item("key", d.key.as_deref())?;
        kw.set_item("score", d.score)?;
        kw.set_item("tokens", d.tokens)?;
        kw.set_item("recoverable", d.recoverable)?;
        kw.set_item("stale", d.stale)?;
        kw.set_item("group", d.group.as_deref())?;
        kw.set_item("level", d.level())?;
        kw.set_item("covers", PyTuple::new(py, d.covers())?)?;
        kw.set_item("meta", me.meta_ref(py))?;
        let mut text = PyString::new(py, &d.text).into_any();
        if let Some(ch) = changes {
            for (k, v) in ch.iter() {
                let name: String = k.extract()?;
                if name == "text" {
                    text = v;
                } else if kw.contains(&name)? {
                    kw.set_item(name, v)?;
                } else {
                    return Err(ArgumentTypeError::new_err(format!("Segment has no field {name:?}")));
                }
            }
        }
        Segment::from_kwargs(&text, &kw)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.cast::<Segment>() else { return Ok(false) };
        let o = o.get();
        if o.data != self.data {
            return Ok(false);
        }
        let py = other.py();
        match (&self.meta, &o.meta) {
            (None, None) => Ok(true),
            (Some(a), Some(b)) => a.bind(py).eq(b.bind(py)),
            _ => Ok(false),
        }
    }

    fn __repr__(&self) -> String {
        let d = &self.data;
        let mut preview: String = d.text.chars().take(40).collect();
        if preview.len() < d.text.len() {
            preview.push('…');
        }
        let mut parts = vec![format!("{preview:?}"), format!("layer=PromptLayer.{:?}", PromptLayer::from(d.layer))];
        if let Some(k) = &d.key {
            parts.push(format!("key={k:?}"));
        }
        if d.score != 0.0 {
            parts.push(format!("score={}", d.score));
        }
        if let Some(t) = d.tokens {
            parts.push(format!("tokens={t}"));
        }
        if let Some(g) = &d.group {
            parts.push(format!("group={g:?}"));
        }
        for (flag, name) in [(d.recoverable, "recoverable"), (d.stale, "stale")] {
            if flag {
                parts.push(format!("{name}=True"));
            }
        }
        format!("Segment({})", parts.join(", "))
    }

    /// Pickles every field, `meta` included (it must be picklable).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let me = slf.get();
        let d = &me.data;
        let kwargs = PyDict::new(py);
        kwargs.set_item("tokens", d.tokens)?;
        kwargs.set_item("recoverable", d.recoverable)?;
        kwargs.set_item("stale", d.stale)?;
        kwargs.set_item("group", d.group.as_deref())?;
        kwargs.set_item("level", d.level())?;
        kwargs.set_item("covers", PyTuple::new(py, d.covers())?)?;
        kwargs.set_item("meta", me.meta_ref(py))?;
        let state = (d.text.as_str(), PromptLayer::from(d.layer), d.key.as_deref(), d.score, kwargs).into_pyobject(py)?;
        Ok((slf.get_type().getattr("_restore")?, state))
    }

    /// Internal: the unpickling constructor.
    #[staticmethod]
    fn _restore(
        text: &Bound<'_, PyAny>,
        layer: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        score: &Bound<'_, PyAny>,
        kwargs: &Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let kw = kwargs.copy()?;
        kw.set_item("layer", layer)?;
        kw.set_item("key", key)?;
        kw.set_item("score", score)?;
        Segment::from_kwargs(text, &kw)
    }
}


/// Counts every segment not yet counted by this tokenizer, in one batch, and remembers each count
/// on its segment.
pub fn settle_counts(py: Python<'_>, tok: &Tokenizer, segs: &[Bound<'_, Segment>]) -> PyResult<Vec<usize>> {
    let id = tok.counter_id();
    let mut counts: Vec<usize> = vec![0; segs.len()];
    let mut missing: Vec<usize> = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        match s.get().known_count(id) {
            Some(n) => counts[i] = n,
            None => missing.push(i),
        }
    }
    if !missing.is_empty() {
        let texts: Vec<&str> = missing.iter().map(|&i| segs[i].get().data.text.as_str()).collect();
        let got = tok.count_strs(py, &texts, true)?;
        for (&i, n) in missing.iter().zip(got) {
            counts[i] = n;
            segs[i].get().remember(id, n);
        }
    }
    Ok(counts)
}

/// A sequence of Segment objects, each checked, errors naming `arg[i]`.
pub fn segments_arg<'py>(segments: &Bound<'py, PyAny>, arg: &str) -> PyResult<Vec<Bound<'py, Segment>>> {
    // A dict or a str iterates (keys, characters), but neither is a sequence of segments: name
    // the argument's own type rather than its first item's.
    if segments.is_instance_of::<PyString>() || segments.cast::<PyMapping>().is_ok() {
        return Err(args::wrong_type(segments, arg, "a sequence of Segment"));
    }
    let iter = segments.try_iter().map_err(|_| args::wrong_type(segments, arg, "a sequence of Segment"))?;
    let mut out = Vec::new();
    for (i, item) in iter.enumerate() {
        let seg = item?.cast_into::<Segment>().map_err(|e| args::wrong_type(&e.into_inner(), &format!("{arg}[{i}]"), "Segment"))?;
        out.push(seg);
    }
    Ok(out)
}
