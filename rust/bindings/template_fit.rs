//! `_fit_template`: the open-model adapter's one crossing (`ctxfast.chat.fit_messages`). Python
//! reads the messages' roles, exchange groups, pairing and shortenable texts; this converts the
//! messages for the template once (tool-call arguments parsed from their JSON strings, as vLLM
//! does before rendering), prices, fits and checks the rendered prompt in the core
//! (`payload::rendered`), and hands back what the adapter rebuilds the caller's list from.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value as Json;

use super::args;
use super::budget::Budget;
use super::cache_plan::{attach, CacheArgs};
use super::counting::{resolve_tokenizer, with_source};
use super::errors::InvalidArgumentError;
use super::layer::layer_arg;
use super::outcome::Fit;
use super::outcome_build::{build_fit, Originals, RecordMeta};
use super::policy::policy_arg;
use super::pyvalue::to_json;
use super::records::{list, signed_index, tool_call};
use super::template::ChatTemplate;
use crate::engine::SegmentData;
use crate::payload::rendered::{Request, HEAD, TOOLS};
use crate::payload::rendered_cache::fit_rendered_planned;
use crate::payload::prefix;
use crate::payload::rendered_plan::Sent;
use crate::tokenize::specials::Splitter;

/// `(order, digests, cuts, fit, control_tokens)`: as `_fit_records` (a message whose `cuts`
/// entry is set is sent with that content: shortened, or with digests merged into it), plus the
/// messages whose content holds an added token, `(index, token)`.
pub type TemplateRebuild = (Vec<i64>, Vec<String>, HashMap<usize, String>, Fit, Vec<(usize, String)>);

/// Parses each `tool_calls[k].function.arguments` string into the object the template prints.
fn parse_arguments(messages: &mut [Json], input_name: &str) -> PyResult<()> {
    for (i, m) in messages.iter_mut().enumerate() {
        let Some(calls) = m.get_mut("tool_calls").and_then(Json::as_array_mut) else { continue };
        for (k, call) in calls.iter_mut().enumerate() {
            let Some(arguments) = call.get_mut("function").and_then(|f| f.get_mut("arguments")) else { continue };
            if let Json::String(text) = arguments {
                let parsed: Json = serde_json::from_str(text).map_err(|e| {
                    InvalidArgumentError::new_err(format!(
                        "{input_name}[{i}].tool_calls[{k}].function.arguments is not JSON ({e}); the server parses it \
                         before rendering, and would refuse the request"
                    ))
                })?;
                *arguments = parsed;
            }
        }
    }
    Ok(())
}

