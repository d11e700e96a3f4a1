//! `_fit_chat_fast`: `ctxfast.openai.fit_messages` in one crossing, for the payloads people
//! actually send. It reads the message dicts here (role, text content or text parts, name,
//! refusal, tool calls and their ids), applies the unit rule and the pairing check of
//! `payload::chat`, and fits through `records::fit_columns`.
//!
//! It accepts only what it reads exactly. Anything else (an image or audio part, a legacy
//! `function_call`, a field it does not know, a non-str value, a lone surrogate, a pairing the
//! full reader would refuse) returns None, and the Python reader (`openai.py`) does the request,
//! with its own error messages. So this path never words an error about the payload, and the two
//! paths agree wherever this one answers: `tests/test_fast_path.py` holds them to it.

use std::borrow::Cow;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::cache_plan::CacheArgs;
use super::records::{fit_columns, About, Columns, Rebuild, Record};
use crate::engine::{Layer, ToolCall};
use crate::payload::chat::{pairs_hold, units, Role};
use crate::payload::framing::OPENAI_CHAT;

/// One message as read: its strings (Python's, borrowed), framing, role and tool facts.
struct Read<'py> {
    strings: Vec<Bound<'py, PyString>>,
    framing: usize,
    role: Role,
    /// The index in `strings` of its longest text (content or a text part), if it has one.
    main: Option<usize>,
    /// Its content is a str (the only content the tool namespace's line feed is added to).
    plain: bool,
    call: Option<(usize, usize)>,
    call_ids: Vec<Bound<'py, PyString>>,
    result_id: Option<Bound<'py, PyString>>,
}

fn exact_str<'py>(v: &Bound<'py, PyAny>) -> Option<Bound<'py, PyString>> {
    v.cast::<PyString>().ok().filter(|s| s.is_exact_instance_of::<PyString>()).cloned()
}

fn role_of(v: &Bound<'_, PyAny>) -> Option<Role> {
    match exact_str(v)?.to_str().ok()? {
        "system" | "developer" => Some(Role::System),
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        "tool" => Some(Role::Tool),
        _ => None,
    }
}

/// The content field's strings (a str, or text and refusal parts), and the longest text's place.
fn content<'py>(v: &Bound<'py, PyAny>, out: &mut Vec<Bound<'py, PyString>>) -> Option<Option<usize>> {
    let py = v.py();
    if v.is_none() {
        return Some(None);
    }
    if let Some(s) = exact_str(v) {
        out.push(s);
        return Some(Some(out.len() - 1));
    }
    let parts = v.cast::<PyList>().ok()?;
    let mut best: Option<(usize, usize)> = None; // (index in out, characters)
    for part in parts.iter() {
        let part = part.cast::<PyDict>().ok()?.clone();
        let kind = exact_str(&part.get_item(intern!(py, "type")).ok()??)?;
        let kind = kind.to_str().ok()?;
        if kind != "text" && kind != "refusal" {
            return None;
        }
        let key = if kind == "text" { intern!(py, "text") } else { intern!(py, "refusal") };
        let value = exact_str(&part.get_item(key).ok()??)?;
        let chars = value.len().ok()?;
        out.push(value);
        if kind == "text" && best.is_none_or(|(_, n)| chars > n) {
            best = Some((out.len() - 1, chars));
        }
    }
    Some(best.map(|(i, _)| i))
}

fn tool_calls<'py>(v: &Bound<'py, PyAny>, read: &mut Read<'py>) -> Option<()> {
    let py = v.py();
    if v.is_none() {
        return Some(());
    }
    for call in v.cast::<PyList>().ok()?.iter() {
        let call = call.cast::<PyDict>().ok()?.clone();
        let mut function = None;
        for (k, value) in call.iter() {
            match exact_str(&k)?.to_str().ok()? {
                "id" if value.is_none() => {}
                "id" => read.call_ids.push(exact_str(&value)?),
                "type" => {}
                "function" => function = Some(value.cast::<PyDict>().ok()?.clone()),
                _ => return None,
            }
        }
        let function = function?;
        if function.len() != 2 {
            return None;
        }
        let name = exact_str(&function.get_item(intern!(py, "name")).ok()??)?;
        let arguments = exact_str(&function.get_item(intern!(py, "arguments")).ok()??)?;
        read.strings.push(name);
        read.strings.push(arguments);
        read.call = read.call.or(Some((read.strings.len() - 2, read.strings.len() - 1)));
        read.framing += OPENAI_CHAT.per_tool_call;
    }
    Some(())
}

fn message<'py>(m: &Bound<'py, PyAny>) -> Option<Read<'py>> {
    let m = m.cast::<PyDict>().ok()?;
    let role_value = m.get_item(intern!(m.py(), "role")).ok()??;
    let role = role_of(&role_value)?;
    let mut read = Read {
        strings: Vec::with_capacity(4),
        framing: OPENAI_CHAT.per_message,
        role,
        main: None,
        plain: false,
        call: None,
        call_ids: Vec::new(),
        result_id: None,
    };
    let (mut name, mut refusal, mut calls, mut result) = (None, None, None, None);
    for (k, value) in m.iter() {
        match exact_str(&k)?.to_str().ok()? {
            "role" => {}
            "content" => {
                read.plain = value.is_exact_instance_of::<PyString>();
                read.main = content(&value, &mut read.strings)?;
            }
            "name" => name = Some(value),
            "refusal" => refusal = Some(value),
            "tool_calls" => calls = Some(value),
            "tool_call_id" => result = Some(value),
            _ => return None,
        }
    }
    read.strings.push(exact_str(&role_value)?);
    for (field, extra) in [(name, OPENAI_CHAT.per_name), (refusal, 0)] {
        match field {
            Some(v) if v.is_truthy().ok()? => {
                read.strings.push(exact_str(&v)?);
                read.framing += extra;
            }
            Some(v) if !v.is_none() && exact_str(&v).is_none() => return None,
            _ => {}
        }
    }
    if let Some(c) = calls {
        tool_calls(&c, &mut read)?;
    }
    match result {
        Some(v) if !v.is_none() => {
            let id = exact_str(&v)?;
            if role == Role::Tool {
                read.result_id = Some(id);
            }
        }
        _ => {}
    }
    if role != Role::Assistant {
        read.call_ids.clear(); // only an assistant's calls are calls (as the full reader pairs them)
    }
    Some(read)
}

