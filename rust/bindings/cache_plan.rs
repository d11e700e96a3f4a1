//! The prompt-cache glue: `CacheProfile` and `CacheReport` objects, the `previous=` and
//! `cache=` arguments every fit takes, and the one call each entry point makes to plan its cut
//! and settle its report (`engine::cache` does the work).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use super::args;
use super::errors::InvalidArgumentError;
use super::outcome::Fit;
use crate::engine::cache::{self, Cut, Report, Sent};

/// A prompt cache: what it reuses, writes and charges, with prices per uncached input token.
///
/// `CacheProfile(name)` takes a preset: "none", "openai" (automatic, from 1,024 tokens in
/// 128-token steps, reads at 0.1), "anthropic" (cache_control breakpoints, 1,024 minimum, reads
/// 0.1, writes 1.25), "anthropic-1h" (writes 2.0), "anthropic-haiku-3" (2,048 minimum),
/// "anthropic-4096" (Opus 4.5 and Haiku 4.5), "llama.cpp" (KV prefix reuse, token by token),
/// "vllm" (16-token blocks). Keywords override a field: `CacheProfile("openai", read_price=0.5)`.
#[pyclass(frozen, module = "ctxfast._core", name = "CacheProfile")]
#[derive(Clone)]
pub struct CacheProfile {
    pub inner: cache::CacheProfile,
}

#[pymethods]
impl CacheProfile {
    #[new]
    #[pyo3(signature = (name="openai", *, min_prefix=None, increment=None, read_price=None, write_price=None, low_watermark=None, lookahead_turns=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        min_prefix: Option<&Bound<'_, PyAny>>,
        increment: Option<&Bound<'_, PyAny>>,
        read_price: Option<&Bound<'_, PyAny>>,
        write_price: Option<&Bound<'_, PyAny>>,
        low_watermark: Option<&Bound<'_, PyAny>>,
        lookahead_turns: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut p = cache::CacheProfile::named(name)?;
        if let Some(n) = args::opt_tokens(min_prefix, "min_prefix")? {
            p.min_prefix = n;
        }
        if let Some(n) = args::opt_tokens(increment, "increment")? {
            p.increment = n.max(1);
        }
        if let Some(v) = price(read_price, "read_price")? {
            p.read_price = v;
        }
        if let Some(v) = price(write_price, "write_price")? {
            p.write_price = v;
        }
        if let Some(w) = low_watermark.filter(|w| !w.is_none()) {
            p.low_watermark = args::positive_float(w, "low_watermark")?;
        }
        if let Some(n) = args::opt_count(lookahead_turns, "lookahead_turns")? {
            p.lookahead_turns = n.min(1 << 20);
        }
        p.validate()?;
        Ok(CacheProfile { inner: p })
    }
    /// The preset it started from.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    /// How the cache decides what it holds.
    #[getter]
    fn style(&self) -> &'static str {
        match self.inner.style {
            cache::CacheStyle::None => "none",
            cache::CacheStyle::Automatic => "automatic",
            cache::CacheStyle::Breakpoints => "breakpoints",
            cache::CacheStyle::Local => "local",
        }
    }
    /// The shortest prefix the cache holds.
    #[getter]
    fn min_prefix(&self) -> usize {
        self.inner.min_prefix
    }
    /// The step a cached prefix grows in.
    #[getter]
    fn increment(&self) -> usize {
        self.inner.increment
    }
    /// A cached token read, per uncached token.
    #[getter]
    fn read_price(&self) -> f64 {
        self.inner.read_price
    }
    /// A token written to the cache, per uncached token (1.0: no surcharge).
    #[getter]
    fn write_price(&self) -> f64 {
        self.inner.write_price
    }
    /// When the cut must move, the share of the ceiling it moves down to at least.
    #[getter]
    fn low_watermark(&self) -> f64 {
        self.inner.low_watermark
    }
    /// When the cut must move, room is made for this many more turns like the last one.
    #[getter]
    fn lookahead_turns(&self) -> usize {
        self.inner.lookahead_turns
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<CacheProfile>().is_ok_and(|o| o.get().inner == self.inner)
    }
    fn __hash__(&self) -> u64 {
        crate::hash::xxh3_64(self.__repr__().as_bytes())
    }
    fn __repr__(&self) -> String {
        let p = &self.inner;
        format!(
            "CacheProfile({:?}, min_prefix={}, increment={}, read_price={}, write_price={}, low_watermark={}, lookahead_turns={})",
            p.name, p.min_prefix, p.increment, p.read_price, p.write_price, p.low_watermark, p.lookahead_turns
        )
    }
}

