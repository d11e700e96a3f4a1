//! jinja2's `int` and `float` filters, which never fail: a value Python cannot convert becomes
//! the default (`'abc'|int` is 0). MiniJinja's raise instead, and Mistral's own templates
//! (mistral-common's generator) test a tool result with `content|int` to see whether it is a
//! number.

use minijinja::value::{Value, ValueKind};

/// Python's `int(text, base)` for a str: surrounding whitespace, a sign, digits with single
/// underscores between them.
fn parse_int(text: &str, base: u32) -> Option<i128> {
    let t = text.trim();
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    let n = i128::from_str_radix(&clean, base).ok()?;
    Some(if negative { -n } else { n })
}

/// Python's `float(text)` for a str: Rust's parser accepts the same decimal and exponent forms,
/// `inf` and `nan`, once surrounding whitespace and underscores between digits are handled.
fn parse_float(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.starts_with('_') || t.ends_with('_') || t.contains("__") {
        return None;
    }
    let clean: String = t.chars().filter(|&c| c != '_').collect();
    let lower = clean.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        return clean.parse().ok();
    }
    if !body.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    clean.parse().ok()
}

fn as_float(value: &Value) -> Option<f64> {
    match value.kind() {
        ValueKind::Bool => Some(if value.is_true() { 1.0 } else { 0.0 }),
        ValueKind::Number => f64::try_from(value.clone()).ok(),
        ValueKind::String => value.as_str().and_then(parse_float),
        _ => None,
    }
}

/// `value|int(default=0, base=10)`.
pub fn int(value: Value, default: Option<Value>, base: Option<u32>) -> Value {
    let fallback = default.unwrap_or(Value::from(0));
    let base = base.filter(|b| (2..=36).contains(b)).unwrap_or(10);
    let parsed = match value.kind() {
        ValueKind::Bool => Some(i128::from(value.is_true())),
        ValueKind::Number => match i128::try_from(value.clone()) {
            Ok(n) => Some(n),
            Err(_) => as_float(&value).filter(|f| f.is_finite()).map(|f| f.trunc() as i128),
        },
        ValueKind::String => value.as_str().and_then(|s| {
            parse_int(s, base).or_else(|| parse_float(s).filter(|f| f.is_finite()).map(|f| f.trunc() as i128))
        }),
        _ => None,
    };
    parsed.map(Value::from).unwrap_or(fallback)
}

/// `value|float(default=0.0)`.
pub fn float(value: Value, default: Option<Value>) -> Value {
    as_float(&value).map(Value::from).unwrap_or(default.unwrap_or(Value::from(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_and_float_as_jinja2_has_them() {
        let i = |v: Value| int(v, None, None);
        assert_eq!(i(Value::from(" 42 ")), Value::from(42));
        assert_eq!(i(Value::from("1_000")), Value::from(1000));
        assert_eq!(i(Value::from("3.9")), Value::from(3));
        assert_eq!(i(Value::from("-2e1")), Value::from(-20));
        assert_eq!(i(Value::from("sunny, 21 degrees")), Value::from(0));
        assert_eq!(i(Value::from(())), Value::from(0));
        assert_eq!(i(Value::from(true)), Value::from(1));
        assert_eq!(int(Value::from("x"), Some(Value::from(-1)), None), Value::from(-1));
        assert_eq!(int(Value::from("ff"), None, Some(16)), Value::from(255));
        assert_eq!(float(Value::from("2.5"), None), Value::from(2.5));
        assert_eq!(float(Value::from("abc"), None), Value::from(0.0));
        assert_eq!(float(Value::from("1__0"), None), Value::from(0.0));
    }
}
