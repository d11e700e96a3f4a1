//! Parking a window: `to_bytes` (a binary snapshot), `delta_since` / `apply_delta` (what a turn
//! changed), `from_bytes` (a snapshot, binary or JSON, plus deltas) and pickling.
//!
//! The core writes and checks the frames (`crate::window::persist`); this side adds what only
//! Python knows: the held segments' `meta` objects (JSON text, and only when some segment has
//! one, so a window without metas never enters Python's `json`) and how to rebuild the tokenizer.
//! A restored segment shares its entry's data: each text is held once.

use std::borrow::Cow;
use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use super::super::args;
use super::super::counting::resolve_tokenizer;
use super::super::errors::InvalidArgumentError;
use super::super::tokenizer::Tokenizer;
use super::persist_json;
use super::state::{lock, ContextWindow, Guarded, Objects, State};
use crate::window::persist::{is_binary, Extras};
use crate::window::delta::Applied;
use crate::window::{Entry, Window};

pub(super) fn not_saved(what: &str) -> PyErr {
    InvalidArgumentError::new_err(format!("argument 'data' is not a saved ContextWindow: {what}"))
}

/// A core window read from bytes, with what travels beside it.
pub(super) struct Loaded {
    pub(super) core: Window,
    pub(super) extras: Extras,
}

/// JSON text of `{entry id: meta}` for these entries, or None when none has a meta.
pub(super) fn metas_json<'a>(py: Python<'_>, st: &State, entries: impl Iterator<Item = &'a Entry>) -> PyResult<Option<String>> {
    let metas = PyDict::new(py);
    for e in entries {
        if let Some(m) = st.objects.get(&e.id).and_then(|o| o.bind(py).get().meta_ref(py)) {
            metas.set_item(e.id, m)?;
        }
    }
    if metas.is_empty() {
        return Ok(None);
    }
    let text = py.import("json")?.call_method1("dumps", (metas,)).and_then(|s| s.extract()).map_err(|e| {
        let err = InvalidArgumentError::new_err("a held segment's meta is not JSON-serialisable; use pickle to persist this window");
        err.set_cause(py, Some(e));
        err
    })?;
    Ok(Some(text))
}

/// `{entry id: meta}` read back from JSON text, into `into` (later texts override earlier ones).
fn read_metas(py: Python<'_>, text: Option<&str>, into: &mut HashMap<u64, Py<PyAny>>) -> PyResult<()> {
    let Some(text) = text else { return Ok(()) };
    let raw = py.import("json")?.call_method1("loads", (text,)).map_err(|_| not_saved("'metas' is not JSON text"))?;
    for (k, v) in raw.cast_into::<PyDict>().map_err(|_| not_saved("'metas' is not an object"))?.iter() {
        let id = k.extract::<String>().ok().and_then(|k| k.parse::<u64>().ok()).ok_or_else(|| not_saved("a meta id is not a number"))?;
        into.insert(id, v.unbind());
    }
    Ok(())
}

fn recipe(py: Python<'_>, w: &ContextWindow) -> Option<(String, serde_json::Value)> {
    w.tokenizer.bind(py).get().portable_recipe().map(|(kind, payload)| (kind.to_string(), payload))
}

pub(super) fn to_bytes<'py>(py: Python<'py>, w: &ContextWindow) -> PyResult<Bound<'py, PyBytes>> {
    let st = lock(py, &w.state)?;
    let extras = Extras { metas: metas_json(py, &st, st.core.entries().iter())?, tokenizer: recipe(py, w) };
    Ok(PyBytes::new(py, &st.core.to_snapshot(&extras)?))
}

pub(super) fn delta_since<'py>(py: Python<'py>, w: &ContextWindow, revision: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let mark = u64::try_from(args::count_arg(revision, "revision")?).unwrap_or(u64::MAX);
    let st = lock(py, &w.state)?;
    let metas = metas_json(py, &st, st.core.entries_changed_since(mark)?.into_iter())?;
    Ok(PyBytes::new(py, &st.core.delta_since(mark, metas.as_deref())?))
}

/// The bytes of a `bytes`-like argument (bytes, bytearray, memoryview), or a str's UTF-8;
/// `bytes` and `str` are borrowed, not copied.
fn bytes_of<'a>(data: &'a Bound<'_, PyAny>, name: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(s) = data.cast::<PyString>() {
        return Ok(Cow::Owned(s.to_str()?.as_bytes().to_vec()));
    }
    if data.is_instance_of::<pyo3::types::PyByteArray>() || data.is_instance_of::<pyo3::types::PyMemoryView>() {
        return Ok(Cow::Owned(data.py().import("builtins")?.getattr("bytes")?.call1((data,))?.extract()?));
    }
    Err(args::wrong_type(data, name, "bytes"))
}

/// Applies deltas in order to a loaded window, gathering the metas they carry.
fn apply_all(py: Python<'_>, core: Window, deltas: &[Cow<'_, [u8]>], metas: &mut HashMap<u64, Py<PyAny>>) -> PyResult<Window> {
    if deltas.is_empty() {
        return Ok(core);
    }
    let slices: Vec<&[u8]> = deltas.iter().map(|d| d.as_ref()).collect();
    let (core, applied) = core.with_deltas(&slices)?;
    merge_metas(py, &applied, metas)?;
    Ok(core)
}

/// The metas the applied deltas carry, over those before them.
fn merge_metas(py: Python<'_>, applied: &[Applied], metas: &mut HashMap<u64, Py<PyAny>>) -> PyResult<()> {
    for a in applied {
        for id in &a.upserted {
            metas.remove(id);
        }
        read_metas(py, a.metas.as_deref(), metas)?;
    }
    Ok(())
}

