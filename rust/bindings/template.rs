//! `ctxfast.ChatTemplate`: a Hugging Face chat template, compiled once and rendered in Rust
//! (`crate::template`) as transformers' `apply_chat_template(tokenize=False)` renders it.

use std::path::Path;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{Map, Value};

use super::args;
use super::errors::{file_error, FileKind, InvalidArgumentError, TokenizerLoadError};
use super::gil::{self, Work};
use super::pyvalue::to_json;
use crate::template::ChatTemplate as Core;

/// The special tokens `tokenizer_config.json` names, which transformers hands every template.
const SPECIAL: [&str; 7] = ["bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"];

/// A Hugging Face chat template, compiled once, rendered as transformers renders it.
///
/// ChatTemplate(source, *, date=None, special_tokens=None): `source` is the Jinja text; `date`
/// (`"YYYY-MM-DD"`) fixes what `strftime_now` prints; `special_tokens` (`{"bos_token": ...}`) are
/// passed to every render.
#[pyclass(frozen, module = "ctxfast._core", name = "ChatTemplate")]
pub struct ChatTemplate {
    inner: Arc<Core>,
    special: Vec<(String, String)>,
    origin: Option<String>,
}

fn token_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => m.get("content").and_then(|c| c.as_str()).map(str::to_string),
        _ => None,
    }
}

/// A `tokenizer_config.json`, parsed, and the special tokens it names.
fn config_tokens(text: &str, where_: &str) -> PyResult<(Value, Vec<(String, String)>)> {
    let config: Value = serde_json::from_str(text)
        .map_err(|e| TokenizerLoadError::new_err(format!("{where_}: not JSON ({e})")))?;
    let special = SPECIAL
        .iter()
        .filter_map(|k| config.get(*k).and_then(token_text).map(|t| (k.to_string(), t)))
        .collect();
    Ok((config, special))
}

/// The template source of a `tokenizer_config.json` (one string, or a list of named templates:
/// `name`, else "default") and its special tokens.
fn from_config(text: &str, where_: &str, name: Option<&str>) -> PyResult<(String, Vec<(String, String)>)> {
    let (config, special) = config_tokens(text, where_)?;
    let source = match config.get("chat_template") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(list)) => {
            let want = name.unwrap_or("default");
            let names: Vec<&str> = list.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect();
            list.iter()
                .find(|t| t.get("name").and_then(Value::as_str) == Some(want))
                .and_then(|t| t.get("template").and_then(Value::as_str))
                .map(str::to_string)
                .ok_or_else(|| {
                    InvalidArgumentError::new_err(format!(
                        "{where_} has no chat template named {want:?} (it has: {})",
                        names.join(", ")
                    ))
                })?
        }
        _ => return Err(InvalidArgumentError::new_err(format!("{where_} has no 'chat_template'"))),
    };
    Ok((source, special))
}

fn read(path: &Path) -> PyResult<String> {
    std::fs::read_to_string(path).map_err(|e| file_error(&path.display().to_string(), &e, FileKind::Template))
}

impl ChatTemplate {
    /// The compiled template, shared.
    pub fn core(&self) -> Arc<Core> {
        self.inner.clone()
    }

    /// The special tokens every render receives, as `(name, text)`.
    pub fn special_tokens_pairs(&self) -> &[(String, String)] {
        &self.special
    }

    fn build(source: &str, date: Option<&str>, special: Vec<(String, String)>, origin: Option<String>) -> PyResult<Self> {
        Ok(Self { inner: Arc::new(Core::new(source, date)?), special, origin })
    }
}

#[pymethods]
impl ChatTemplate {
    #[new]
    #[pyo3(signature = (source, *, date=None, special_tokens=None))]
    fn new(source: &Bound<'_, PyAny>, date: Option<&Bound<'_, PyAny>>, special_tokens: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let source = args::text(source, "source")?;
        let date = date.filter(|d| !d.is_none()).map(|d| args::text(d, "date")).transpose()?;
        let mut special = Vec::new();
        if let Some(tokens) = special_tokens {
            for (k, v) in tokens.iter() {
                special.push((args::text(&k, "special_tokens")?.to_string(), args::text(&v, "special_tokens")?.to_string()));
            }
        }
        Self::build(source, date, special, None)
    }

