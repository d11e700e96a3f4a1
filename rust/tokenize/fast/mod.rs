//! The fast exact engine for byte-level BPE `tokenizer.json` files: GitHub's `bpe` crate (the
//! linear-time encoder behind the embedded OpenAI encodings) compiled from the file.
//!
//! The pipeline is the Hugging Face engine's, step for step: added tokens (`added`), NFC when the
//! normalizer says so, the chain of Split regexes (`pretokenize`), then each piece through the
//! automaton (`automaton`), or, for a piece holding a token the automaton leaves out, through
//! the file's own merges with a heap (`merge`), after the whole-piece lookup of `ignore_merges`.
//! `plan` says what files it serves; everything else, and any file whose load-time comparison
//! with the Hugging Face engine differs (`self_check`), stays on the Hugging Face engine.

mod added;
mod automaton;
mod bytelevel;
mod disk_cache;
mod merge;
mod plan;
mod pretokenize;
mod runs;
pub mod self_check;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use aho_corasick::AhoCorasick;
use bpe::byte_pair_encoding::BytePairEncoding;
use rustc_hash::FxHashMap;
use unicode_normalization_alignments::{is_nfc_quick, IsNormalized, UnicodeNormalization};

use added::{AddedPass, Part};
use pretokenize::Pretokenizer;

use super::specials::SpecialTokens;

/// What the automaton leaves out, and what serves it.
struct LeftOut {
    /// Finds, in a piece, a token merges form only through one of later rank; such a piece goes
    /// through the merge loop (None: the file has none).
    finder: Option<AhoCorasick>,
    /// The file's merges: (left, right) -> (priority, merged).
    merges: FxHashMap<(u32, u32), (u32, u32)>,
    byte_id: [u32; 256],
    /// The left-out tokens' bytes (for the load-time check's texts).
    tokens: Vec<Vec<u8>>,
}

impl LeftOut {
    fn needs_loop(&self, piece: &str) -> bool {
        self.finder.as_ref().is_some_and(|f| f.is_match(piece))
    }

    fn encode(&self, piece: &[u8]) -> Vec<u32> {
        let start = piece.iter().map(|&b| self.byte_id[b as usize]).collect();
        merge::merge_all(start, &|l, r| self.merges.get(&(l, r)).copied())
    }
}

/// How one piece is encoded.
enum Route<'a> {
    /// It is a token, and the file sets `ignore_merges`.
    Whole(u32),
    Loop(&'a LeftOut),
    Automaton,
}

pub struct FastBpe {
    raw: AddedPass,
    normalized: AddedPass,
    nfc: bool,
    pre: Pretokenizer,
    bpe: BytePairEncoding,
    to_id: Vec<u32>,
    left_out: Option<LeftOut>,
    /// Every token by its bytes, when the file sets `ignore_merges` (a piece that is a token is
    /// that token, whatever the merges say).
    whole: Option<FxHashMap<Vec<u8>, u32>>,
    special: SpecialTokens,
    added: Vec<String>,
    /// How the automaton was had: built now or read from the disk cache.
    pub origin: String,
}

fn nfc(text: &str) -> Cow<'_, str> {
    match is_nfc_quick(text.chars()) {
        IsNormalized::Yes => Cow::Borrowed(text),
        _ => Cow::Owned(text.nfc().map(|(c, _)| c).collect()),
    }
}

impl FastBpe {
    /// The engine for `json`, or why it cannot serve the file.
    pub fn build(json: &str, special: SpecialTokens) -> Result<Self, String> {
        let plan = plan::read(json)?;
        let pre = Pretokenizer::new(&plan.stages)?;
        let (automaton, origin) = match disk_cache::load(json, &plan) {
            Some(a) => (a, "read from the disk cache".to_string()),
            None => {
                let a = automaton::build(&plan)?;
                let origin = match disk_cache::store(json, &a) {
                    Ok(path) => format!("built and cached at {}", path.display()),
                    Err(why) => format!("built (not cached: {why})"),
                };
                (a, origin)
            }
        };
        let left_out = if automaton.left_out.is_empty() {
            None
        } else {
            let bytes_of = |ids: &[u32]| -> Vec<Vec<u8>> { ids.iter().filter_map(|&id| plan.tokens.get(id as usize)?.clone()).collect() };
            let looped = bytes_of(&automaton.merge_loop);
            let finder = if looped.is_empty() {
                None
            } else {
                Some(AhoCorasick::new(&looped).map_err(|e| format!("its left-out tokens do not build a matcher ({e})"))?)
            };
            Some(LeftOut { finder, merges: plan.merge_table(), byte_id: plan.byte_ids(), tokens: bytes_of(&automaton.left_out) })
        };
        let whole = plan.ignore_merges.then(|| plan.tokens.iter().enumerate().filter_map(|(id, t)| Some((t.clone()?, id as u32))).collect());
        let raw: Vec<&plan::Added> = plan.added.iter().filter(|t| !t.normalized).collect();
        let normalized: Vec<&plan::Added> = plan.added.iter().filter(|t| t.normalized).collect();
        let normalize = |s: &str| if plan.nfc { nfc(s).into_owned() } else { s.to_string() };
        Ok(Self {
            raw: AddedPass::new(&raw, &|s| s.to_string())?,
            normalized: AddedPass::new(&normalized, &normalize)?,
            nfc: plan.nfc,
            pre,
            bpe: automaton.bpe,
            to_id: automaton.to_id,
            left_out,
            whole,
            special,
            added: plan.added.iter().map(|t| t.content.clone()).collect(),
            origin,
        })
    }

