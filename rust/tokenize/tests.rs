use std::time::Instant;

use super::*;
use crate::error::CtxError;

fn o200k() -> Arc<TokenCounter> {
    TokenCounter::shared(Encoding::O200kBase)
}

/// A word-level tokenizer.json small enough to write inline.
const TINY_HF: &str = r#"{
  "version": "1.0", "truncation": {"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0},
  "padding": null, "added_tokens": [], "normalizer": null,
  "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
  "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hello": 1, "world": 2, "!": 3}, "unk_token": "[UNK]"}
}"#;

#[test]
fn known_ids_for_both_encodings() {
    assert_eq!(o200k().encode("hello world").unwrap(), vec![24912, 2375]);
    let cl = TokenCounter::shared(Encoding::Cl100kBase);
    assert_eq!(cl.encode("hello world").unwrap(), vec![15339, 1917]);
}

#[test]
fn unknown_encoding_lists_known_ones() {
    let err = TokenCounter::from_encoding_name("gpt2", None).err().unwrap();
    let msg = err.to_string();
    assert!(msg.contains("gpt2") && msg.contains("o200k_base") && msg.contains("cl100k_base"), "{msg}");
    assert!(!msg.contains("did you mean"), "{msg}");
    let msg = TokenCounter::from_encoding_name("o200k", None).err().unwrap().to_string();
    assert!(msg.contains("unknown encoding \"o200k\" (did you mean \"o200k_base\"?)"), "{msg}");
}

#[test]
fn count_equals_encode_len_and_decode_round_trips() {
    let tok = o200k();
    for text in ["", " ", "日本語のテキスト", "fn main() { println!(\"hi\"); }", "a  \n\n  b\t\t", "👍🏽 ok"] {
        let ids = tok.encode(text).unwrap();
        assert_eq!(tok.count(text).unwrap(), ids.len(), "{text:?}");
        assert_eq!(tok.decode(&ids).unwrap(), text);
    }
}

#[test]
fn cache_serves_second_count() {
    let tok = TokenCounter::new(Engine::Tiktoken(Encoding::O200kBase), 8);
    tok.count("some unit of text").unwrap();
    tok.count("some unit of text").unwrap();
    let info = tok.cache_info();
    assert_eq!((info.hits, info.misses, info.entries, info.capacity), (1, 1, 1, 8));
}

#[test]
fn truncate_is_a_prefix_within_the_limit_on_char_boundaries() {
    let tok = o200k();
    let text = "héllo wörld 日本語 emoji 👍🏽👍🏽 and more words to cut ".repeat(5);
    for max in 0..40 {
        let cut = tok.truncate(&text, max).unwrap();
        assert!(text.starts_with(cut));
        assert!(tok.count(cut).unwrap() <= max, "max {max}: {cut:?}");
    }
    assert_eq!(tok.truncate(&text, 10_000).unwrap(), text);
}

#[test]
fn decode_rejects_ids_outside_the_vocabulary() {
    let err = o200k().decode(&[1, 999_999_999]).err().unwrap();
    assert!(err.to_string().contains("999999999"), "{err}");
}

#[test]
fn pathological_inputs_are_linear() {
    let tok = o200k();
    let cases = [
        "a".repeat(1 << 20),
        " ".repeat(1 << 20),
        "\n".repeat(1 << 20),
        "_".repeat(1 << 20),
        format!("{}x", " ".repeat((1 << 20) - 1)),
        (0..(1usize << 20)).map(|i| (b'a' + ((i * 7919) % 26) as u8) as char).collect::<String>(),
    ];
    for text in &cases {
        let start = Instant::now();
        let n = tok.count_uncached(text).unwrap();
        let secs = start.elapsed().as_secs_f64();
        assert!(n > 0);
        // Generous for a debug build; the release bound (0.1 s) is checked by the benchmarks.
        assert!(secs < 5.0, "{:?}.. took {secs}s", &text[..8]);
    }
}

#[test]
fn count_many_matches_count_in_parallel_and_serial() {
    let tok = o200k();
    let texts: Vec<String> = (0..200).map(|i| format!("unit {i} {}", "word ".repeat(i))).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let want: Vec<usize> = refs.iter().map(|t| tok.count_uncached(t).unwrap()).collect();
    assert_eq!(tok.count_many(&refs, true).unwrap(), want);
    assert_eq!(tok.count_many_serial(&refs, false).unwrap(), want);
}

#[test]
fn approximate_counts_characters() {
    let tok = TokenCounter::approximate(4.0, 0).unwrap();
    assert_eq!(tok.count("").unwrap(), 0);
    assert_eq!(tok.count("abcd").unwrap(), 1);
    assert_eq!(tok.count("abcde").unwrap(), 2);
    assert_eq!(tok.count("日本語の").unwrap(), 1);
    assert_eq!(approximate_tokens("abcdefgh"), 2);
    assert!(tok.encode("x").is_err());
    assert_eq!(tok.truncate("abcdefghij", 2).unwrap(), "abcdefgh");
    assert!(TokenCounter::approximate(0.0, 0).is_err());
    for (cpt, max) in [(0.7, 30), (2.3, 30), (0.35, 60)] {
        let t = TokenCounter::approximate(cpt, 0).unwrap();
        let text = "x".repeat(1000);
        let cut = t.truncate(&text, max).unwrap();
        assert!(t.count(cut).unwrap() <= max, "{cpt} {max}: {}", cut.len());
    }
    assert!(TokenCounter::approximate(f64::NAN, 0).is_err());
}

#[test]
fn huggingface_json_counts_and_ignores_its_truncation() {
    let tok = TokenCounter::from_hf_json(TINY_HF, 16).unwrap();
    // The file says max_length 2; a counter must not truncate.
    assert_eq!(tok.encode("hello world hello !").unwrap(), vec![1, 2, 1, 3]);
    assert_eq!(tok.count("hello world hello !").unwrap(), 4);
    assert_eq!(tok.truncate("hello world hello", 2).unwrap(), "hello world");
    assert_eq!(tok.name(), "huggingface:wordlevel");
    let again = TokenCounter::from_hf_json(&tok.hf_json().unwrap().unwrap(), 0).unwrap();
    assert_eq!(again.count("hello hello").unwrap(), 2);
}

#[test]
fn malformed_tokenizer_json_is_an_error() {
    assert!(matches!(
        TokenCounter::from_hf_json("{not json", 0).err(),
        Some(CtxError::TokenizerLoad(_))
    ));
}

#[test]
fn memoised_counting_equals_the_engine_on_long_texts() {
    let repetitive = "It is a truth universally acknowledged, that a single man in possession of a good fortune. ".repeat(400);
    let mut x: u64 = 7;
    let random: String = (0..40_000)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789+/ \n"[(x >> 58) as usize % 50] as char
        })
        .collect();
    for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
        for text in [&repetitive, &random] {
            assert_eq!(enc.count(text), enc.tokenizer().count(text.as_str()), "{enc:?}");
        }
    }
}