    /// A template from a file: a `chat_template.jinja`, a `tokenizer_config.json` (its
    /// `chat_template`, the one named `name` when it holds several, and its special tokens), or a
    /// model folder holding either.
    #[staticmethod]
    #[pyo3(signature = (path, *, name=None, date=None))]
    fn from_file(path: &Bound<'_, PyAny>, name: Option<&str>, date: Option<&str>) -> PyResult<Self> {
        let p = args::path(path, "path")?;
        let path = Path::new(&p);
        let (mut source, mut special) = (None, Vec::new());
        let config = if path.is_dir() { Some(path.join("tokenizer_config.json")) } else { None };
        if path.is_dir() {
            let jinja = path.join("chat_template.jinja");
            if jinja.is_file() {
                source = Some(read(&jinja)?);
            }
        } else if p.ends_with(".json") {
            let (s, t) = from_config(&read(path)?, &p, name)?;
            (source, special) = (Some(s), t);
        } else {
            source = Some(read(path)?);
        }
        if let Some(cfg) = config.filter(|c| c.is_file()) {
            let where_ = cfg.display().to_string();
            let text = read(&cfg)?;
            match &source {
                // A config without a template (the template is the .jinja file) still names
                // the special tokens the template prints (`bos_token`).
                Some(_) => special = config_tokens(&text, &where_)?.1,
                None => (source, special) = from_config(&text, &where_, name).map(|(s, t)| (Some(s), t))?,
            }
        }
        let source = source.ok_or_else(|| {
            InvalidArgumentError::new_err(format!("{p}: no chat_template.jinja or tokenizer_config.json in this folder"))
        })?;
        Self::build(&source, date, special, Some(p.clone()))
    }

    /// Renders `messages` as the server renders them: `tools`, `add_generation_prompt`, the
    /// special tokens and any other keyword (`date_string`, `enable_thinking`, ...) are passed
    /// to the template, as transformers' `apply_chat_template(tokenize=False)` passes them.
    #[pyo3(signature = (messages, tools=None, add_generation_prompt=true, **kwargs))]
    fn render(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        tools: Option<&Bound<'_, PyAny>>,
        add_generation_prompt: bool,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<String> {
        let mut ctx = Map::new();
        for (k, v) in &self.special {
            ctx.insert(k.clone(), Value::String(v.clone()));
        }
        ctx.insert("messages".into(), to_json(messages, "messages")?);
        ctx.insert("tools".into(), match tools {
            Some(t) if !t.is_none() => to_json(t, "tools")?,
            _ => Value::Null,
        });
        ctx.insert("documents".into(), Value::Null);
        ctx.insert("add_generation_prompt".into(), Value::Bool(add_generation_prompt));
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let key = args::text(&k, "keyword")?.to_string();
                let value = to_json(&v, &key)?;
                ctx.insert(key, value);
            }
        }
        let ctx = Value::Object(ctx);
        let inner = self.inner.clone();
        let size = inner.source().len();
        Ok(gil::run(py, Work::Bytes(size.saturating_mul(4)), || inner.render(&ctx))?)
    }

    /// The template's Jinja text.
    #[getter]
    fn source(&self) -> &str {
        self.inner.source()
    }

    /// The special tokens every render receives (`{"bos_token": "<|begin_of_text|>", ...}`).
    #[getter]
    fn special_tokens<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in &self.special {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// The names the template reads from its context (`messages`, `tools`, `bos_token`, ...).
    #[getter]
    fn variables(&self) -> Vec<String> {
        self.inner.variables()
    }

    fn __repr__(&self) -> String {
        match &self.origin {
            Some(p) => format!("ChatTemplate.from_file({p:?})"),
            None => format!("ChatTemplate(<{} characters>)", self.inner.source().chars().count()),
        }
    }
}
