//! Hugging Face chat templates, rendered in Rust with MiniJinja set up to render what transformers'
//! jinja2 renders (its `ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)` with
//! the loop-controls extension and its `tojson`, `raise_exception` and `strftime_now`):
//!
//! - `trim_blocks` / `lstrip_blocks`, and a template's final newline dropped (jinja2's default);
//! - `{% break %}` / `{% continue %}` (MiniJinja's `loop_controls`);
//! - Python's str, dict and list methods (`.strip()`, `.items()`, `.startswith()`), from
//!   minijinja-contrib's pycompat;
//! - `tojson` writing exactly what Python's `json.dumps` writes (`pyjson`);
//! - `raise_exception(message)`, an error naming the template's message;
//! - `strftime_now(format)` on a fixed or the current date (`clock`);
//! - jinja2's `int` and `float`, which turn what they cannot read into 0 (`pynum`);
//! - maps in insertion order (MiniJinja's `preserve_order`), so tool schemas print as given;
//! - values printed as Python's `str()` prints them (`pyrepr`: `{'a': True}`, `None`), and
//!   jinja2's `indent` and `is iterable`.
//!
//! Why not bare MiniJinja: measured on 49 real templates × 4 conversations, a bare environment
//! rendered 19 templates identically to jinja2 and this setup 49 (research/open-models-2026-12.md).

pub mod clock;
pub mod pyjson;
pub mod pynum;
pub mod pyrepr;
pub mod track;

use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, Error, ErrorKind};

use crate::error::{CtxError, CtxResult};
use clock::Moment;

const NAME: &str = "chat_template";

/// The most template instructions one render may execute. A real template spends a few hundred
/// per message (Llama 3.1's about 470, estimated from the time a 9,280-message render takes against
/// an exhausted budget), so this allows renders of some 50,000 messages, and refuses a template
/// that would loop for minutes (`{% for i in range(90000) %}{% for j in range(90000) %}…`) with a
/// `TemplateError` within about a second: a render cannot be interrupted, and must not hang.
pub const FUEL: u64 = 25_000_000;

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    source: String,
}

fn tojson(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let mut opts = pyjson::Options::default();
    if let Some(a) = kwargs.get::<Option<bool>>("ensure_ascii")? {
        opts.ensure_ascii = a;
    }
    if let Some(s) = kwargs.get::<Option<bool>>("sort_keys")? {
        opts.sort_keys = s;
    }
    let indent: Option<Value> = kwargs.get("indent")?;
    match indent {
        Some(v) if v.is_none() || v.is_undefined() => {}
        Some(v) if v.as_str().is_some() => opts.indent = v.as_str().map(str::to_string),
        Some(v) => {
            let n = i64::try_from(v).map_err(|_| Error::new(ErrorKind::InvalidOperation, "tojson: indent must be an int or a str"))?;
            opts.indent = Some(" ".repeat(usize::try_from(n.clamp(0, 64)).unwrap_or(0)));
        }
        None => {}
    }
    if opts.indent.is_some() {
        opts.item_sep = ",".into(); // json.dumps' default separators with an indent
    }
    if let Some(seps) = kwargs.get::<Option<Vec<String>>>("separators")? {
        if let [item, key] = seps.as_slice() {
            opts.item_sep = item.clone();
            opts.key_sep = key.clone();
        } else {
            return Err(Error::new(ErrorKind::InvalidOperation, "tojson: separators must be (item, key)"));
        }
    }
    kwargs.assert_all_used()?;
    Ok(Value::from(pyjson::dumps(&value, &opts)?))
}

/// jinja2's `is iterable` is Python's `iter(x)` succeeding: true for str, lists, dicts and
/// undefined (jinja2's Undefined iterates as empty), false for none, bools and numbers. MiniJinja's
/// own test says none is iterable, and templates guard `tools | length` with it.
fn is_iterable(value: &Value) -> bool {
    use minijinja::value::ValueKind;
    match value.kind() {
        ValueKind::None | ValueKind::Bool | ValueKind::Number | ValueKind::Invalid => false,
        ValueKind::Undefined | ValueKind::String | ValueKind::Bytes | ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => true,
        _ => value.try_iter().is_ok(),
    }
}

/// Python's `str.splitlines()`: the line breaks it knows, `\r\n` as one.
fn python_lines(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let is_break = matches!(c, '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{1c}' | '\u{1d}' | '\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}');
        if is_break {
            out.push(&s[start..i]);
            let mut end = i + c.len_utf8();
            if c == '\r' {
                if let Some(&(j, '\n')) = chars.peek() {
                    chars.next();
                    end = j + 1;
                }
            }
            start = end;
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// jinja2's `indent(width=4, first=False, blank=False)`, whose result keeps a final line break
/// (MiniJinja's drops it: `'{\n'|indent(4)` must stay `'{\n'`).
fn indent(value: String, width: Option<Value>, first: Option<bool>, blank: Option<bool>, kwargs: Kwargs) -> Result<String, Error> {
    let width = kwargs.get::<Option<Value>>("width")?.or(width);
    let first = kwargs.get::<Option<bool>>("first")?.or(first).unwrap_or(false);
    let blank = kwargs.get::<Option<bool>>("blank")?.or(blank).unwrap_or(false);
    kwargs.assert_all_used()?;
    let unit = match width {
        Some(w) if w.as_str().is_some() => w.as_str().unwrap_or_default().to_string(),
        Some(w) if w.is_none() || w.is_undefined() => " ".repeat(4),
        Some(w) => " ".repeat(usize::try_from(i64::try_from(w)?.clamp(0, 256)).unwrap_or(0)),
        None => " ".repeat(4),
    };
    let text = format!("{value}\n");
    let lines = python_lines(&text);
    let mut out = if blank {
        lines.join(&format!("\n{unit}"))
    } else {
        let mut rest = lines.iter();
        let mut out = rest.next().map(|l| l.to_string()).unwrap_or_default();
        let tail: Vec<String> = rest.map(|l| if l.is_empty() { String::new() } else { format!("{unit}{l}") }).collect();
        if !tail.is_empty() {
            out.push('\n');
            out.push_str(&tail.join("\n"));
        }
        out
    };
    if first {
        out.insert_str(0, &unit);
    }
    Ok(out)
}

fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, format!("the template raised an exception: {message}")))
}

