//! `_fit_records`: the provider adapters' one crossing. An adapter reads its provider's messages
//! into columns (the strings each message sends, its framing, layer, exchange group, the one
//! text a ladder may shorten or preview, its tool call) plus the parts that are always sent
//! (tool schemas, reply priming); this counts every string in one batch, fits once, and hands
//! back what the adapter needs to rebuild the caller's payload: which records are sent, in
//! order, the digests' texts, the shortened texts, and the `Fit`, whose `Segment` objects are
//! only made if the caller reads `Fit.kept` / `evicted` / `truncated`.

use std::borrow::Cow;
use std::collections::HashMap;

use compact_str::CompactString;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use crate::hash::xxh3_64_with_seed;

use super::args;
use super::budget::Budget;
use super::cache_plan::{attach, CacheArgs};
use super::counting::{resolve_tokenizer, with_source};
use super::errors::InvalidArgumentError;
use super::layer::layer_arg;
use super::outcome::Fit;
use super::outcome_build::{build_fit, Originals, RecordMeta};
use super::policy::policy_arg;
use super::tokenizer_batch::joined_items;
use crate::engine::cache::{fit_planned, settle, Sent};
use crate::engine::{self, FitOptions, InputNames, Kept, Layer, SegmentData, ToolCall};
use crate::limits::{add_total, check_count, checked_total};

/// `(order, digests, cuts, fit)`: `order` lists what is sent, a record's index, or `-(d + 1)` for
/// digest `d` (whose text is `digests[d]`); `cuts` maps a shortened record to its new text.
/// The reply priming's label: the one fixed part the provider renders after the messages.
const PRIMING: &str = "<reply priming>";
/// The label of the part a `Calibration` adds for its learnt offset (`ctxfast.calibration`).
const CALIBRATION: &str = "<calibration>";

pub type Rebuild = (Vec<i64>, Vec<String>, HashMap<usize, String>, Fit);

pub fn list<'py>(obj: &Bound<'py, PyAny>, arg: &str, len: Option<usize>) -> PyResult<Bound<'py, PyList>> {
    let l = obj.cast::<PyList>().map_err(|_| args::wrong_type(obj, arg, "a list"))?.clone();
    match len {
        Some(n) if l.len() != n => {
            Err(InvalidArgumentError::new_err(format!("argument '{arg}' has {} items, expected {n}", l.len())))
        }
        _ => Ok(l),
    }
}

