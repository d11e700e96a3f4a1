//! Argument extraction with messages that name the argument and the value.
//!
//! pyo3's own conversions raise a bare `TypeError`; every public entry point goes through these
//! helpers instead so that all bad input surfaces as a `CtxfastError` subclass.

use std::borrow::Cow;

use compact_str::CompactString;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString};

use super::errors::{ArgumentTypeError, InvalidArgumentError, TextEncodingError};
use crate::limits::check_count;

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A short, safe picture of a value for an error message: its repr cut to 60 characters, or its
/// type when even that fails (an int of 5,000 digits has no str()).
#[cold]
pub fn preview(obj: &Bound<'_, PyAny>) -> String {
    const MAX: usize = 60;
    match obj.repr().and_then(|r| r.to_str().map(str::to_string)) {
        Ok(r) if r.chars().count() <= MAX => r,
        Ok(r) => format!("{}…", r.chars().take(MAX).collect::<String>()),
        Err(_) => format!("a {} that cannot be shown", type_name(obj)),
    }
}

#[cold]
pub fn wrong_type(obj: &Bound<'_, PyAny>, arg: &str, want: &str) -> PyErr {
    ArgumentTypeError::new_err(format!("argument '{arg}' must be {want}, not {}", type_name(obj)))
}

/// A `str` as UTF-8. Lone surrogates cannot be UTF-8 and are refused with their position.
pub fn text<'a>(obj: &'a Bound<'_, PyAny>, arg: &str) -> PyResult<&'a str> {
    let s = obj.cast::<PyString>().map_err(|_| wrong_type(obj, arg, "str"))?;
    s.to_str().map_err(|e| surrogate_error(obj.py(), e, arg, None))
}

/// As `text`, but a surrogate *pair* (`"\ud83d\ude00"` built by hand) is joined into its code
/// point, as tiktoken does; only a lone surrogate is refused. Valid text is borrowed, as `text`.
pub fn text_joined<'a>(obj: &'a Bound<'_, PyAny>, arg: &str) -> PyResult<Cow<'a, str>> {
    let s = obj.cast::<PyString>().map_err(|_| wrong_type(obj, arg, "str"))?;
    match s.to_str() {
        Ok(t) => Ok(Cow::Borrowed(t)),
        Err(e) => join_pairs(s, e, arg, None).map(Cow::Owned),
    }
}

/// `text_joined` for item `index` of the sequence argument `arg`; errors name `arg[index]` and
/// carry the index, so a caller holding the sequence can say which of its own items was bad.
pub fn text_item_joined<'a>(obj: &'a Bound<'_, PyAny>, arg: &str, index: usize) -> PyResult<Cow<'a, str>> {
    let s = obj.cast::<PyString>().map_err(|_| wrong_type(obj, &format!("{arg}[{index}]"), "str"))?;
    match s.to_str() {
        Ok(t) => Ok(Cow::Borrowed(t)),
        Err(e) => join_pairs(s, e, arg, Some(index)).map(Cow::Owned),
    }
}

/// The slow path of `text_joined`, for a str that is not UTF-8: its code points (UTF-32 keeps
/// one unit per code point, so positions are Python's indices), each high-low pair joined.
#[cold]
fn join_pairs(s: &Bound<'_, PyString>, err: PyErr, arg: &str, index: Option<usize>) -> PyResult<String> {
    let py = s.py();
    let units = s.call_method1("encode", ("utf-32-le", "surrogatepass"))?;
    let bytes = units.cast::<PyBytes>()?.as_bytes();
    let mut out = String::with_capacity(bytes.len() / 2);
    let mut units = bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).enumerate().peekable();
    while let Some((i, u)) = units.next() {
        let c = match u {
            0xD800..=0xDBFF => match units.peek() {
                Some(&(_, low @ 0xDC00..=0xDFFF)) => {
                    units.next();
                    char::from_u32(0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00))
                }
                _ => None,
            },
            _ => char::from_u32(u),
        };
        match c {
            Some(c) => out.push(c),
            None => return Err(surrogate_error_at(py, err, arg, index, Some(i))),
        }
    }
    Ok(out)
}

/// `TextEncodingError(message, argument, index, position)`: `index` is the item of a sequence
/// argument (None for a single text), `position` the character offset of the lone surrogate.
#[cold]
fn surrogate_error(py: Python<'_>, err: PyErr, arg: &str, index: Option<usize>) -> PyErr {
    let position = err.value(py).getattr("start").and_then(|s| s.extract::<usize>()).ok();
    surrogate_error_at(py, err, arg, index, position)
}

#[cold]
fn surrogate_error_at(py: Python<'_>, err: PyErr, arg: &str, index: Option<usize>, position: Option<usize>) -> PyErr {
    let at = position.map(|p| format!(" at index {p}")).unwrap_or_default();
    let name = match index {
        Some(i) => format!("{arg}[{i}]"),
        None => arg.to_string(),
    };
    let new = TextEncodingError::new_err((
        format!(
            "argument '{name}' contains a lone surrogate{at}, which is not valid Unicode text \
             and has no token count; clean it first, e.g. \
             text.encode('utf-8', 'replace').decode('utf-8')"
        ),
        arg.to_string(),
        index,
        position,
    ));
    new.set_cause(py, Some(err));
    new
}