fn price(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<f64>> {
    let Some(o) = obj.filter(|o| !o.is_none()) else { return Ok(None) };
    if o.is_instance_of::<PyBool>() {
        return Err(args::wrong_type(o, arg, "float"));
    }
    let v: f64 = o.extract().map_err(|_| args::wrong_type(o, arg, "float"))?;
    if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
        return Err(InvalidArgumentError::new_err(format!("argument '{arg}' must be a price in [0, 100], got {v}")));
    }
    Ok(Some(v))
}

/// What the provider's prompt cache is predicted to do with a fitted request (`Fit.cache`).
#[pyclass(frozen, module = "ctxfast._core", name = "CacheReport")]
pub struct CacheReport {
    pub inner: Report,
}

#[pymethods]
impl CacheReport {
    /// The profile's name.
    #[getter]
    fn profile(&self) -> &str {
        &self.inner.profile
    }
    /// Whether the fit was given the previous request (`previous=`).
    #[getter]
    fn previous(&self) -> bool {
        self.inner.previous
    }
    /// Leading tokens the same as the previous request's (0 without one). For a chat template
    /// fit it is measured on the rendered prompts' token ids.
    #[getter]
    fn unchanged_prefix(&self) -> usize {
        self.inner.prediction.unchanged_prefix
    }
    /// Tokens predicted to be read from the cache.
    #[getter]
    fn read(&self) -> usize {
        self.inner.prediction.read
    }
    /// Tokens predicted to be written to it (breakpoint caches; 0 where writes are free).
    #[getter]
    fn write(&self) -> usize {
        self.inner.prediction.write
    }
    /// Tokens prefilled at the full price.
    #[getter]
    fn uncached(&self) -> usize {
        self.inner.prediction.uncached
    }
    /// The request's input price in uncached-token units:
    /// `uncached + read * read_price + write * write_price`.
    #[getter]
    fn cost(&self) -> f64 {
        self.inner.prediction.cost
    }
    /// `"fresh"` (no previous request: a plain fit), `"kept"` (the previous cut still fits;
    /// what it sent starts this request) or `"moved"`.
    #[getter]
    fn cut(&self) -> &'static str {
        self.inner.cut.name()
    }
    /// Whether the cut moved since the previous request.
    #[getter]
    fn moved(&self) -> bool {
        matches!(self.inner.cut, Cut::Moved { .. })
    }
    /// What a moved cut evicted down to; None when it evicted exactly to fit, or did not
    /// move.
    #[getter]
    fn target(&self) -> Option<usize> {
        match self.inner.cut {
            Cut::Moved { target } => target,
            _ => None,
        }
    }
    fn __str__(&self) -> String {
        self.inner.line()
    }
    fn __repr__(&self) -> String {
        let p = &self.inner.prediction;
        format!(
            "CacheReport(profile={:?}, unchanged_prefix={}, read={}, write={}, uncached={}, cut={:?})",
            self.inner.profile, p.unchanged_prefix, p.read, p.write, p.uncached, self.inner.cut.name()
        )
    }
}

/// The `previous=` and `cache=` arguments, read.
pub struct CacheArgs {
    pub previous: Option<Arc<Sent>>,
    pub profile: cache::CacheProfile,
    /// Whether the caller asked for the cache at all (either argument): the trace then says
    /// what the cache will do.
    pub asked: bool,
}

impl CacheArgs {
    pub fn read(previous: Option<&Bound<'_, PyAny>>, profile: Option<&Bound<'_, PyAny>>, default: &str) -> PyResult<Self> {
        let previous = previous.filter(|p| !p.is_none());
        let profile = profile.filter(|p| !p.is_none());
        let asked = previous.is_some() || profile.is_some();
        let previous = match previous {
            None => None,
            Some(p) => Some(
                p.cast::<Fit>()
                    .map_err(|_| args::wrong_type(p, "previous", "the previous turn's ctxfast.Fit, or None"))?
                    .get()
                    .sent
                    .clone(),
            ),
        };
        let profile = match profile {
            None => cache::CacheProfile::named(default)?,
            Some(p) if p.is_instance_of::<PyString>() => cache::CacheProfile::named(args::text(p, "cache")?)?,
            Some(p) => p
                .cast::<CacheProfile>()
                .map_err(|_| args::wrong_type(p, "cache", "a ctxfast.CacheProfile, a profile name or None"))?
                .get()
                .inner
                .clone(),
        };
        Ok(CacheArgs { previous, profile, asked })
    }
}

/// Puts a settled report and what was sent on `fit`.
pub fn attach(py: Python<'_>, fit: &mut Fit, sent: Sent, report: Report) -> PyResult<()> {
    fit.sent = Arc::new(sent);
    fit.cache = Py::new(py, CacheReport { inner: report })?;
    Ok(())
}
