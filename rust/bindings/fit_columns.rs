//! `ctxfast.fit_columns`: `fit` for a request held as columns (a list of texts, a list of
//! layers, of keys...), the form a stateless server has its request in. The whole request
//! crosses once: no `Segment` object is built per item on the way in (each costs a Python call
//! with keyword arguments, more than the warm fit of its item), and the `Fit`'s segments are
//! only made if the caller reads `Fit.kept` / `evicted` / `truncated`, each with
//! `meta={"index": i}` naming its row.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use super::args;
use super::budget::Budget;
use super::cache_plan::CacheArgs;
use super::counting::resolve_tokenizer;
use super::errors::InvalidArgumentError;
use super::layer::layer_arg;
use super::outcome::Fit;
use super::fit::fit_counted;
use super::outcome_build::{Originals, RecordMeta};
use super::policy::policy_arg;
use super::records::list;
use super::tokenizer::Tokenizer;
use crate::cache::CountCache;
use crate::engine::{FitOptions, Layer, SegmentData, ToolCall};

/// A column given as a list of `rows` items, or None (every row takes the default).
fn column<'py>(obj: Option<&Bound<'py, PyAny>>, arg: &str, rows: usize) -> PyResult<Option<Bound<'py, PyList>>> {
    match obj {
        Some(o) if !o.is_none() => list(o, arg, Some(rows)).map(Some),
        _ => Ok(None),
    }
}

/// Item `i` of a column, None when the column is absent.
fn item<'py>(col: &Option<Bound<'py, PyList>>, i: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
    col.as_ref().map(|c| c.get_item(i)).transpose()
}

/// `read(column)`, and on error `read("column[i]")` again, so the error names the row: the
/// name is only formatted when something is wrong (formatting it for every item of every row
/// was a third of the call).
fn named<T>(read: impl Fn(&str) -> PyResult<T>, column: &str, i: usize) -> PyResult<T> {
    read(column).or_else(|_| read(&format!("{column}[{i}]")))
}

