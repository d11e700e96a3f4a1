//! Hugging Face `tokenizer.json` files (Llama, Qwen, Mistral, DeepSeek, ...).

use tokenizers::Tokenizer;

use super::fast::{self_check, FastBpe};
use super::specials::SpecialTokens;
use crate::error::{CtxError, CtxResult};

/// Which engine counts a tokenizer.json: the fast one where it can serve the file and agrees
/// with the tokenizers crate at load, else the crate (`Auto`); or the crate always.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EngineChoice {
    #[default]
    Auto,
    HuggingFace,
}

impl EngineChoice {
    pub fn from_name(name: &str) -> CtxResult<Self> {
        match name {
            "auto" => Ok(Self::Auto),
            "huggingface" => Ok(Self::HuggingFace),
            other => Err(CtxError::invalid(format!(
                "engine must be \"auto\" (the fast bpe engine where it serves the file, else the tokenizers crate) or \
                 \"huggingface\" (the tokenizers crate), not {other:?}"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::HuggingFace => "huggingface",
        }
    }
}

pub struct HfEngine {
    tokenizer: Tokenizer,
    notes: Vec<String>,
    /// The fast engine, when it serves this file; counts and ids come from it.
    fast: Option<FastBpe>,
    /// Which engine counts, and why, in words.
    engine_note: String,
    choice: EngineChoice,
}

impl HfEngine {
    /// The engine for a tokenizer.json text. `special`: whether special-token strings in a text
    /// count as text (the tokenizers crate's `encode_special_tokens`) or as their tokens;
    /// `as_written`: no `hf_adjust` fix; `choice`: whether the fast engine may serve it.
    pub fn load(json: &str, special: SpecialTokens, as_written: bool, choice: EngineChoice) -> CtxResult<Self> {
        let fixed = if as_written { None } else { super::hf_adjust::adjusted(json)? };
        let (text, notes) = match &fixed {
            Some((text, note)) => (text.as_str(), vec![note.clone()]),
            None => (json, Vec::new()),
        };
        let mut tokenizer = Tokenizer::from_bytes(text.as_bytes())
            .map_err(|e| CtxError::TokenizerLoad(format!("not a valid tokenizer.json: {e}")))?;
        tokenizer.set_encode_special_tokens(special == SpecialTokens::Text);
        // A tokenizer.json may carry truncation or padding for model input; a counter must see
        // every token of the text and nothing else.
        tokenizer
            .with_truncation(None)
            .map_err(|e| CtxError::TokenizerLoad(format!("cannot disable truncation: {e}")))?;
        tokenizer.with_padding(None);
        let mut engine = Self { tokenizer, notes, fast: None, engine_note: String::new(), choice };
        engine.engine_note = match choice {
            EngineChoice::HuggingFace => "the tokenizers crate, as asked (engine=\"huggingface\")".to_string(),
            EngineChoice::Auto => match FastBpe::build(text, special) {
                Err(why) => format!("the tokenizers crate: the fast bpe engine does not serve {why}"),
                Ok(fast) => {
                    let reference = |t: &str| engine.encoding(t).map(|e| e.get_ids().to_vec()).map_err(|e| e.to_string());
                    match self_check::compare(&fast.check_texts(), &|t| fast.encode(t), &reference) {
                        Err(why) => format!("the tokenizers crate: the fast bpe engine was declined at load, {why}"),
                        Ok(()) => {
                            let note = format!(
                                "the fast bpe engine (GitHub's bpe crate; {} tokens left out of its automaton, {} of them served \
                                 by the merge loop; automaton {}), identical to the tokenizers crate on its load-time check",
                                fast.left_out().0,
                                fast.left_out().1,
                                fast.origin
                            );
                            engine.fast = Some(fast);
                            note
                        }
                    }
                }
            },
        };
        Ok(engine)
    }

    /// Which engine counts, and why, in words.
    pub fn engine_note(&self) -> &str {
        &self.engine_note
    }

    /// "bpe" when the fast engine counts, "huggingface" when the tokenizers crate does.
    pub fn engine_name(&self) -> &'static str {
        if self.fast.is_some() { "bpe" } else { "huggingface" }
    }

    pub fn choice(&self) -> EngineChoice {
        self.choice
    }

    /// What loading changed in the file, in words.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    pub fn model_kind(&self) -> &'static str {
        use tokenizers::models::ModelWrapper;
        match self.tokenizer.get_model() {
            ModelWrapper::BPE(_) => "bpe",
            ModelWrapper::WordPiece(_) => "wordpiece",
            ModelWrapper::WordLevel(_) => "wordlevel",
            ModelWrapper::Unigram(_) => "unigram",
        }
    }

    fn encoding(&self, text: &str) -> CtxResult<tokenizers::Encoding> {
        self.tokenizer
            .encode_fast(text, false)
            .map_err(|e| CtxError::Encoding(format!("tokenizer.json engine failed: {e}")))
    }

    pub fn count(&self, text: &str) -> CtxResult<usize> {
        match &self.fast {
            Some(f) => Ok(f.count(text)),
            None => Ok(self.encoding(text)?.len()),
        }
    }

    pub fn encode(&self, text: &str) -> CtxResult<Vec<u32>> {
        match &self.fast {
            Some(f) => Ok(f.encode(text)),
            None => Ok(self.encoding(text)?.get_ids().to_vec()),
        }
    }

    pub fn decode(&self, ids: &[u32]) -> CtxResult<String> {
        let size = self.vocab_size();
        if let Some((pos, bad)) = ids.iter().enumerate().find(|(_, &id)| id as usize >= size) {
            return Err(CtxError::invalid(format!(
                "token id {bad} at position {pos} is not in this tokenizer (vocabulary size {size})"
            )));
        }
        self.tokenizer
            .decode(ids, false)
            .map_err(|e| CtxError::Encoding(format!("decode failed: {e}")))
    }

    /// Byte offset after each token, ascending (offsets of merged/added tokens can repeat).
    pub fn token_ends(&self, text: &str) -> CtxResult<Vec<usize>> {
        let enc = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| CtxError::Encoding(format!("tokenizer.json engine failed: {e}")))?;
        let mut furthest = 0usize;
        Ok(enc
            .get_offsets()
            .iter()
            .map(|&(_, end)| {
                furthest = furthest.max(end);
                furthest
            })
            .collect())
    }

    /// The added tokens that match as written (no strip or single-word flag, not matched after
    /// a normalizer): where a count may be split (`specials`).
    pub fn split_tokens(&self) -> Vec<String> {
        let normalizer = self.tokenizer.get_normalizer().is_some();
        let mut out: Vec<String> = self
            .tokenizer
            .get_added_tokens_decoder()
            .values()
            .filter(|t| !(t.lstrip || t.rstrip || t.single_word || (t.normalized && normalizer)))
            .map(|t| t.content.clone())
            .collect();
        out.sort();
        out
    }

    pub fn vocab_size(&self) -> usize {
        self.tokenizer.get_vocab_size(true)
    }

    pub fn to_json(&self) -> CtxResult<String> {
        self.tokenizer
            .to_string(false)
            .map_err(|e| CtxError::Encoding(format!("cannot serialise tokenizer: {e}")))
    }
}
