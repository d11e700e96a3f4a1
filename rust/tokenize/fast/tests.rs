//! The fast engine against the tokenizers crate on a small byte-level vocabulary built to hold
//! each case the engine treats apart: a token formed through a later one, a token its merges never
//! reach, ignore_merges, added tokens (special, normalized), NFC and chained Splits.

use super::automaton;
use super::bytelevel::alphabet;
use super::disk_cache;
use super::plan;
use crate::tokenize::specials::SpecialTokens;
use crate::tokenize::{EngineChoice, TokenCounter};

/// (left, right) merges in priority order; each makes the next id after the 256 bytes.
const MERGES: &[(&str, &str)] = &[
    ("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("a", "a"), ("Ġ", "a"),
    // "abc" is listed before "ab": BPE forms it through a token of later rank.
    ("ab", "c"), ("a", "b"), ("abc", "d"),
    // "aab" never forms on its own bytes: "aa" merges first and nothing joins "aa" and "b".
    ("a", "ab"), ("Ġ", "abcd"), ("e", "ĠĠ"), ("Ġ", "Ġ"), ("Ã", "©"), ("c", "Ã©"),
];

fn json(nfc: bool, ignore_merges: bool) -> String {
    let chars = alphabet();
    let mut vocab: Vec<String> = chars.iter().map(|c| c.to_string()).collect();
    let mut merges = Vec::new();
    for (a, b) in MERGES {
        let merged = format!("{a}{b}");
        if !vocab.contains(&merged) {
            vocab.push(merged);
        }
        merges.push(serde_json::json!([a, b]));
    }
    // A token no merge makes: only ignore_merges' whole-piece lookup returns it.
    vocab.push("xyz".into());
    let vocab: serde_json::Map<String, serde_json::Value> = vocab.iter().enumerate().map(|(i, t)| (t.clone(), i.into())).collect();
    let n = vocab.len();
    let normalizer = if nfc { serde_json::json!({"type": "NFC"}) } else { serde_json::Value::Null };
    serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "normalizer": normalizer,
        "added_tokens": [
            {"id": n, "content": "<|eot|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": n + 1, "content": "<x>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
        ],
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": false},
            {"type": "Split", "pattern": {"Regex": "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
        ]},
        "post_processor": null, "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": false, "byte_fallback": false, "ignore_merges": ignore_merges, "vocab": vocab, "merges": merges},
    })
    .to_string()
}

fn both(json: &str, special: SpecialTokens) -> (TokenCounter, TokenCounter) {
    let fast = TokenCounter::from_hf_json_with(json, 0, special, true, EngineChoice::Auto).unwrap();
    let hf = TokenCounter::from_hf_json_with(json, 0, special, true, EngineChoice::HuggingFace).unwrap();
    (fast, hf)
}

fn random_texts() -> Vec<String> {
    let alphabet: Vec<char> = "abcdhetxyz  \n\t1234'sé\u{301}日<|eot>".chars().collect();
    let mut x: u64 = 0x1234_5678;
    (0..3000)
        .map(|i| {
            (0..i % 37)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect()
        })
        .chain(["abcd", "aab", "xyz", " xyz", "abc", "<|eot|>", "a<x>b", "ecé", "  the", "12345"].map(String::from))
        .collect()
}

#[test]
fn ids_equal_the_tokenizers_crate_in_every_configuration() {
    for (nfc, ignore_merges) in [(false, true), (true, true), (false, false), (true, false)] {
        for special in [SpecialTokens::Text, SpecialTokens::Matched] {
            let (fast, hf) = both(&json(nfc, ignore_merges), special);
            assert_eq!(fast.engine_info().0, "bpe", "{:?}", fast.engine_info().1);
            for t in random_texts() {
                assert_eq!(fast.encode(&t).unwrap(), hf.encode(&t).unwrap(), "{t:?} nfc={nfc} ignore_merges={ignore_merges} {special:?}");
                assert_eq!(fast.count_uncached(&t).unwrap(), hf.count_uncached(&t).unwrap(), "{t:?}");
            }
        }
    }
}