/// A row's tool call: None, or `(name, arguments)` or `(name, arguments, step)`, what a
/// `Segment`'s `meta` says under "tool", "arguments" and "step".
fn tool_item(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Option<ToolCall>> {
    if obj.is_none() {
        return Ok(None);
    }
    let want = "None or a (name, arguments[, step]) tuple";
    let t = obj.cast::<PyTuple>().map_err(|_| args::wrong_type(obj, arg, want))?;
    if !(2..=3).contains(&t.len()) {
        return Err(args::wrong_type(obj, arg, want));
    }
    let text = |v: Bound<'_, PyAny>| -> PyResult<Option<String>> { if v.is_none() { Ok(None) } else { Ok(Some(args::text(&v, arg)?.to_string())) } };
    let step = match t.get_item(2).ok().filter(|s| !s.is_none()) {
        Some(s) => Some(s.extract::<i64>().map_err(|_| args::wrong_type(&s, arg, "a step that is an int"))?),
        None => None,
    };
    Ok(Some(ToolCall { tool: text(t.get_item(0)?)?, arguments: text(t.get_item(1)?)?, step }))
}

/// The rows' counts: the caller's, else the native counter's cache read by `keys` (the texts'
/// `CountCache::key`), and what is left counted in one batch. The cache is read here rather
/// than by `count_strs` so the texts are not hashed again for it; a miss is counted uncached
/// and stored under its key, so the cache's hits and misses read as `count_many`'s would.
fn counts(py: Python<'_>, tok: &Tokenizer, data: &[SegmentData], texts: &[&str], keys: &[u128]) -> PyResult<Vec<usize>> {
    let cache = tok.native_counter().map(|c| c.cache()).filter(|c| c.enabled());
    let mut counts = Vec::with_capacity(data.len());
    let mut missing: Vec<(usize, &str, u128)> = Vec::new();
    for (i, ((d, &text), &key)) in data.iter().zip(texts).zip(keys).enumerate() {
        match d.tokens.or_else(|| cache.and_then(|c| c.get(key))) {
            Some(n) => counts.push(n),
            None => {
                counts.push(0);
                missing.push((i, text, key));
            }
        }
    }
    if missing.is_empty() {
        return Ok(counts);
    }
    let texts: Vec<&str> = missing.iter().map(|m| m.1).collect();
    // Without a cache read here (a callable's counter), the counter's own cache serves.
    let found = tok.count_strs(py, &texts, cache.is_none())?;
    for (&(i, _, key), n) in missing.iter().zip(found) {
        if let Some(c) = cache {
            c.insert(key, n);
        }
        if let Some(slot) = counts.get_mut(i) {
            *slot = n;
        }
    }
    Ok(counts)
}

/// Fits a request given as columns, one item a row: the same `Fit` as `fit` over
/// `[Segment(texts[i], layers[i], keys[i], scores[i], tokens=tokens[i], ...)]`.
///
/// - texts: list of str, the request in order.
/// - layers, keys, scores, groups, tokens, recoverable, stale: each a list with one item a
///   row, or None for the default (CONVERSATION, None, 0.0, None, None, False, False).
/// - tools: per row, None or `(name, arguments[, step])`: what a digest says of a tool call
///   (a `Segment`'s meta "tool", "arguments", "step").
/// - budget, policy, tokenizer, separator, previous, cache: as `fit`'s.
///
/// The Fit's segments carry `meta={"index": i}` (and the tool facts): `kept` maps back to rows.
#[pyfunction]
#[pyo3(signature = (texts, budget, *, layers=None, keys=None, scores=None, groups=None, tokens=None, recoverable=None, stale=None, tools=None, policy=None, tokenizer=None, separator=None, previous=None, cache=None))]
#[allow(clippy::too_many_arguments)]
pub fn fit_columns(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    budget: &Bound<'_, PyAny>,
    layers: Option<&Bound<'_, PyAny>>,
    keys: Option<&Bound<'_, PyAny>>,
    scores: Option<&Bound<'_, PyAny>>,
    groups: Option<&Bound<'_, PyAny>>,
    tokens: Option<&Bound<'_, PyAny>>,
    recoverable: Option<&Bound<'_, PyAny>>,
    stale: Option<&Bound<'_, PyAny>>,
    tools: Option<&Bound<'_, PyAny>>,
    policy: Option<&Bound<'_, PyAny>>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    separator: Option<&Bound<'_, PyAny>>,
    previous: Option<&Bound<'_, PyAny>>,
    cache: Option<&Bound<'_, PyAny>>,
) -> PyResult<Fit> {
    let cached = CacheArgs::read(previous, cache, "none")?;
    let texts = list(texts, "texts", None)?;
    let rows = texts.len();
    if rows == 0 {
        return Err(InvalidArgumentError::new_err("argument 'texts' is empty: there is no request to fit"));
    }
    let cols = [
        column(layers, "layers", rows)?,
        column(keys, "keys", rows)?,
        column(scores, "scores", rows)?,
        column(groups, "groups", rows)?,
        column(tokens, "tokens", rows)?,
        column(recoverable, "recoverable", rows)?,
        column(stale, "stale", rows)?,
        column(tools, "tools", rows)?,
    ];
    let [layers, keys, scores, groups, tokens, recoverable, stale, tools] = cols;
    let budget = budget.cast::<Budget>().map_err(|_| args::wrong_type(budget, "budget", "a ctxfast.Budget"))?;
    let policy = policy_arg(py, policy, "context_window")?;
    let tok = resolve_tokenizer(py, tokenizer)?;
    let tok = tok.get();
    let sep = match separator {
        Some(s) if !s.is_none() => Some(args::text(s, "separator")?),
        _ => None,
    };

    // The texts are borrowed from the caller's str objects for the whole crossing, not copied
    // into the core (copying them was a tenth of a cached request): `items` holds a reference to
    // each, so nothing the caller does meanwhile (the GIL may be released) frees one. A str whose
    // surrogate pairs had to be joined is the one copy, kept in its row's data.
    // (Filled by loops: a `collect` into `PyResult` cannot size its vector and grew it by
    // reallocation, a few per cent of the call.)
    let mut items: Vec<Bound<'_, PyAny>> = Vec::with_capacity(rows);
    for i in 0..rows {
        items.push(texts.get_item(i)?);
    }
    let mut joined: Vec<Cow<'_, str>> = Vec::with_capacity(rows);
    for (i, t) in items.iter().enumerate() {
        joined.push(args::text_item_joined(t, "texts", i)?);
    }
    let strs: Vec<&str> = joined.iter().map(|t| t.as_ref()).collect();
    let mut held: Vec<Option<Py<PyString>>> = Vec::with_capacity(rows);
    let mut data = Vec::with_capacity(rows);
    for (i, (text, obj)) in joined.iter().zip(&items).enumerate() {
        let (own, kept) = match (text, obj.cast::<PyString>()) {
            (Cow::Borrowed(_), Ok(s)) => (String::new(), Some(s.clone().unbind())),
            _ => (text.as_ref().to_owned(), None),
        };
        held.push(kept);
        let mut d = SegmentData::new(own, Layer::Conversation);
        if let Some(l) = item(&layers, i)? {
            d.layer = named(|n| layer_arg(&l, n), "layers", i)?;
        }
        let keyed = item(&keys, i)?;
        d.key = named(|n| args::ident_arg(keyed.as_ref(), n), "keys", i)?;
        let score = item(&scores, i)?.filter(|s| !s.is_none());
        d.score = named(|n| args::score_named(score.as_ref(), n), "scores", i)?;
        let group = item(&groups, i)?;
        d.group = named(|n| args::ident_arg(group.as_ref(), n), "groups", i)?;
        let given = item(&tokens, i)?;
        d.tokens = named(|n| args::opt_tokens(given.as_ref(), n), "tokens", i)?;
        let flag = item(&recoverable, i)?;
        d.recoverable = named(|n| args::flag(flag.as_ref(), n, false), "recoverable", i)?;
        let flag = item(&stale, i)?;
        d.stale = named(|n| args::flag(flag.as_ref(), n, false), "stale", i)?;
        if let Some(t) = item(&tools, i)? {
            d.set_tool(named(|n| tool_item(&t, n), "tools", i)?);
        }
        data.push(d);
    }

    // Each text is hashed once: its key finds the count in the cache and starts its fingerprint.
    let keys: Vec<u128> = strs.iter().map(|t| CountCache::key(t)).collect();
    let counts = counts(py, tok, &data, &strs, &keys)?;

    let opts = FitOptions { separator: sep, framing: 0, names: None, pins: &[], texts: Some(&strs) };
    let metas = (0..rows).map(RecordMeta::Index).collect();
    let originals = Originals::Records { data, metas, texts: held, built: pyo3::sync::PyOnceLock::new() };
    fit_counted(py, originals, &counts, Some(&keys), budget.get(), policy.get(), tok, &opts, &cached)
}