/// A sequence of `str` (list, tuple, any iterable). Items are kept alive by the returned vector.
pub fn texts<'py>(obj: &Bound<'py, PyAny>, arg: &str) -> PyResult<Vec<Bound<'py, PyString>>> {
    if obj.is_instance_of::<PyString>() {
        return Err(wrong_type(obj, arg, "a sequence of str (got a single str)"));
    }
    let iter = obj
        .try_iter()
        .map_err(|_| wrong_type(obj, arg, "a sequence of str"))?;
    let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
    for (i, item) in iter.enumerate() {
        let item = item?;
        let s = item
            .cast_into::<PyString>()
            .map_err(|e| wrong_type(&e.into_inner(), &format!("{arg}[{i}]"), "str"))?;
        out.push(s);
    }
    Ok(out)
}

/// A non-negative Python int (bool refused: `True` tokens is a bug, not a budget).
pub fn count_arg(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<usize> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(wrong_type(obj, arg, "int"));
    }
    match obj.extract::<i128>() {
        Ok(v) if v >= 0 => usize::try_from(v).map_err(|_| too_large(arg, v)),
        Ok(v) => Err(InvalidArgumentError::new_err(format!("argument '{arg}' must be >= 0, got {v}"))),
        Err(_) => Err(InvalidArgumentError::new_err(format!("argument '{arg}' is out of range"))),
    }
}

#[cold]
fn too_large(arg: &str, v: i128) -> PyErr {
    InvalidArgumentError::new_err(format!("argument '{arg}' is too large: {v}"))
}

/// Token ids: a sequence of ints in 0..2**32.
pub fn ids(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Vec<u32>> {
    if obj.is_instance_of::<PyString>() {
        return Err(wrong_type(obj, arg, "a sequence of int"));
    }
    let iter = obj
        .try_iter()
        .map_err(|_| wrong_type(obj, arg, "a sequence of int"))?;
    let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
    for (i, item) in iter.enumerate() {
        let item = item?;
        let name = format!("{arg}[{i}]");
        let v = count_arg(&item, &name)?;
        let id = u32::try_from(v).map_err(|_| InvalidArgumentError::new_err(format!("argument '{name}' is not a token id: {v}")))?;
        out.push(id);
    }
    Ok(out)
}

/// A bool flag; `1` or `None` is a caller's mistake worth naming.
pub fn flag(obj: Option<&Bound<'_, PyAny>>, arg: &str, default: bool) -> PyResult<bool> {
    // True and False are the only bools (the type cannot be subclassed): two pointer
    // comparisons, where a type check and an extraction were two calls into the interpreter.
    match obj {
        None => Ok(default),
        Some(o) if o.is(PyBool::new(o.py(), true)) => Ok(true),
        Some(o) if o.is(PyBool::new(o.py(), false)) => Ok(false),
        Some(o) => Err(wrong_type(o, arg, "bool")),
    }
}

/// A non-negative int where "more than anything" is meaningful (a token limit): huge values
/// saturate instead of failing.
pub fn limit_arg(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<usize> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(wrong_type(obj, arg, "int"));
    }
    if obj.lt(0)? {
        return Err(InvalidArgumentError::new_err(format!("argument '{arg}' must be >= 0, got {}", preview(obj))));
    }
    Ok(obj.extract::<usize>().unwrap_or(usize::MAX))
}

/// A finite float > 0.
pub fn positive_float(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<f64> {
    if obj.is_instance_of::<PyBool>() {
        return Err(wrong_type(obj, arg, "float"));
    }
    let v: f64 = obj.extract().map_err(|_| wrong_type(obj, arg, "float"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(InvalidArgumentError::new_err(format!("argument '{arg}' must be a finite number > 0, got {v}")))
    }
}

/// An optional non-negative int: absent or None gives None.
pub fn opt_count(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<usize>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => count_arg(o, arg).map(Some),
    }
}

/// An optional token count: a non-negative int no larger than `limits::MAX_COUNT`.
pub fn opt_tokens(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<usize>> {
    match opt_count(obj, arg)? {
        Some(n) => Ok(Some(check_count(n, &format!("argument '{arg}'"))?)),
        None => Ok(None),
    }
}

/// A file path: str or os.PathLike.
pub fn path(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<String> {
    let fspath = obj
        .py()
        .import("os")?
        .call_method1("fspath", (obj,))
        .map_err(|_| wrong_type(obj, arg, "str or os.PathLike"))?;
    Ok(text(&fspath, arg)?.to_string())
}

/// Keys and groups: str, or int (kept as its decimal text). Copied straight into the
/// `CompactString` the segment holds (inline when short), not through a `String`.
pub fn ident_arg(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<CompactString>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) if o.is_instance_of::<PyString>() => Ok(Some(text(o, arg)?.into())),
        Some(o) if o.is_instance_of::<PyInt>() && !o.is_instance_of::<PyBool>() => Ok(Some(o.str()?.to_str()?.into())),
        Some(o) => Err(wrong_type(o, arg, "str, int or None")),
    }
}

/// A relevance score in [0, 1]; 0.0 when absent.
pub fn score_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    score_named(obj, "score")
}

/// `score_arg` for an argument named `arg` (a column's item: `scores[3]`).
pub fn score_named(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<f64> {
    let Some(o) = obj else { return Ok(0.0) };
    if o.is_instance_of::<PyBool>() || !(o.is_instance_of::<PyFloat>() || o.is_instance_of::<PyInt>()) {
        return Err(wrong_type(o, arg, "a float in [0, 1]"));
    }
    let v: f64 = o.extract()?;
    if !(0.0..=1.0).contains(&v) {
        return Err(InvalidArgumentError::new_err(format!("argument '{arg}' must be a relevance in [0, 1], got {v}")));
    }
    Ok(v)
}
