//! `ctxfast.Policy`: a reviewed order of sacrifice, as data.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use super::args;
use super::errors::{file_error, FileKind, InvalidArgumentError};
use super::layer::PromptLayer;
use crate::engine::{policy_format, presets, Policy as CorePolicy};
use crate::limits::MAX_DEPTH;

/// A reviewable order of sacrifice: an ordered list of rungs plus the protected set.
///
/// Presets: context_window() (the default), troubleshooting(), seven_tier(top_k=3),
/// ranked(keep_last=2), agent(keep_last=2) (the adapters' default), or preset(name). As data:
/// from_dict(d), from_toml(path), from_toml_str(text); describe() prints the table.
#[pyclass(frozen, module = "ctxfast._core", name = "Policy")]
pub struct Policy {
    pub name: Option<String>,
    pub inner: CorePolicy,
}

/// A dict / list / scalar tree from Python, as JSON-shaped data for the one policy parser. Nesting
/// deeper than `MAX_DEPTH` (or a dict that contains itself) is refused, naming where.
fn to_value(obj: &Bound<'_, PyAny>, path: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(InvalidArgumentError::new_err(format!(
            "policy {path}: nested more than {MAX_DEPTH} levels deep (does a dict or list contain itself?)"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(l) = obj.cast::<PromptLayer>() {
        return Ok(Value::String(l.get().label().to_string()));
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(v) => Ok(Value::Number(v.into())),
            Err(_) => Err(InvalidArgumentError::new_err(format!("policy {path}: integer out of range"))),
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        let f: f64 = obj.extract()?;
        return Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| InvalidArgumentError::new_err(format!("policy {path}: {f} is not a finite number")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_string()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, v) in d.iter() {
            let key = match k.cast::<PromptLayer>() {
                Ok(l) => l.get().label().to_string(),
                Err(_) => k.extract::<String>().map_err(|_| args::wrong_type(&k, &format!("policy {path} key"), "str"))?,
            };
            let p = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            m.insert(key, to_value(&v, &p, depth + 1)?);
        }
        return Ok(Value::Object(m));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyFrozenSet>() {
        let mut out = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            out.push(to_value(&item?, &format!("{path}[{i}]"), depth + 1)?);
        }
        return Ok(Value::Array(out));
    }
    Err(args::wrong_type(obj, &format!("policy {path}"), "a dict, list, str, number or bool"))
}

fn from_value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| InvalidArgumentError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

impl Policy {
    fn named(name: &str, inner: CorePolicy) -> Self {
        Self { name: Some(name.to_string()), inner }
    }

    pub fn by_name(name: &str) -> PyResult<Self> {
        presets::by_name(name).map(|(n, p)| Self::named(n, p)).ok_or_else(|| presets::unknown(name).into())
    }
}

/// The policy argument: a Policy, a preset name, or None for the preset `default`.
pub fn policy_arg<'py>(py: Python<'py>, policy: Option<&Bound<'py, PyAny>>, default: &str) -> PyResult<Bound<'py, Policy>> {
    match policy {
        Some(p) if !p.is_none() => {
            if let Ok(pol) = p.cast::<Policy>() {
                return Ok(pol.clone());
            }
            if p.is_instance_of::<PyString>() {
                return Bound::new(py, Policy::by_name(args::text(p, "policy")?)?);
            }
            Err(args::wrong_type(p, "policy", "a ctxfast.Policy or a preset name"))
        }
        _ => Bound::new(py, Policy::by_name(default)?),
    }
}

/// Private, for the adapters: the `policy` argument resolved as `fit` resolves it, with
/// `default` naming the preset used for None.
#[pyfunction]
#[pyo3(signature = (policy=None, default="context_window"))]
pub fn _resolve_policy<'py>(py: Python<'py>, policy: Option<&Bound<'py, PyAny>>, default: &str) -> PyResult<Bound<'py, Policy>> {
    policy_arg(py, policy, default)
}

#[pymethods]
impl Policy {
    /// The default (of `fit` and `ContextWindow`): drop conversation, with its tool results and
    /// summaries, oldest first; then retrieved, lowest score first.
    #[staticmethod]
    fn context_window() -> Self {
        Self::named("context_window", presets::context_window())
    }

    /// Drop whole exchanges oldest first, keeping the first one and the last three; then
    /// retrieved chunks lowest score first, keeping the top four; then truncate the
    /// lowest-scored chunk body, never below 128 tokens. Traces label the conversation layers
    /// `"history"` and retrieved `"retrieval"`.
    #[staticmethod]
    fn troubleshooting() -> Self {
        Self::named("troubleshooting", presets::troubleshooting())
    }