#[test]
fn long_runs_of_one_character_agree() {
    let (fast, hf) = both(&json(false, true), SpecialTokens::Text);
    let engine = super::FastBpe::build(&json(false, true), SpecialTokens::Text).unwrap();
    let split = super::runs::split(&engine.bpe, &"a".repeat(100_000));
    assert!(split.is_some_and(|(_, copies, _)| copies > 40_000), "the shortcut is taken");
    for unit in ["a", " ", "\t", "é", "b", "日"] {
        for n in [super::runs::MIN_RUN - 1, super::runs::MIN_RUN, 70_001, 100_000] {
            let text = unit.repeat(n / unit.len());
            assert_eq!(fast.encode(&text).unwrap(), hf.encode(&text).unwrap(), "{unit:?} x {n}");
            assert_eq!(fast.count_uncached(&text).unwrap(), hf.count_uncached(&text).unwrap());
        }
    }
}

#[test]
fn the_vocabulary_is_split_as_the_crate_needs() {
    let text = json(false, true);
    let p = plan::read(&text).unwrap();
    let a = automaton::build(&p).unwrap();
    let id = |s: &str| 256 + MERGES.iter().position(|(l, r)| format!("{l}{r}") == s).unwrap() as u32;
    assert!(a.merge_loop.contains(&id("abc")), "formed through the later \"ab\"");
    assert!(a.merge_loop.contains(&id("abcd")), "formed through \"abc\"");
    assert!(a.left_out.contains(&id("aab")) && !a.merge_loop.contains(&id("aab")), "never formed");
    assert!(!a.to_id.contains(&id("abc")) && a.to_id.contains(&id("ab")));
}

#[test]
fn files_it_cannot_serve_stay_on_the_tokenizers_crate() {
    let metaspace = json(false, true).replace(r#""pre_tokenizer":{"type":"Sequence""#, r#""pre_tokenizer":{"type":"Metaspace","x":{"type":"Sequence""#);
    assert!(plan::read(&metaspace).is_err() || metaspace == json(false, true));
    let lookbehind = json(false, true).replace(r"\\p{N}{1,3}", r"(?<=a)b");
    let err = plan::read(&lookbehind).and_then(|p| super::pretokenize::Pretokenizer::new(&p.stages).map(|_| ())).err().unwrap();
    assert!(err.contains("look-around"), "{err}");
    let tok = TokenCounter::from_hf_json_with(&lookbehind, 0, SpecialTokens::Text, true, EngineChoice::Auto).unwrap();
    let (engine, why) = tok.engine_info();
    assert_eq!(engine, "huggingface");
    assert!(why.contains("look-around"), "{why}");
    let wordlevel = TokenCounter::from_hf_json(super::super::tests::TINY_HF, 0).unwrap();
    assert!(wordlevel.engine_info().1.contains("WordLevel"), "{}", wordlevel.engine_info().1);
}

#[test]
fn the_disk_cache_round_trips_and_ignores_a_damaged_file() {
    let dir = std::env::temp_dir().join(format!("ctxfast-bpe-test-{}", std::process::id()));
    let text = json(true, true);
    let p = plan::read(&text).unwrap();
    let built = automaton::build(&p).unwrap();
    let path = disk_cache::store_in(&dir, &text, &built).unwrap();
    let back = disk_cache::load_from(&dir, &text, &p).unwrap();
    assert_eq!((back.to_id, back.left_out, back.merge_loop), (built.to_id.clone(), built.left_out.clone(), built.merge_loop.clone()));
    assert!(disk_cache::load_from(&dir, &json(false, true), &p).is_none(), "another file's key");
    let mut data = std::fs::read(&path).unwrap();
    let last = data.len() - 1;
    data[last] ^= 1;
    std::fs::write(&path, &data).unwrap();
    assert!(disk_cache::load_from(&dir, &text, &p).is_none(), "a flipped bit");
    std::fs::write(&path, &data[..40]).unwrap();
    assert!(disk_cache::load_from(&dir, &text, &p).is_none(), "a truncated file");
    let _ = std::fs::remove_dir_all(&dir);
}

