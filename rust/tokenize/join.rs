//! The exact count of texts joined by a separator, without re-tokenizing the texts.
//!
//! For the OpenAI encodings, a position that follows a line feed and holds a character that is
//! neither whitespace nor '/' always starts a new pre-tokenization piece, whatever came before
//! or comes after: every piece that can contain a line feed ends in whitespace, except o200k's
//! punctuation piece, which may run on over line feeds and slashes (`!\n/` is one piece), and
//! no piece starts with one that could extend backwards over it. BPE never merges across pieces, so a text's count is
//! additive over the regions between such "anchors". Joining texts therefore only changes the
//! count of the region that straddles each join: from the last anchor of one text, through the
//! separator, to the first anchor of the next. Those regions (usually a line or two) are all
//! that gets tokenized; the rest comes from the texts' known counts. Texts without anchors are
//! absorbed whole into the straddling region, so the result is exact in every case.

use crate::error::CtxResult;

/// Can a piece start at this character when a line feed precedes it, whatever came before?
fn anchors(c: char) -> bool {
    !c.is_whitespace() && c != '/'
}

/// Is byte offset `i` of `text` an anchor?
fn is_anchor(text: &str, i: usize) -> bool {
    i > 0 && text.as_bytes().get(i - 1) == Some(&b'\n') && text[i..].chars().next().is_some_and(anchors)
}

/// Where a long text can be cut so that its count is the sum of its pieces' counts: anchors
/// roughly every `chunk` bytes (none when the text has no anchor past a boundary).
pub fn cut_points(text: &str, chunk: usize) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut from = chunk;
    while from < text.len() {
        let next = text.get(from..).and_then(|rest| {
            rest.match_indices('\n').map(|(i, _)| from + i + 1).find(|&i| is_anchor(text, i))
        });
        match next {
            Some(at) => {
                cuts.push(at);
                from = at + chunk;
            }
            None => break,
        }
    }
    cuts
}

fn first_anchor(text: &str) -> Option<usize> {
    text.match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| is_anchor(text, i))
}

fn last_anchor(text: &str) -> Option<usize> {
    text.rmatch_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| is_anchor(text, i))
}

/// Exact count of `texts.join(sep)` given each text's exact standalone count.
///
/// `count` tokenizes a fragment (it is called only on the regions around joins).
pub fn count_joined(
    texts: &[&str],
    counts: &[usize],
    sep: &str,
    count: &dyn Fn(&str) -> CtxResult<usize>,
) -> CtxResult<usize> {
    if texts.is_empty() {
        return Ok(0);
    }
    let mut total = 0usize;
    // The straddling region being accumulated: text since the last anchor.
    let mut pending = String::new();
    for (i, (&text, &n)) in texts.iter().zip(counts).enumerate() {
        if i > 0 {
            pending.push_str(sep);
        }
        // The start of a text is itself an anchor when the separator ended in a line feed.
        let starts_anchored = i > 0 && pending.ends_with('\n') && text.chars().next().is_some_and(anchors);
        if starts_anchored {
            total += count(&pending)?;
            pending.clear();
        }
        match (first_anchor(text), last_anchor(text)) {
            (Some(first), Some(last)) => {
                pending.push_str(&text[..first]);
                total += count(&pending)?;
                pending.clear();
                // The anchored middle [first, last) keeps its standalone count.
                let edges = count(&text[..first])? + count(&text[last..])?;
                total += n.saturating_sub(edges);
                pending.push_str(&text[last..]);
            }
            _ => pending.push_str(text),
        }
    }
    total += count(&pending)?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::{Encoding, TokenCounter};

    fn check(texts: &[&str], sep: &str) {
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let tok = TokenCounter::shared(enc);
            let counts: Vec<usize> = texts.iter().map(|t| tok.count(t).unwrap()).collect();
            let f = |s: &str| tok.count_uncached(s);
            let got = count_joined(texts, &counts, sep, &f).unwrap();
            let want = tok.count_uncached(&texts.join(sep)).unwrap();
            assert_eq!(got, want, "{enc:?} {texts:?} joined by {sep:?}");
        }
    }

    #[test]
    fn joins_are_exact() {
        check(&["hello", "world"], " ");
        check(&["hello", "world"], "");
        check(&["line one\nline two\n", "\nnext para\nmore"], "\n\n");
        check(&["a\n\nb  ", "  c\nd"], "\n");
        check(&["trailing   ", "   leading"], "\n---\n");
        check(&["x\ny\nz", "", "q\nr"], "\n\n");
        check(&["日本語\nテキスト", "続き\nです"], "\n");
        check(&["don", "'t stop\nnow"], "");
        check(&["abc\n", "def\n", "ghi\n"], "");
        check(&["12\n34", "56\n78"], "");
        check(&["  \n  \n", "\n\n  x"], "\n");
        // o200k's punctuation piece runs over line feeds onto slashes.
        check(&["a!", "/b"], "\n");
        check(&["a!\n", "/b"], "");
        check(&["print(x)\n", "//comment\n/x\n//y"], "");
        check(&["x;\n//a\n/\n/b", "c"], "\n");
    }
}