pub(super) fn from_bytes(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    deltas: Option<&Bound<'_, PyAny>>,
) -> PyResult<ContextWindow> {
    let bytes = bytes_of(data, "data")?;
    let mut items = Vec::new();
    if let Some(ds) = deltas.filter(|d| !d.is_none()) {
        for d in ds.try_iter().map_err(|_| args::wrong_type(ds, "deltas", "an iterable of bytes"))? {
            items.push(d?);
        }
    }
    let deltas_bytes = items.iter().enumerate().map(|(i, d)| bytes_of(d, &format!("deltas[{i}]"))).collect::<PyResult<Vec<_>>>()?;
    let mut metas = HashMap::new();
    let (core, extras) = if is_binary(&bytes) {
        // A binary snapshot and its deltas in one go: validated once, at the end.
        let slices: Vec<&[u8]> = deltas_bytes.iter().map(|d| d.as_ref()).collect();
        let (core, extras, applied) = Window::from_snapshot_and_deltas(&bytes, &slices)?;
        read_metas(py, extras.metas.as_deref(), &mut metas)?;
        merge_metas(py, &applied, &mut metas)?;
        (core, extras)
    } else {
        let Loaded { core, extras } = persist_json::from_json(&bytes)?;
        read_metas(py, extras.metas.as_deref(), &mut metas)?;
        (apply_all(py, core, &deltas_bytes, &mut metas)?, extras)
    };
    let tok = match (tokenizer.filter(|t| !t.is_none()), extras.tokenizer) {
        (Some(t), _) => resolve_tokenizer(py, Some(t))?,
        (None, Some((kind, payload))) => rebuild_tokenizer(py, &kind, payload)?,
        (None, None) => {
            return Err(InvalidArgumentError::new_err(
                "this window counted with a tokenizer.json or a callable: pass tokenizer= to from_bytes",
            ))
        }
    };
    restore(py, core, metas, tok)
}

/// Applies a delta in place: all of it, or (refused) none of it.
pub(super) fn apply_delta(py: Python<'_>, w: &ContextWindow, delta: &Bound<'_, PyAny>) -> PyResult<()> {
    let bytes = bytes_of(delta, "delta")?;
    let mut st = lock(py, &w.state)?;
    let (next, applied) = st.core.clone().with_delta(&bytes)?;
    let mut metas = HashMap::new();
    read_metas(py, applied.metas.as_deref(), &mut metas)?;
    st.core = next;
    let held: std::collections::HashSet<u64> = st.core.entries().iter().map(|e| e.id).collect();
    st.objects.retain(|id, _| held.contains(id));
    st.last_fit = None;
    for id in applied.upserted {
        let Some(e) = st.core.entries().iter().find(|e| e.id == id).cloned() else { continue };
        let obj = w.object_for(py, &e, metas.remove(&id))?;
        st.objects.insert(id, obj);
    }
    Ok(())
}

/// A window from a loaded core, with a segment object per held entry sharing its data.
pub(super) fn restore(py: Python<'_>, core: Window, mut metas: HashMap<u64, Py<PyAny>>, tokenizer: Bound<'_, Tokenizer>) -> PyResult<ContextWindow> {
    let me = ContextWindow { tokenizer: tokenizer.unbind(), state: Guarded::new(State { core, objects: Objects::default(), last_fit: None }) };
    {
        let mut st = lock(py, &me.state)?;
        let mut objects = Objects::with_capacity_and_hasher(st.core.entries().len(), Default::default());
        for e in st.core.entries() {
            objects.insert(e.id, me.object_for(py, e, metas.remove(&e.id))?);
        }
        st.objects = objects;
    }
    Ok(me)
}

/// Pickling: the core as a binary snapshot and the metas as Python objects (any picklable meta).
pub(super) fn state_parts<'py>(py: Python<'py>, w: &ContextWindow) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyDict>)> {
    let st = lock(py, &w.state)?;
    let metas = PyDict::new(py);
    for e in st.core.entries() {
        if let Some(m) = st.objects.get(&e.id).and_then(|o| o.bind(py).get().meta_ref(py)) {
            metas.set_item(e.id, m)?;
        }
    }
    Ok((PyBytes::new(py, &st.core.to_snapshot(&Extras::default())?), metas))
}

/// Unpickling (also a pickle from a release whose core travelled as JSON).
pub(super) fn from_parts(py: Python<'_>, core: &[u8], metas: &Bound<'_, PyDict>, tokenizer: Bound<'_, Tokenizer>) -> PyResult<ContextWindow> {
    let core = if is_binary(core) { Window::from_snapshot(core)?.0 } else { Window::from_json(core)? };
    let mut by_id = HashMap::new();
    for (k, v) in metas.iter() {
        by_id.insert(k.extract::<u64>().map_err(|_| not_saved("a meta id is not a number"))?, v.unbind());
    }
    restore(py, core, by_id, tokenizer)
}

fn rebuild_tokenizer<'py>(py: Python<'py>, kind: &str, payload: serde_json::Value) -> PyResult<Bound<'py, Tokenizer>> {
    let cls = py.get_type::<Tokenizer>();
    let made = match (kind, payload) {
        ("encoding", serde_json::Value::String(name)) => cls.call_method1("from_encoding", (name,)),
        ("approximate", serde_json::Value::Number(n)) => cls.call_method1("approximate", (n.as_f64().unwrap_or(0.0),)),
        _ => return Err(not_saved("'tokenizer' is not an [\"encoding\", name] or [\"approximate\", ratio] pair")),
    };
    let made = made.map_err(|e| {
        let err = not_saved("its 'tokenizer' cannot be rebuilt");
        err.set_cause(py, Some(e));
        err
    })?;
    Ok(made.cast_into::<Tokenizer>()?)
}