/// Fits an open model's request by its rendered chat template (private; `chat.fit_messages`).
///
/// - messages: the caller's list of message dicts, as the template reads them.
/// - layers / groups / texts / calls: per message, its PromptLayer, exchange group, the
///   `content` string a rung may shorten ("" for none) and its first tool call or None.
/// - context: every other template variable (`tools`, `add_generation_prompt`, special tokens,
///   the caller's keywords).
#[pyfunction]
#[pyo3(signature = (template, messages, layers, groups, texts, calls, context, budget, policy=None, tokenizer=None, *, input_name="messages", previous=None, cache=None))]
#[allow(clippy::too_many_arguments)]
pub fn _fit_template(
    py: Python<'_>,
    template: &Bound<'_, ChatTemplate>,
    messages: &Bound<'_, PyAny>,
    layers: &Bound<'_, PyAny>,
    groups: &Bound<'_, PyAny>,
    texts: &Bound<'_, PyAny>,
    calls: &Bound<'_, PyAny>,
    context: &Bound<'_, PyDict>,
    budget: &Bound<'_, PyAny>,
    policy: Option<&Bound<'_, PyAny>>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    input_name: &str,
    previous: Option<&Bound<'_, PyAny>>,
    cache: Option<&Bound<'_, PyAny>>,
) -> PyResult<TemplateRebuild> {
    let cached = CacheArgs::read(previous, cache, "llama.cpp")?;
    let (layers, groups, texts, calls) =
        (list(layers, "layers", None)?, list(groups, "groups", None)?, list(texts, "texts", None)?, list(calls, "calls", None)?);
    let mut json = match to_json(messages, input_name)? {
        Json::Array(items) => items,
        _ => return Err(args::wrong_type(messages, input_name, "a list")),
    };
    let n = json.len();
    if n == 0 {
        return Err(InvalidArgumentError::new_err(format!("argument '{input_name}' is empty: there is no request to fit")));
    }
    if [layers.len(), groups.len(), texts.len(), calls.len()].iter().any(|&l| l != n) {
        return Err(InvalidArgumentError::new_err(format!("layers, groups, texts and calls must have one item per message ({n})")));
    }
    parse_arguments(&mut json, input_name)?;
    let mut segments = Vec::with_capacity(n + 2);
    for i in 0..n {
        let text = texts.get_item(i)?;
        let text = text.cast::<PyString>().map_err(|_| args::wrong_type(&text, &format!("texts[{i}]"), "str"))?;
        let mut d = SegmentData::new(text.to_str()?, layer_arg(&layers.get_item(i)?, &format!("layers[{i}]"))?);
        let group = groups.get_item(i)?;
        d.group = if group.is_none() { None } else { Some(args::text(&group, &format!("groups[{i}]"))?.into()) };
        d.set_tool(tool_call(&calls.get_item(i)?, &format!("calls[{i}]"))?);
        segments.push(d);
    }
    let mut ctx = Vec::new();
    let mut has_tools = false;
    for (k, v) in template.get().special_tokens_pairs() {
        ctx.push((k.clone(), minijinja::Value::from(v.as_str())));
    }
    for (k, v) in context.iter() {
        let key = args::text(&k, "context")?.to_string();
        let value = to_json(&v, &key)?;
        if key == "tools" {
            has_tools = !value.is_null();
        }
        ctx.retain(|(name, _)| *name != key);
        ctx.push((key, minijinja::Value::from_serialize(&value)));
    }
    let budget = budget.cast::<Budget>().map_err(|_| args::wrong_type(budget, "budget", "a ctxfast.Budget"))?;
    let policy = policy_arg(py, policy, "agent")?;
    let tok = resolve_tokenizer(py, tokenizer)?;
    let tok = tok.get();
    let none = Splitter::none();
    let counter = tok.native_counter().cloned();
    let core_template = template.get().core();
    let req = Request {
        template: &core_template,
        context: ctx,
        has_tools,
        messages: json,
        segments,
        input_name: input_name.to_string(),
    };
    let (budget_ref, policy_ref) = (&budget.get().inner, &policy.get().inner);
    let done = with_source(py, tok, n.saturating_mul(64), |src| {
        let splitter = counter.as_ref().map_or(&none, |c| c.splitter());
        let previous = cached.previous.as_deref();
        fit_rendered_planned(req, budget_ref, policy_ref, src, splitter, counter.as_deref(), previous, &cached.profile, cached.asked)
    })?;
    let (done, sent, report) = done;
    let mut order = Vec::with_capacity(done.sent.len());
    let mut cuts = HashMap::new();
    for s in &done.sent {
        match s {
            Sent::Message { index, content } => {
                order.push(signed_index(*index));
                if let Some(text) = content {
                    cuts.insert(*index, text.clone());
                }
            }
            Sent::Digest { digest } => order.push(-signed_index(*digest) - 1),
        }
    }
    let digests = done.outcome.digests.iter().map(|d| d.text.clone()).collect();
    let mut metas: Vec<RecordMeta> = (0..n).map(RecordMeta::Index).collect();
    metas.push(RecordMeta::Fixed(HEAD.to_string()));
    if done.segments.len() > n + 1 {
        metas.push(RecordMeta::Fixed(TOOLS.to_string()));
    }
    let originals = Originals::records(done.segments, metas);
    let mut fit = build_fit(py, originals, policy_ref, tok.counter_id(), done.outcome)?;
    attach(py, &mut fit, sent, report)?;
    fit.provider = Some("chat".into());
    if !tok.is_exact() {
        fit.exactness = "estimate".into();
    }
    fit.prompt = Some(done.prompt);
    Ok((order, digests, cuts, fit, done.control_tokens))
}

/// Tokens two rendered prompts share from their start: what a server's prompt cache reuses
/// from `previous` when `current` is sent (private; `chat.reusable_prefix`).
#[pyfunction]
pub fn _reusable_prefix(py: Python<'_>, previous: &Bound<'_, PyAny>, current: &Bound<'_, PyAny>, tokenizer: &Bound<'_, PyAny>) -> PyResult<usize> {
    let (previous, current) = (args::text(previous, "previous")?.to_string(), args::text(current, "current")?.to_string());
    let tok = resolve_tokenizer(py, Some(tokenizer))?;
    let Some(counter) = tok.get().native_counter().cloned() else {
        return Err(crate::error::CtxError::Unsupported(
            "reusable_prefix needs a Tokenizer (it compares token ids), not a callable".into(),
        )
        .into());
    };
    let size = previous.len().saturating_add(current.len());
    Ok(super::gil::run(py, super::gil::Work::Bytes(size), || prefix::reusable_prefix(&counter, &previous, &current))?)
}
