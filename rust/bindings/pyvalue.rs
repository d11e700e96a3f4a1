//! Python values as JSON data for the core (a chat template's context): dicts with str keys,
//! lists and tuples, str, int, float, bool and None, nested at most `MAX_DEPTH` levels. Anything
//! else is refused with the path of the value (`messages[3].content[0]`), never a bare TypeError.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use super::args;
use super::errors::{ArgumentTypeError, InvalidArgumentError};
use crate::limits::MAX_DEPTH;

fn step(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{key:?}]")
    }
}

/// `obj` as JSON data; errors name `path`.
pub fn to_json(obj: &Bound<'_, PyAny>, path: &str) -> PyResult<Value> {
    value(obj, path, 0)
}

fn value(obj: &Bound<'_, PyAny>, path: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(InvalidArgumentError::new_err(format!("{path} is nested deeper than {MAX_DEPTH} levels")));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(args::text_joined(s.as_any(), path)?.into_owned()));
    }
    if obj.cast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::Number(u.into()));
        }
        return Err(InvalidArgumentError::new_err(format!("{path} is an int outside the 64-bit range")));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| InvalidArgumentError::new_err(format!("{path} is {}: a message holds finite numbers", f.value())));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                ArgumentTypeError::new_err(format!("{path} has a key of type {}: keys must be str", type_name(&k)))
            })?;
            let key = args::text_joined(key.as_any(), path)?.into_owned();
            let at = step(path, &key);
            map.insert(key, value(&v, &at, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() {
        let mut items = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            items.push(value(&item?, &format!("{path}[{i}]"), depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    Err(ArgumentTypeError::new_err(format!(
        "{path} is a {}: a chat template reads dicts, lists, str, int, float, bool and None",
        type_name(obj)
    )))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "value".into())
}