impl ChatTemplate {
    /// Compiles `source`. `date` fixes what `strftime_now` reads (`YYYY-MM-DD[THH:MM:SS]`); None
    /// reads the clock at each render.
    pub fn new(source: &str, date: Option<&str>) -> CtxResult<Self> {
        let fixed = match date {
            Some(d) => Some(Moment::parse(d).ok_or_else(|| {
                CtxError::invalid(format!("date {d:?} is not a date: write it as YYYY-MM-DD (or YYYY-MM-DDTHH:MM:SS)"))
            })?),
            None => None,
        };
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_keep_trailing_newline(false);
        env.set_fuel(Some(FUEL));
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_test("iterable", is_iterable);
        env.add_filter("indent", indent);
        env.add_filter("int", pynum::int);
        env.add_filter("float", pynum::float);
        // jinja2 prints a value with Python's str(): dicts and lists as their repr, True, None.
        env.set_formatter(|out, _state, value| {
            out.write_str(&pyrepr::str_of(value)?).map_err(|_| Error::new(ErrorKind::WriteFailure, "cannot write the render"))
        });
        env.add_filter("string", |value: Value| -> Result<Value, Error> {
            if value.as_str().is_some() {
                return Ok(value);
            }
            Ok(Value::from(pyrepr::str_of(&value)?))
        });
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", move |format: String| -> Result<Value, Error> {
            Ok(Value::from(fixed.unwrap_or_else(Moment::now).strftime(&format)))
        });
        env.add_template_owned(NAME, without_generation_tags(source)).map_err(|e| template_error("compile", &e, source))?;
        Ok(Self { env, source: source.to_string() })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders with `context` (a JSON object: `messages`, `tools`, `add_generation_prompt`, the
    /// special tokens, and anything else the template reads).
    pub fn render(&self, context: &serde_json::Value) -> CtxResult<String> {
        let t = self.env.get_template(NAME).map_err(|e| template_error("compile", &e, &self.source))?;
        t.render(Value::from_serialize(context)).map_err(|e| template_error("render", &e, &self.source))
    }

    /// Renders `messages` (map values) with the rest of the context in `base`, and says where
    /// each message begins in the output (`track`).
    pub fn render_messages(&self, base: &[(String, Value)], messages: &[Value]) -> CtxResult<(String, Vec<usize>)> {
        let t = self.env.get_template(NAME).map_err(|e| template_error("compile", &e, &self.source))?;
        let tracked = track::TrackedMessages::new(messages);
        let pairs = base.iter().filter(|(k, _)| k != "messages").cloned();
        let ctx: Value = pairs.chain(std::iter::once(("messages".to_string(), tracked.values.clone()))).collect();
        track::render_tracked(&t, ctx, &tracked).map_err(|e| template_error("render", &e, &self.source))
    }

    /// The names the template reads that it does not set itself (`messages`, `tools`, ...).
    pub fn variables(&self) -> Vec<String> {
        match self.env.get_template(NAME) {
            Ok(t) => {
                let mut v: Vec<String> = t.undeclared_variables(false).into_iter().collect();
                v.sort();
                v
            }
            Err(_) => Vec::new(),
        }
    }
}

/// transformers' `{% generation %}…{% endgeneration %}` (its assistant-mask extension) renders its
/// body as is; MiniJinja has no such tag, so each becomes an always-true `if` with the same
/// whitespace markers, which renders the same.
fn without_generation_tags(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(at) = rest.find("{%") {
        out.push_str(&rest[..at]);
        let tag = &rest[at..];
        // The tag closes at the first `%}` after its `{%` (`{%}` is not a closed tag).
        let Some(end) = tag.get(2..).and_then(|t| t.find("%}")).map(|e| e + 2) else {
            out.push_str(tag);
            return out;
        };
        let inner = &tag[2..end];
        let (lead, body) = inner.strip_prefix(['-', '+']).map_or(("", inner), |b| (&inner[..1], b));
        let (body, trail) = body.strip_suffix(['-', '+']).map_or((body, ""), |b| (b, &body[b.len()..]));
        match body.trim() {
            "generation" => out.push_str(&format!("{{%{lead} if true {trail}%}}")),
            "endgeneration" => out.push_str(&format!("{{%{lead} endif {trail}%}}")),
            _ => out.push_str(&tag[..end + 2]),
        }
        rest = &tag[end + 2..];
    }
    out.push_str(rest);
    out
}

/// A template error as the one core error, with MiniJinja's line and the template's own message.
fn template_error(stage: &str, e: &Error, source: &str) -> CtxError {
    let text = |l: usize| source.lines().nth(l.saturating_sub(1)).map(str::trim).unwrap_or("");
    let line = e.line().map(|l| format!(" (line {l}: {:?})", crate::fmt::clip(text(l), 80))).unwrap_or_default();
    let detail = e.detail().map(str::to_string).unwrap_or_else(|| e.kind().to_string());
    CtxError::Template(format!("chat template failed to {stage}{line}: {detail}"))
}

#[cfg(test)]
mod tests;
