//! How jinja2 prints a value: Python's `str()`. A dict or a list prints as its `repr`
//! (`{'type': 'function', 'enabled': True}`), a bool as `True`, none as `None`. Templates print
//! tool schemas this way (`{{ tools }}`, `tools|string`: Mistral's `[AVAILABLE_TOOLS]`), so MiniJinja's
//! JSON-like display would change the text a model is sent.

use minijinja::value::{Value, ValueKind};
use minijinja::Error;

use super::pyjson::float_repr;

/// `str(value)` as Python writes it.
pub fn str_of(value: &Value) -> Result<String, Error> {
    match value.kind() {
        ValueKind::String => Ok(value.as_str().unwrap_or_default().to_string()),
        ValueKind::Undefined => Ok(String::new()),
        _ => {
            let mut out = String::new();
            repr(&mut out, value, 0)?;
            Ok(out)
        }
    }
}

fn repr(out: &mut String, v: &Value, depth: usize) -> Result<(), Error> {
    if depth > crate::limits::MAX_DEPTH {
        out.push_str("...");
        return Ok(());
    }
    match v.kind() {
        ValueKind::None | ValueKind::Undefined => out.push_str("None"),
        ValueKind::Bool => out.push_str(if v.is_true() { "True" } else { "False" }),
        ValueKind::Number if v.is_integer() => out.push_str(&v.to_string()),
        ValueKind::Number => out.push_str(&f64::try_from(v.clone()).map(float_repr).unwrap_or_else(|_| v.to_string())),
        ValueKind::String => string(out, v.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            for (k, item) in v.try_iter()?.enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                repr(out, &item, depth + 1)?;
            }
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            for (k, key) in v.try_iter()?.enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                repr(out, &key, depth + 1)?;
                out.push_str(": ");
                repr(out, &v.get_item(&key)?, depth + 1)?;
            }
            out.push('}');
        }
        _ => out.push_str(&v.to_string()),
    }
    Ok(())
}

/// Characters Python's `str.isprintable()` calls unprintable (and `repr` escapes): controls,
/// separators other than the space, and the common format characters.
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c as u32,
            0xa0 | 0xad | 0x1680 | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064 | 0x2066..=0x206f | 0x3000 | 0xfeff)
}

/// Python's `repr(str)`: single quotes unless the text holds a `'` and no `"`.
fn string(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if unprintable(c) => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_python_str_does() {
        let v = Value::from_serialize(serde_json::json!({"a": [1, 2.5, true, null, "it's"], "b": "x\n\"y\""}));
        assert_eq!(str_of(&v).unwrap(), r#"{'a': [1, 2.5, True, None, "it's"], 'b': 'x\n"y"'}"#);
        assert_eq!(str_of(&Value::from(true)).unwrap(), "True");
        assert_eq!(str_of(&Value::from("plain")).unwrap(), "plain");
        let mut s = String::new();
        string(&mut s, "a\u{1}\u{a0}é😀\\");
        assert_eq!(s, "'a\\x01\\xa0é😀\\\\'");
    }
}