fn counts_of(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Vec<usize>> {
    let l = list(obj, arg, None)?;
    l.iter().enumerate().map(|(i, v)| args::count_arg(&v, &format!("{arg}[{i}]"))).collect()
}

pub fn tool_call(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Option<ToolCall>> {
    if obj.is_none() {
        return Ok(None);
    }
    let t = obj.cast::<PyTuple>().map_err(|_| args::wrong_type(obj, arg, "None or a (name, arguments) tuple"))?;
    if t.len() != 2 {
        return Err(args::wrong_type(obj, arg, "None or a (name, arguments) tuple"));
    }
    let (name, arguments) = (t.get_item(0)?, t.get_item(1)?);
    Ok(Some(ToolCall {
        step: None,
        tool: Some(args::text(&name, arg)?.to_string()),
        arguments: if arguments.is_none() { None } else { Some(args::text(&arguments, arg)?.to_string()) },
    }))
}

/// Counts, fits and returns what the adapter rebuilds from (private; the adapters' entry).
///
/// - strings: every string sent, the records' then the fixed parts', in order.
/// - ends: per part (records, then fixed parts), where its strings end in `strings`.
/// - extra: per part, the tokens it costs beyond its strings (framing, image estimates).
/// - layers: per part, a PromptLayer.
/// - groups / texts / calls: per record, its exchange group, its one shortenable text ("" for
///   none) and its tool call as `(name, arguments)` or None.
/// - labels: per fixed part, its label (`"<tool schemas>"`); a part that costs 0 is left out.
/// - previous / cache: as `ctxfast.fit`'s; `cache_default` is the adapter's provider's profile.
/// - provider / exactness: what `Fit.provider` and `Fit.exactness` say.
/// - breakpoints: the parts (indices as `ends`') whose end carries a cache breakpoint
///   (Anthropic `cache_control`), for the cache report.
#[pyfunction]
#[pyo3(signature = (strings, ends, extra, layers, groups, texts, calls, labels, budget, policy=None, tokenizer=None, *, framing=0, input_name="messages", previous=None, cache=None, cache_default="none", provider=None, exactness=None, breakpoints=None))]
#[allow(clippy::too_many_arguments)]
pub fn _fit_records(
    py: Python<'_>,
    strings: &Bound<'_, PyAny>,
    ends: &Bound<'_, PyAny>,
    extra: &Bound<'_, PyAny>,
    layers: &Bound<'_, PyAny>,
    groups: &Bound<'_, PyAny>,
    texts: &Bound<'_, PyAny>,
    calls: &Bound<'_, PyAny>,
    labels: &Bound<'_, PyAny>,
    budget: &Bound<'_, PyAny>,
    policy: Option<&Bound<'_, PyAny>>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    framing: usize,
    input_name: &str,
    previous: Option<&Bound<'_, PyAny>>,
    cache: Option<&Bound<'_, PyAny>>,
    cache_default: &str,
    provider: Option<String>,
    exactness: Option<String>,
    breakpoints: Option<Vec<usize>>,
) -> PyResult<Rebuild> {
    let framing = check_count(framing, "argument 'framing'")?;
    let cache = CacheArgs::read(previous, cache, cache_default)?;
    let about = About { cache, provider, exactness: exactness_arg(exactness)?, breakpoints: breakpoints.unwrap_or_default() };
    let groups = list(groups, "groups", None)?;
    let records = groups.len();
    let texts = list(texts, "texts", Some(records))?;
    let calls = list(calls, "calls", Some(records))?;
    let labels = list(labels, "labels", None)?;
    let parts = records + labels.len();
    let ends = counts_of(ends, "ends")?;
    let extra = counts_of(extra, "extra")?;
    let layers = list(layers, "layers", Some(parts))?;
    if ends.len() != parts || extra.len() != parts {
        return Err(InvalidArgumentError::new_err(format!(
            "arguments 'ends' and 'extra' must have one item per part ({parts}), not {} and {}",
            ends.len(),
            extra.len()
        )));
    }
    let items = args::texts(strings, "strings")?;
    if ends.windows(2).any(|w| w[0] > w[1]) || ends.last().is_some_and(|&e| e != items.len()) {
        return Err(InvalidArgumentError::new_err("argument 'ends' must rise to len(strings)"));
    }
    let joined = joined_items(&items, "strings")?;
    let mut recs = Vec::with_capacity(records);
    for p in 0..records {
        let text = texts.get_item(p)?;
        let text = text.cast::<PyString>().map_err(|_| args::wrong_type(&text, &format!("texts[{p}]"), "str"))?;
        let group = groups.get_item(p)?;
        let group = if group.is_none() { None } else { Some(args::text(&group, &format!("groups[{p}]"))?.into()) };
        let call = tool_call(&calls.get_item(p)?, &format!("calls[{p}]"))?;
        recs.push(Record { text: text.to_str()?.to_string(), group, call });
    }
    let layers = (0..parts).map(|p| layer_arg(&layers.get_item(p)?, &format!("layers[{p}]"))).collect::<PyResult<Vec<_>>>()?;
    let labels = (0..labels.len())
        .map(|k| Ok(args::text(&labels.get_item(k)?, &format!("labels[{k}]"))?.to_string()))
        .collect::<PyResult<Vec<_>>>()?;
    let cols = Columns { strings: joined, ends, extra, layers, records: recs, labels, framing };
    fit_columns(py, cols, budget, policy, tokenizer, input_name, about)
}

/// What a fit is beyond its request: the cache arguments, and what `Fit` says of itself.
pub struct About {
    pub cache: CacheArgs,
    pub provider: Option<String>,
    pub exactness: Option<String>,
    /// Parts (input indices) that end with a cache breakpoint.
    pub breakpoints: Vec<usize>,
}

/// The `exactness` argument: one of the three labels.
pub fn exactness_arg(value: Option<String>) -> PyResult<Option<String>> {
    match value.as_deref() {
        None | Some("exact" | "estimate" | "calibrated") => Ok(value),
        Some(other) => Err(InvalidArgumentError::new_err(format!(
            "argument 'exactness' must be \"exact\", \"estimate\" or \"calibrated\", got {other:?}"
        ))),
    }
}

/// One record: what the ladder may shorten or preview, its exchange group, its tool call.
pub struct Record {
    pub text: String,
    pub group: Option<CompactString>,
    pub call: Option<ToolCall>,
}

/// A request as columns: see `_fit_records` for what each holds.
pub struct Columns<'a> {
    pub strings: Vec<Cow<'a, str>>,
    pub ends: Vec<usize>,
    pub extra: Vec<usize>,
    pub layers: Vec<Layer>,
    pub records: Vec<Record>,
    pub labels: Vec<String>,
    /// What a digest record the ladder makes costs beyond its text (a message's framing).
    pub framing: usize,
}

/// Counts every string in one batch, fits once, and returns what the adapter rebuilds from.
pub fn fit_columns(
    py: Python<'_>,
    cols: Columns<'_>,
    budget: &Bound<'_, PyAny>,
    policy: Option<&Bound<'_, PyAny>>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    input_name: &str,
    about: About,
) -> PyResult<Rebuild> {
    let (records, cols_framing) = (cols.records.len(), cols.framing);
    if records == 0 {
        return Err(InvalidArgumentError::new_err(format!("argument '{input_name}' is empty: there is no request to fit")));
    }
    let budget = budget.cast::<Budget>().map_err(|_| args::wrong_type(budget, "budget", "a ctxfast.Budget"))?;
    let policy = policy_arg(py, policy, "agent")?;
    let tok = resolve_tokenizer(py, tokenizer)?;
    let tok = tok.get();
    let strs: Vec<&str> = cols.strings.iter().map(|t| t.as_ref()).collect();
    let counts = tok.count_strs(py, &strs, true)?;

    let parts = cols.ends.len();
    let mut data: Vec<SegmentData> = Vec::with_capacity(parts);
    let mut metas = Vec::with_capacity(parts);
    let mut costs = Vec::with_capacity(parts);
    let mut fixed_names = Vec::with_capacity(parts);
    let mut fps = Vec::with_capacity(parts);
    let mut flagged = Vec::with_capacity(parts);
    let mut start = 0;
    let mut recs = cols.records.into_iter();
    for p in 0..parts {
        let end = cols.ends[p];
        let cost = checked_total(counts.get(start..end).unwrap_or(&[]).iter().copied(), "a message's strings")?;
        let extra = cols.extra.get(p).copied().unwrap_or(0);
        let cost = check_count(add_total(cost, extra, "a message with its framing")?, "a message's count")?;
        // A part's identity is every string it sends, not only the one a rung may shorten.
        let fp = strs.get(start..end).unwrap_or(&[]).iter().fold(cost as u64, |h, s| xxh3_64_with_seed(s.as_bytes(), h));
        start = end;
        let layer = cols.layers.get(p).copied().unwrap_or(Layer::Conversation);
        let (mut d, meta, fixed) = match (p < records).then(|| recs.next()).flatten() {
            Some(r) => {
                let mut d = SegmentData::new(r.text, layer);
                d.group = r.group;
                d.set_tool(r.call);
                (d, RecordMeta::Index(p), None)
            }
            // A fixed part that costs nothing is left out of the request the ladder sees.
            None if cost == 0 => continue,
            None => {
                let label = cols.labels.get(p - records).cloned().unwrap_or_default();
                (SegmentData::new(label.clone(), layer), RecordMeta::Fixed(label.clone()), Some(label))
            }
        };
        d.tokens = Some(cost);
        data.push(d);
        metas.push(meta);
        costs.push(cost);
        fixed_names.push(fixed);
        fps.push(fp);
        flagged.push(about.breakpoints.contains(&p));
    }
    // What the provider renders ahead of the messages: every fixed part but the reply priming
    // and a calibration's offset (which the server never sees: it goes last, so a new offset
    // changes no item before it).
    let front: Vec<usize> = fixed_names
        .iter()
        .enumerate()
        .filter(|(_, f)| f.as_deref().is_some_and(|l| l != PRIMING && l != CALIBRATION))
        .map(|(i, _)| i)
        .collect();
    let names = InputNames { input: input_name.to_string(), fixed: fixed_names };
    let (budget, policy_ref) = (&budget.get().inner, &policy.get().inner);
    let refs: Vec<&SegmentData> = data.iter().collect();
    let cached = &about.cache;
    let previous = cached.previous.as_deref();
    let opts = FitOptions { framing: cols_framing, names: Some(&names), ..Default::default() };
    let planned = with_source(py, tok, refs.len(), |src| {
        fit_planned(&refs, &costs, &fps, budget, policy_ref, src, &opts, previous, &cached.profile)
    })?;
    let mut out = planned.outcome;
    let rungs = policy_ref.rungs.iter().map(|r| r.name.clone()).collect();
    let marks = Sent::marks(&costs, &front, &out, &flagged);
    let (sent, report) = settle(&mut out, planned.cut, &fps, &costs, &front, rungs, previous, &cached.profile, None, marks, cached.asked);
    let (order, cuts) = kept_order(&out, records);
    let digests = out.digests.iter().map(|d| d.text.clone()).collect();
    let originals = Originals::records(data, metas);
    let mut fit = build_fit(py, originals, policy_ref, tok.counter_id(), out)?;
    attach(py, &mut fit, sent, report)?;
    fit.provider = about.provider;
    fit.exactness = about.exactness.unwrap_or_else(|| if tok.is_exact() { "exact" } else { "estimate" }.into());
    Ok((order, digests, cuts, fit))
}

/// What is sent, as `order` and `cuts` say it (see `Rebuild`): the records kept, whole or
/// shortened, and the digests; the fixed parts (indices `records..`) are the adapter's to send.
pub fn kept_order(out: &engine::FitOutcome, records: usize) -> (Vec<i64>, HashMap<usize, String>) {
    let mut order = Vec::with_capacity(out.kept.len());
    let mut cuts = HashMap::new();
    for k in &out.kept {
        match k {
            Kept::Original(i) if *i < records => order.push(signed_index(*i)),
            Kept::Truncated { index, text, .. } if *index < records => {
                order.push(signed_index(*index));
                cuts.insert(*index, text.clone());
            }
            Kept::Digest { digest } => order.push(-signed_index(*digest) - 1),
            _ => {} // a fixed part
        }
    }
    (order, cuts)
}

/// An index as the signed figure `order` carries: indices are list positions, far below 2^63.
pub fn signed_index(i: usize) -> i64 {
    i64::try_from(i).unwrap_or(i64::MAX)
}
