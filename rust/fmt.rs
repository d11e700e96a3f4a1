//! Number and word formatting shared by the trace, the policy table, digests and error messages,
//! so every figure a reader sees is written the same way.

/// `1234567` as `"1,234,567"`: traces and errors are read by people comparing figures.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The plural suffix for `n` of something: "" for one, "s" otherwise.
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `text` right-aligned in `width` characters. By hand rather than `format!("{:>w$}")`, whose
/// width is at most 65,535 and panics past it: a caller's key can be any length.
pub fn pad_left(text: &str, width: usize) -> String {
    let fill = width.saturating_sub(text.chars().count());
    let mut out = String::with_capacity(text.len() + fill);
    out.extend(std::iter::repeat_n(' ', fill));
    out.push_str(text);
    out
}

/// `text` left-aligned in `width` characters (see `pad_left`).
pub fn pad_right(text: &str, width: usize) -> String {
    let fill = width.saturating_sub(text.chars().count());
    let mut out = String::with_capacity(text.len() + fill);
    out.push_str(text);
    out.extend(std::iter::repeat_n(' ', fill));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_by_three() {
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(plural(1), "");
        assert_eq!(plural(0), "s");
        assert_eq!(pad_left("ab", 4), "  ab");
        assert_eq!(pad_right("é", 3), "é  ");
        assert_eq!(pad_left("abc", 1), "abc");
        assert_eq!(pad_left("k", 70_000).len(), 70_000);
    }
}