/// Fits a Chat Completions message list, or returns None for the Python reader to do it (see the
/// module docstring). `schema` holds the tool schemas' strings as the adapter rendered them, and
/// `schema_tokens` their constant tokens: `(alone, sharing)`, without a system message and with
/// one (the namespace then joins it). `previous` and `cache` are `fit_messages`'s (the default
/// profile is OpenAI's).
#[pyfunction]
#[pyo3(signature = (messages, schema, schema_tokens, budget, policy=None, tokenizer=None, *, pin_first_user=false, previous=None, cache=None))]
#[allow(clippy::too_many_arguments)]
pub fn _fit_chat_fast(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    schema: &Bound<'_, PyList>,
    schema_tokens: (usize, usize),
    budget: &Bound<'_, PyAny>,
    policy: Option<&Bound<'_, PyAny>>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    pin_first_user: bool,
    previous: Option<&Bound<'_, PyAny>>,
    cache: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Rebuild>> {
    let about = About { cache: CacheArgs::read(previous, cache, "openai")?, provider: Some("openai".into()), exactness: None, breakpoints: Vec::new() };
    let Ok(list) = messages.cast::<PyList>() else { return Ok(None) };
    if list.is_empty() {
        return Ok(None);
    }
    let mut schema_strs = Vec::with_capacity(schema.len());
    for s in schema.iter() {
        match exact_str(&s) {
            Some(s) => schema_strs.push(s),
            None => return Ok(None),
        }
    }
    let mut reads = Vec::with_capacity(list.len());
    for m in list.iter() {
        match message(&m) {
            Some(r) => reads.push(r),
            None => return Ok(None),
        }
    }
    let roles: Vec<Role> = reads.iter().map(|r| r.role).collect();
    let makes_calls: Vec<bool> = reads.iter().map(|r| r.call.is_some()).collect();
    let u = units(&roles, &makes_calls, pin_first_user);
    let has_system = roles.contains(&Role::System);
    // The tool namespace joins the first system message, whose text then ends in a line feed.
    let padded = if !schema.is_empty() && has_system { roles.iter().position(|r| *r == Role::System) } else { None };
    let mut strings: Vec<Cow<'_, str>> = Vec::with_capacity(reads.iter().map(|r| r.strings.len()).sum::<usize>() + 4);
    let (mut ends, mut extra, mut records) = (Vec::new(), Vec::new(), Vec::with_capacity(reads.len()));
    let (mut calls, mut results) = (Vec::new(), Vec::new());
    for (i, r) in reads.iter().enumerate() {
        let at = strings.len();
        for s in &r.strings {
            match s.to_str() {
                Ok(t) => strings.push(Cow::Borrowed(t)),
                Err(_) => return Ok(None), // a lone surrogate: the full reader names where
            }
        }
        let text_of = |k: usize| strings.get(at + k).map(|t| t.to_string()).unwrap_or_default();
        let text = r.main.map(text_of).unwrap_or_default();
        let call = r.call.map(|(n, a)| ToolCall { step: None, tool: Some(text_of(n)), arguments: Some(text_of(a)) });
        // Only a str content is padded (it is then the message's first string); the record's text
        // stays the caller's (a system message is never cut).
        if Some(i) == padded && r.plain {
            if let Some(first) = strings.get_mut(at) {
                first.to_mut().push('\n');
            }
        }
        for id in &r.call_ids {
            let Ok(id) = id.to_str() else { return Ok(None) };
            calls.push((i, id));
        }
        if let Some(id) = &r.result_id {
            let Ok(id) = id.to_str() else { return Ok(None) };
            results.push((i, id));
        }
        records.push(Record { text, group: u.groups.get(i).and_then(Option::as_deref).map(Into::into), call });
        ends.push(strings.len());
        extra.push(r.framing);
    }
    if !pairs_hold(&calls, &results, &u.groups) {
        return Ok(None);
    }
    for s in &schema_strs {
        match s.to_str() {
            Ok(t) => strings.push(Cow::Borrowed(t)),
            Err(_) => return Ok(None),
        }
    }
    ends.push(strings.len());
    extra.push(if has_system { schema_tokens.1 } else { schema_tokens.0 });
    ends.push(strings.len());
    extra.push(OPENAI_CHAT.reply_priming);
    let mut layers: Vec<Layer> = u.layers;
    layers.extend([Layer::Tools, Layer::System]);
    let labels = vec!["<tool schemas>".to_string(), "<reply priming>".to_string()];
    let framing = OPENAI_CHAT.per_message + 1; // a digest is a user message: framing + its role
    let cols = Columns { strings, ends, extra, layers, records, labels, framing };
    fit_columns(py, cols, budget, policy, tokenizer, "messages", about).map(Some)
}
