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

/// "1 token", "1,234 tokens".
pub fn tokens(n: usize) -> String {
    format!("{} token{}", thousands(n), plural(n))
}

/// `text` right-aligned in `width` characters. By hand rather than `format!("{:>w$}")`, whose
/// width is at most 65,535 and panics past it: a caller's key can be any length.
/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

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

/// The width every trace, policy table and error line is written for: a plain terminal.
pub const COLUMNS: usize = 80;

/// `parts` joined by `sep` after `lead` (e.g. `"start   "`), broken before a part that would
/// pass `width` columns; a continuation line starts with `indent` spaces and the broken line
/// keeps the separator's visible mark (`" · "` leaves `·`, `"  "` leaves nothing), so a reader
/// sees the list goes on. A part longer than the width gets a line of its own, unbroken.
pub fn wrap_parts(lead: &str, parts: &[String], sep: &str, indent: usize, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = lead.to_string();
    let mut empty = true;
    for part in parts {
        let cols = line.chars().count();
        if !empty && cols + sep.chars().count() + part.chars().count() > width {
            line.push_str(sep.trim_end());
            lines.push(line);
            line = " ".repeat(indent);
            empty = true;
        }
        if !empty {
            line.push_str(sep);
        }
        line.push_str(part);
        empty = false;
    }
    lines.push(line);
    lines
}

/// Prose broken at spaces to `width` columns, continuation lines indented by `indent`.
pub fn wrap_text(text: &str, indent: usize, width: usize) -> Vec<String> {
    let words: Vec<String> = text.split(' ').filter(|w| !w.is_empty()).map(str::to_string).collect();
    wrap_parts("", &words, " ", indent, width)
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

    #[test]
    fn wrap_parts_breaks_between_parts_and_keeps_the_mark() {
        let parts: Vec<String> = ["system 64", "tools 153", "conversation 7,045"].map(String::from).to_vec();
        assert_eq!(wrap_parts("start   ", &parts, "  ", 8, 30), vec!["start   system 64  tools 153", "        conversation 7,045"]);
        assert_eq!(wrap_parts("send    ", &parts, " · ", 8, 30), vec!["send    system 64 · tools 153 ·", "        conversation 7,045"]);
        // A part wider than the line is never cut.
        let long = vec!["x".repeat(50)];
        assert_eq!(wrap_parts("a ", &long, " ", 2, 20), vec![format!("a {}", "x".repeat(50))]);
        assert_eq!(wrap_text("raise the window, lower the reserve", 2, 20), vec!["raise the window,", "  lower the reserve"]);
    }
}
