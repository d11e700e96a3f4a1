//! Reading a `tokenizer.json` into what the fast engine needs, or the reason it cannot serve it.
//!
//! Served: a byte-level BPE (`"type": "BPE"`, every one of the 256 bytes in the vocabulary, no
//! dropout, unknown token, subword prefix or suffix, byte fallback), whose pre-tokenizer is a
//! chain of `Split(…, "Isolated")` stages ending in `ByteLevel` without a prefix space (with or
//! without its own GPT-2 regex), whose normalizer is none or NFC, and whose added tokens have no
//! `lstrip`, `rstrip` or `single_word` flag. That is Llama 3, Qwen2/2.5/3, Mistral's tekken,
//! DeepSeek and every vocabulary converted from tiktoken ranks. Anything else (SentencePiece's
//! Metaspace, Digits, a Replace normalizer...) is declined and stays on the Hugging Face engine.

use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::Value;

use super::bytelevel::ByteLevel;

/// GPT-2's pre-tokenizer regex, which `ByteLevel` applies when `use_regex` is true.
const GPT2_PATTERN: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

#[derive(Deserialize)]
struct File {
    normalizer: Option<Value>,
    pre_tokenizer: Option<Value>,
    model: Model,
    #[serde(default)]
    added_tokens: Vec<AddedJson>,
}

#[derive(Deserialize)]
struct Model {
    #[serde(rename = "type")]
    kind: Option<String>,
    dropout: Option<f64>,
    unk_token: Option<String>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
    #[serde(default)]
    byte_fallback: bool,
    #[serde(default)]
    ignore_merges: bool,
    #[serde(default)]
    vocab: FxHashMap<String, u32>,
    #[serde(default)]
    merges: Vec<MergeJson>,
}

/// A merge is written `"a b"` (older files) or `["a", "b"]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum MergeJson {
    Joined(String),
    Pair(String, String),
}

#[derive(Deserialize)]
struct AddedJson {
    id: u32,
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
    #[serde(default)]
    special: bool,
}

/// An added token: matched before the model sees the text (`normalized`: after the normalizer).
#[derive(Clone, Debug)]
pub struct Added {
    pub content: String,
    pub id: u32,
    pub special: bool,
    pub normalized: bool,
}

/// What the fast engine is compiled from.
pub struct Plan {
    /// The pre-tokenizer's regexes, applied in turn, each to the pieces of the one before.
    pub stages: Vec<String>,
    pub nfc: bool,
    /// The model's tokens as bytes, by id (None: no token has that id).
    pub tokens: Vec<Option<Vec<u8>>>,
    /// Merges in priority order: (left id, right id, merged id).
    pub merges: Vec<(u32, u32, u32)>,
    pub ignore_merges: bool,
    pub added: Vec<Added>,
}

type Declined = String;

fn stage_of(step: &Value) -> Result<Vec<String>, Declined> {
    let kind = step.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "Split" => {
            if step.get("behavior").and_then(Value::as_str) != Some("Isolated") {
                return Err("a Split pre-tokenizer whose behavior is not Isolated".into());
            }
            if step.get("invert").and_then(Value::as_bool).unwrap_or(false) {
                return Err("an inverted Split pre-tokenizer".into());
            }
            let pattern = step.get("pattern");
            if let Some(re) = pattern.and_then(|p| p.get("Regex")).and_then(Value::as_str) {
                Ok(vec![re.to_string()])
            } else if let Some(s) = pattern.and_then(|p| p.get("String")).and_then(Value::as_str) {
                Ok(vec![regex_syntax::escape(s)])
            } else {
                Err("a Split pre-tokenizer without a pattern".into())
            }
        }
        "ByteLevel" => {
            if step.get("add_prefix_space").and_then(Value::as_bool).unwrap_or(true) {
                return Err("a ByteLevel pre-tokenizer that adds a prefix space".into());
            }
            let own_regex = step.get("use_regex").and_then(Value::as_bool).unwrap_or(true);
            Ok(if own_regex { vec![GPT2_PATTERN.to_string()] } else { Vec::new() })
        }
        other => Err(format!("the {other:?} pre-tokenizer")),
    }
}

/// The regex stages, when the pre-tokenizer is Splits then one ByteLevel.
fn stages(pre: Option<&Value>) -> Result<Vec<String>, Declined> {
    let Some(pre) = pre.filter(|v| !v.is_null()) else { return Err("no pre-tokenizer (not byte-level)".into()) };
    let steps: Vec<&Value> = match pre.get("type").and_then(Value::as_str) {
        Some("Sequence") => pre.get("pretokenizers").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default(),
        _ => vec![pre],
    };
    let Some((last, splits)) = steps.split_last() else { return Err("an empty pre-tokenizer sequence".into()) };
    match last.get("type").and_then(Value::as_str) {
        Some("ByteLevel") => {}
        other => return Err(format!("the {} pre-tokenizer (not byte-level)", other.unwrap_or("unnamed"))),
    }
    let mut out = Vec::new();
    for step in splits {
        if step.get("type").and_then(Value::as_str) != Some("Split") {
            return Err(format!("the {} pre-tokenizer before ByteLevel", step.get("type").unwrap_or(&Value::Null)));
        }
        out.extend(stage_of(step)?);
    }
    out.extend(stage_of(last)?);
    Ok(out)
}

