//! A `tokenizer.json`'s chain of `Split(…, "Isolated")` regexes, run with Rust's regex engine.
//!
//! The files' patterns are written for Oniguruma, and the common ones end in `\s+(?!\S)|\s+`: a
//! run of spaces that leaves its last space to the next word. Rust's regex engine has no
//! look-ahead, so that tail is rewritten as bpe-openai rewrites tiktoken's: `\s+$` joins the
//! pattern's own alternatives, and two patterns follow it, `\s+\s` with its last character given
//! back and then `\s+`. A pattern with any other look-around, or one that can match nothing, is
//! declined (the file stays on the Hugging Face engine). Each match is a piece and so is each gap
//! between matches, as `Isolated` says; every piece of a stage is split again by the next one.

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

const SPACE_TAIL: &str = r"|\s+(?!\S)|\s+";

struct Stage {
    regex: Regex,
    /// Per pattern: whether its last character is a look-ahead to give back.
    lookahead: Vec<bool>,
}

pub struct Pretokenizer {
    stages: Vec<Stage>,
}

fn compile(pattern: &str) -> Result<Stage, String> {
    let head = pattern.strip_suffix(SPACE_TAIL);
    let source = head.unwrap_or(pattern);
    if ["(?=", "(?!", "(?<"].iter().any(|l| source.contains(l)) {
        return Err(format!("the pre-tokenizer regex {pattern:?} uses a look-around Rust's regex engine lacks"));
    }
    let patterns: Vec<(String, bool)> = match head {
        Some(h) => vec![(format!(r"{h}|\s+$"), false), (r"\s+\s".into(), true), (r"\s+".into(), false)],
        None => vec![(pattern.to_string(), false)],
    };
    for (p, _) in &patterns {
        let hir = regex_syntax::parse(p).map_err(|e| format!("the pre-tokenizer regex {p:?} does not compile in Rust ({e})"))?;
        if hir.properties().minimum_len().unwrap_or(0) == 0 {
            return Err(format!("the pre-tokenizer regex {p:?} can match nothing"));
        }
    }
    let sources: Vec<&str> = patterns.iter().map(|(p, _)| p.as_str()).collect();
    let regex = Regex::new_many(&sources).map_err(|e| format!("the pre-tokenizer regex {pattern:?} does not compile in Rust ({e})"))?;
    Ok(Stage { regex, lookahead: patterns.iter().map(|&(_, l)| l).collect() })
}

impl Stage {
    /// The next match at or after `at`: (start, end).
    fn next_match(&self, text: &str, at: usize) -> Option<(usize, usize)> {
        // A match starting at `at` is the leftmost one; asking for it anchored is one forward
        // scan, where an unanchored search also scans back for the start.
        let anchored = Input::new(text).span(at..text.len()).anchored(Anchored::Yes);
        let m = self.regex.find(anchored).or_else(|| self.regex.find(Input::new(text).span(at..text.len())))?;
        let (start, mut end) = (m.start(), m.end());
        if self.lookahead.get(m.pattern().as_usize()).copied().unwrap_or(false) {
            if let Some(c) = text[start..end].chars().next_back() {
                if end - c.len_utf8() > start {
                    end -= c.len_utf8();
                }
            }
        }
        Some((start, end))
    }

    fn split<'t>(&self, text: &'t str, f: &mut dyn FnMut(&'t str)) {
        let mut at = 0;
        while at < text.len() {
            match self.next_match(text, at) {
                Some((start, end)) if end > at => {
                    if start > at {
                        f(&text[at..start]);
                    }
                    f(&text[start..end]);
                    at = end;
                }
                _ => {
                    f(&text[at..]);
                    return;
                }
            }
        }
    }
}

impl Pretokenizer {
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        Ok(Self { stages: patterns.iter().map(|p| compile(p)).collect::<Result<_, _>>()? })
    }

    /// Calls `f` with each piece of `text`, in order; together they are `text`.
    pub fn each<'t>(&self, text: &'t str, f: &mut dyn FnMut(&'t str)) {
        self.each_from(0, text, f);
    }

    fn each_from<'t>(&self, stage: usize, text: &'t str, f: &mut dyn FnMut(&'t str)) {
        match self.stages.get(stage) {
            None => f(text),
            Some(s) if stage + 1 == self.stages.len() => s.split(text, f),
            Some(s) => s.split(text, &mut |piece| self.each_from(stage + 1, piece, f)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(p: &Pretokenizer, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        p.each(text, &mut |s| out.push(s.to_string()));
        out
    }

    #[test]
    fn spaces_leave_their_last_one_to_the_next_word() {
        let llama3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
        let p = Pretokenizer::new(&[llama3.to_string()]).unwrap();
        assert_eq!(pieces(&p, "a   b  "), ["a", "  ", " b", "  "]);
        assert_eq!(pieces(&p, "I'm 12345"), ["I", "'m", " ", "123", "45"]);
    }

    #[test]
    fn chained_stages_and_gaps() {
        let p = Pretokenizer::new(&[r"\p{N}{1,3}".into(), r"[a-z]+".into()]).unwrap();
        assert_eq!(pieces(&p, "ab1234-cd"), ["ab", "123", "4", "-", "cd"]);
    }

    #[test]
    fn declines_what_it_cannot_run() {
        assert!(Pretokenizer::new(&[r"a(?=b)".into()]).is_err());
        assert!(Pretokenizer::new(&[r"\s*".into()]).is_err());
        assert!(Pretokenizer::new(&[r"(".into()]).is_err());
    }
}
