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
pub mod self_check;

use std::borrow::Cow;

use aho_corasick::AhoCorasick;
use bpe::byte_pair_encoding::BytePairEncoding;
use rustc_hash::FxHashMap;
use unicode_normalization_alignments::{is_nfc_quick, IsNormalized, UnicodeNormalization};

use added::{AddedPass, Part};
use pretokenize::Pretokenizer;

use super::specials::SpecialTokens;

/// The pieces the automaton cannot serve, and what serves them.
struct LeftOut {
    /// Finds a left-out token's bytes in a piece.
    finder: AhoCorasick,
    /// Every token by its bytes, for `ignore_merges` (None when the file does not set it).
    whole: Option<FxHashMap<Vec<u8>, u32>>,
    /// The file's merges: (left, right) -> (priority, merged).
    merges: FxHashMap<(u32, u32), (u32, u32)>,
    byte_id: [u32; 256],
    /// The left-out tokens' bytes (for the load-time check's texts).
    tokens: Vec<Vec<u8>>,
}

impl LeftOut {
    fn encode(&self, piece: &[u8]) -> Vec<u32> {
        if let Some(id) = self.whole.as_ref().and_then(|w| w.get(piece)) {
            return vec![*id];
        }
        let start = piece.iter().map(|&b| self.byte_id[b as usize]).collect();
        merge::merge_all(start, &|l, r| self.merges.get(&(l, r)).copied())
    }
}

pub struct FastBpe {
    raw: AddedPass,
    normalized: AddedPass,
    nfc: bool,
    pre: Pretokenizer,
    bpe: BytePairEncoding,
    to_id: Vec<u32>,
    left_out: Option<LeftOut>,
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
            let bytes: Vec<&[u8]> = automaton.left_out.iter().filter_map(|&id| plan.tokens.get(id as usize)?.as_deref()).collect();
            let finder = AhoCorasick::new(&bytes).map_err(|e| format!("its left-out tokens do not build a matcher ({e})"))?;
            let mut byte_id = [0u32; 256];
            let mut whole = FxHashMap::default();
            for (id, t) in plan.tokens.iter().enumerate() {
                if let Some(t) = t {
                    if t.len() == 1 {
                        byte_id[t[0] as usize] = id as u32;
                    }
                    if plan.ignore_merges {
                        whole.insert(t.clone(), id as u32);
                    }
                }
            }
            let mut merges = FxHashMap::default();
            for (rank, &(a, b, m)) in plan.merges.iter().enumerate() {
                merges.entry((a, b)).or_insert((rank as u32, m));
            }
            let tokens = bytes.iter().map(|b| b.to_vec()).collect();
            Some(LeftOut { finder, whole: plan.ignore_merges.then_some(whole), merges, byte_id, tokens })
        };
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
            special,
            added: plan.added.iter().map(|t| t.content.clone()).collect(),
            origin,
        })
    }

    /// How many tokens the automaton leaves to the merge loop.
    pub fn left_out(&self) -> usize {
        self.left_out.as_ref().map_or(0, |l| l.finder.patterns_len())
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

    fn left_out_for(&self, piece: &str) -> Option<&LeftOut> {
        self.left_out.as_ref().filter(|l| l.finder.is_match(piece))
    }

    pub fn count(&self, text: &str) -> usize {
        let mut total = 0usize;
        self.each(text, &mut |part| {
            let n = match part {
                Part::Token(_) => 1,
                Part::Text(piece) => match self.left_out_for(piece) {
                    Some(l) => l.encode(piece.as_bytes()).len(),
                    None => self.bpe.count(piece.as_bytes()),
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
            Part::Text(piece) => match self.left_out_for(piece) {
                Some(l) => out.extend(l.encode(piece.as_bytes())),
                None => out.extend(
                    self.bpe.encode_via_backtracking(piece.as_bytes()).iter().map(|&t| self.to_id.get(t as usize).copied().unwrap_or(u32::MAX)),
                ),
            },
        });
        out
    }
}