    /// How many tokens the automaton leaves out, and how many of them the merge loop serves.
    pub fn left_out(&self) -> (usize, usize) {
        self.left_out.as_ref().map_or((0, 0), |l| (l.tokens.len(), l.finder.as_ref().map_or(0, |f| f.patterns_len())))
    }

    /// The texts the load-time check compares on (`self_check::texts`).
    pub fn check_texts(&self) -> Vec<String> {
        let none: Vec<Vec<u8>> = Vec::new();
        let left_out = self.left_out.as_ref().map_or(&none, |l| &l.tokens);
        let token = |i: usize| self.bpe.token_bytes(i as u32).to_vec();
        self_check::texts(self.bpe.num_tokens(), &token, left_out, &self.added)
    }

    /// Calls `f` with each pre-tokenized piece of `text`, or with an added token's id.
    fn each(&self, text: &str, f: &mut dyn FnMut(Part<'_>)) {
        self.raw.each(text, self.special, &mut |part| match part {
            Part::Token(id) => f(Part::Token(id)),
            Part::Text(gap) => {
                let gap = if self.nfc { nfc(gap) } else { Cow::Borrowed(gap) };
                self.normalized.each(&gap, self.special, &mut |inner| match inner {
                    Part::Token(id) => f(Part::Token(id)),
                    Part::Text(run) => self.pre.each(run, &mut |piece| f(Part::Text(piece))),
                });
            }
        });
    }

    fn route(&self, piece: &str) -> Route<'_> {
        if let Some(&id) = self.whole.as_ref().and_then(|w| w.get(piece.as_bytes())) {
            return Route::Whole(id);
        }
        match &self.left_out {
            Some(l) if l.needs_loop(piece) => Route::Loop(l),
            _ => Route::Automaton,
        }
    }

    pub fn count(&self, text: &str) -> usize {
        let mut total = 0usize;
        // Pieces the merge loop serves recur (Japanese verb endings in Llama 3): counted once a call.
        let mut looped: FxHashMap<Box<str>, usize> = FxHashMap::default();
        self.each(text, &mut |part| {
            let n = match part {
                Part::Token(_) => 1,
                Part::Text(piece) => match self.route(piece) {
                    Route::Whole(_) => 1,
                    Route::Loop(l) => match looped.get(piece) {
                        Some(&n) => n,
                        None => {
                            let n = l.encode(piece.as_bytes()).len();
                            looped.insert(piece.into(), n);
                            n
                        }
                    },
                    Route::Automaton => match runs::split(&self.bpe, piece) {
                        Some((_, copies, tail)) => copies.saturating_add(tail.len()),
                        None => self.bpe.count(piece.as_bytes()),
                    },
                },
            };
            total = total.saturating_add(n);
        });
        total
    }

    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3);
        self.each(text, &mut |part| match part {
            Part::Token(id) => out.push(id),
            Part::Text(piece) => match self.route(piece) {
                Route::Whole(id) => out.push(id),
                Route::Loop(l) => out.extend(l.encode(piece.as_bytes())),
                Route::Automaton => {
                    let id = |t: u32| self.to_id.get(t as usize).copied().unwrap_or(u32::MAX);
                    match runs::split(&self.bpe, piece) {
                        Some((t, copies, tail)) => {
                            out.extend(std::iter::repeat_n(id(t), copies));
                            out.extend(tail.into_iter().map(id));
                        }
                        None => out.extend(self.bpe.encode_via_backtracking(piece.as_bytes()).into_iter().map(id)),
                    }
                }
            },
        });
        out
    }
}
