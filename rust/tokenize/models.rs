//! Which embedded encoding an OpenAI model counts with: tiktoken's model table, for the models
//! whose encoding ctxfast embeds.
//!
//! Names are matched by family, as tiktoken does by prefix: a family matches itself, a dated or
//! suffixed snapshot (`gpt-4o-2024-08-06`, `gpt-4-32k`) and a fine-tune (`ft:gpt-4o-mini:org::id`).
//! Beyond tiktoken, case and surrounding space are ignored and a router's provider prefix
//! (`openai/gpt-4o`) is dropped. One deliberate difference: tiktoken's `ft:gpt-4` prefix sends
//! `ft:gpt-4.1-…` fine-tunes to cl100k_base; here a fine-tune counts with its base model's
//! encoding, o200k_base.

use super::Encoding;
use crate::error::{CtxError, CtxResult};

/// o200k_base families, tried before the cl100k ones (`gpt-4o` starts with `gpt-4`). gpt-oss is
/// o200k_harmony in tiktoken: the same ordinary tokens, so the same counts for text.
const O200K: [&str; 9] = ["gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4"];
const CL100K: [&str; 8] = [
    "gpt-4",
    "gpt-3.5",
    // Azure's name for gpt-3.5-turbo.
    "gpt-35-turbo",
    "text-embedding-ada-002",
    "text-embedding-3-small",
    "text-embedding-3-large",
    "davinci-002",
    "babbage-002",
];

/// `openai/gpt-4o` and `ft:gpt-4o:org::id` name the model `gpt-4o`.
fn family_name(model: &str) -> String {
    let name = model.trim().to_lowercase();
    let name = name.rsplit('/').next().unwrap_or_default();
    name.strip_prefix("ft:").unwrap_or(name).to_string()
}

fn in_family(name: &str, families: &[&str]) -> bool {
    families.iter().any(|f| {
        name.strip_prefix(f).is_some_and(|rest| rest.is_empty() || rest.starts_with('-') || rest.starts_with(':'))
    })
}

/// The encoding of an OpenAI model, or None for a model ctxfast does not know.
pub fn encoding_for_model(model: &str) -> Option<Encoding> {
    let name = family_name(model);
    // tiktoken maps every "gpt-5" prefix (gpt-5, gpt-5.1, gpt-5-mini) to o200k_base.
    if in_family(&name, &O200K) || name.starts_with("gpt-5") {
        return Some(Encoding::O200kBase);
    }
    if in_family(&name, &CL100K) {
        return Some(Encoding::Cl100kBase);
    }
    None
}

/// As `encoding_for_model`, with an error naming the model for one ctxfast does not know.
pub fn require_encoding_for_model(model: &str) -> CtxResult<Encoding> {
    encoding_for_model(model).ok_or_else(|| {
        CtxError::invalid(format!(
            "no embedded encoding is known for model {model:?}: ctxfast knows the OpenAI models on \
             o200k_base (gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4, chatgpt-4o, gpt-oss) and on \
             cl100k_base (gpt-4, gpt-3.5-turbo, text-embedding-3, text-embedding-ada-002); \
             name the encoding instead, e.g. Tokenizer.from_encoding(\"o200k_base\")"
        ))
    })
}