/// Whether the normalizer is NFC (true), nothing (false), or something else (declined).
fn nfc(normalizer: Option<&Value>) -> Result<bool, Declined> {
    let Some(n) = normalizer.filter(|v| !v.is_null()) else { return Ok(false) };
    match n.get("type").and_then(Value::as_str) {
        Some("NFC") => Ok(true),
        Some("Sequence") => {
            let mut any = false;
            for step in n.get("normalizers").and_then(Value::as_array).into_iter().flatten() {
                any |= nfc(Some(step))?;
            }
            Ok(any)
        }
        other => Err(format!("the {} normalizer", other.unwrap_or("unnamed"))),
    }
}

fn model_checks(m: &Model) -> Result<(), Declined> {
    if m.kind.as_deref().is_some_and(|k| k != "BPE") {
        return Err(format!("a {} model (not BPE)", m.kind.as_deref().unwrap_or("")));
    }
    let flags = [
        (m.dropout.is_some_and(|d| d > 0.0), "BPE dropout"),
        (m.unk_token.is_some(), "an unknown token"),
        (m.continuing_subword_prefix.as_deref().is_some_and(|s| !s.is_empty()), "a subword prefix"),
        (m.end_of_word_suffix.as_deref().is_some_and(|s| !s.is_empty()), "an end-of-word suffix"),
        (m.byte_fallback, "byte fallback"),
    ];
    match flags.iter().find(|(on, _)| *on) {
        Some((_, what)) => Err(format!("{what} (not a plain byte-level BPE)")),
        None => Ok(()),
    }
}

/// The plan for `json`, or why the fast engine cannot serve it.
pub fn read(json: &str) -> Result<Plan, Declined> {
    let file: File = serde_json::from_str(json).map_err(|e| format!("an unreadable file ({e})"))?;
    model_checks(&file.model)?;
    let stages = stages(file.pre_tokenizer.as_ref())?;
    let nfc = nfc(file.normalizer.as_ref())?;
    if let Some(t) = file.added_tokens.iter().find(|t| t.lstrip || t.rstrip || t.single_word) {
        return Err(format!("added token {:?} has lstrip, rstrip or single_word", t.content));
    }
    let model = file.model;
    let size = model.vocab.values().max().map_or(0, |&m| m as usize + 1);
    if size > 4 * model.vocab.len() + 1024 {
        return Err("a vocabulary whose ids are mostly unused".into());
    }
    let bl = ByteLevel::new();
    let mut tokens: Vec<Option<Vec<u8>>> = vec![None; size];
    // An entry outside the byte-level alphabet (DeepSeek's `<｜▁pad▁｜>`) is a control token kept
    // in the vocabulary: no piece of text can spell it, so the model never produces it, unless a
    // merge does, which is refused below.
    let mut unspellable = 0usize;
    for (text, &id) in &model.vocab {
        match bl.decode(text) {
            Some(bytes) if !bytes.is_empty() => tokens[id as usize] = Some(bytes),
            Some(_) => return Err("an empty vocabulary entry".into()),
            None => unspellable += 1,
        }
    }
    if unspellable * 2 > model.vocab.len() {
        return Err(format!("{unspellable} of its {} vocabulary entries are not byte-level", model.vocab.len()));
    }
    let singles = tokens.iter().flatten().filter(|b| b.len() == 1).count();
    if singles < 256 {
        return Err(format!("only {singles} of the 256 bytes are tokens"));
    }
    let mut merges = Vec::with_capacity(model.merges.len());
    for (i, m) in model.merges.iter().enumerate() {
        let (a, b) = match m {
            MergeJson::Pair(a, b) => (a.as_str(), b.as_str()),
            MergeJson::Joined(s) => s.split_once(' ').ok_or_else(|| format!("merge {i} ({s:?}) is not two tokens"))?,
        };
        let id = |t: &str| model.vocab.get(t).copied();
        let merged = format!("{a}{b}");
        let spelled = |t: Option<u32>| t.filter(|&i| tokens[i as usize].is_some());
        match (spelled(id(a)), spelled(id(b)), spelled(id(&merged))) {
            (Some(x), Some(y), Some(z)) => merges.push((x, y, z)),
            _ => return Err(format!("merge {i} ({a:?} {b:?}) names a token not in the vocabulary, or not byte-level")),
        }
    }
    let added = file
        .added_tokens
        .into_iter()
        .filter(|t| !t.content.is_empty())
        .map(|t| Added { content: t.content, id: t.id, special: t.special, normalized: t.normalized })
        .collect();
    Ok(Plan { stages, nfc, tokens, merges, ignore_merges: model.ignore_merges, added })
}

impl Plan {
    /// The merges as the tokenizers crate keys them: (left, right) -> (priority, merged); a pair
    /// listed twice keeps its last place, as the crate's map does.
    pub fn merge_table(&self) -> FxHashMap<(u32, u32), (u32, u32)> {
        self.merges.iter().enumerate().map(|(rank, &(a, b, m))| ((a, b), (rank as u32, m))).collect()
    }

    /// The id of each single-byte token.
    pub fn byte_ids(&self) -> [u32; 256] {
        let mut ids = [0u32; 256];
        for (id, t) in self.tokens.iter().enumerate() {
            if let Some([b]) = t.as_deref() {
                ids[*b as usize] = id as u32;
            }
        }
        ids
    }
}