    /// Stale tool results oldest first; retrieved below the top `top_k` (3 by default), lowest
    /// score first; level-1 summaries covered by a held level-2 summary; the rolling summary
    /// (level 0); then recent conversation turns (with their tool results), oldest first. A tool
    /// result that is not stale and belongs to no turn is output the model has not used yet: it
    /// goes last, on its own rung (`unconsumed_tool_results`).
    #[staticmethod]
    #[pyo3(signature = (top_k=None))]
    fn seven_tier(top_k: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let k = top_k.map(|k| args::count_arg(k, "top_k")).transpose()?.unwrap_or(presets::DEFAULT_TOP_K);
        Ok(Self::named("seven_tier", presets::seven_tier(k)))
    }

    /// One rung over every unprotected layer in `rank` order: recoverable first, stale first,
    /// lowest score first, largest first. The last `keep_last` exchanges (2 by default) are
    /// kept.
    #[staticmethod]
    #[pyo3(signature = (keep_last=None))]
    fn ranked(keep_last: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let k = keep_last.map(|k| args::count_arg(k, "keep_last")).transpose()?.unwrap_or(presets::DEFAULT_KEEP_LAST);
        Ok(Self::named("ranked", presets::ranked(k)))
    }

    /// The adapters' default, for agent transcripts: old tool exchanges are digested, then
    /// dropped, oldest first, keeping the last `keep_last` exchanges (2 by default).
    #[staticmethod]
    #[pyo3(signature = (keep_last=None))]
    fn agent(keep_last: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let k = keep_last.map(|k| args::count_arg(k, "keep_last")).transpose()?.unwrap_or(presets::DEFAULT_KEEP_LAST);
        Ok(Self::named("agent", presets::agent(k)))
    }

    /// A preset by name: `"context_window"` (alias `"default"`), `"troubleshooting"`,
    /// `"seven_tier"`, `"ranked"` or `"agent"`, with its default arguments.
    #[staticmethod]
    fn preset(name: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::by_name(args::text(name, "name")?)
    }

    /// A policy from its dict form, the same fields as a TOML policy file.
    ///
    /// Top level: rungs (required, tried in order), name, protected (it can only add layers to
    /// system, tools, pinned and current_turn), labels ({layer: display label}).
    /// A rung: name, layers, order (oldest | newest | lowest_score | largest | rank), action
    /// (drop | truncate | digest), filter (stale | recoverable | covered | "level:N"), floor
    /// ({keep_first, keep_last, keep_top, min_tokens}), min_tokens (truncate only, 128 by
    /// default), until ("fits", the default, or "cap": run while the layer is over its cap).
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyAny>) -> PyResult<Self> {
        if !d.is_instance_of::<PyDict>() {
            return Err(args::wrong_type(d, "d", "dict"));
        }
        let v = to_value(d, "", 0)?;
        let (name, inner) = policy_format::from_value(&v)?;
        Ok(Self { name, inner })
    }

    /// A policy from a TOML file, with the same fields as `from_dict`.
    #[staticmethod]
    fn from_toml(path: &Bound<'_, PyAny>) -> PyResult<Self> {
        let p = args::path(path, "path")?;
        let text = std::fs::read_to_string(&p).map_err(|e| file_error(&p, &e, FileKind::Policy))?;
        let (name, inner) = policy_format::from_toml(&text).map_err(|e| InvalidArgumentError::new_err(format!("{p}: {e}")))?;
        Ok(Self { name, inner })
    }

    /// A policy from TOML text, with the same fields as `from_dict`.
    #[staticmethod]
    fn from_toml_str(text: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (name, inner) = policy_format::from_toml(args::text(text, "text")?)?;
        Ok(Self { name, inner })
    }

    /// The dict form: `name` (when set), `protected`, `labels` (only the ones that differ from
    /// the layer names) and `rungs`. `from_dict` reads it back equal.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        from_value(py, &policy_format::to_value(self.name.as_deref(), &self.inner))
    }

    /// The documented order, first to go … never, within 80 columns.
    fn describe(&self) -> String {
        policy_format::describe(self.name.as_deref(), &self.inner)
    }

    /// The preset's name or the `name` field; None for an unnamed custom policy.
    #[getter]
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The rungs' names, in the order they run.
    #[getter]
    fn rung_names(&self) -> Vec<String> {
        self.inner.rungs.iter().map(|r| r.name.clone()).collect()
    }

    /// The layers no rung of this policy may draw from.
    #[getter]
    fn protected<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        let layers: Vec<PromptLayer> = self.inner.protected.iter().map(PromptLayer::from).collect();
        PyFrozenSet::new(py, layers)
    }

    fn __str__(&self) -> String {
        self.describe()
    }

    fn __repr__(&self) -> String {
        format!("Policy({}, {} rungs)", self.name.as_deref().unwrap_or("custom"), self.inner.rungs.len())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Policy>().is_ok_and(|o| o.get().inner == self.inner && o.get().name == self.name)
    }

    /// Pickles as `Policy.from_dict(self.to_dict())`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let d = slf.get().to_dict(py)?;
        Ok((slf.get_type().getattr("from_dict")?, PyTuple::new(py, [d])?))
    }
}
