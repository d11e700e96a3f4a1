//! Arbitrary text through the fast bpe engine and through the tokenizers crate, on the same
//! byte-level vocabulary (`fuzz/data/bytelevel_bpe.json`: NFC, chained Splits, ignore_merges,
//! added tokens, a token formed through a later one, a token no merge reaches): the ids and the
//! count must be the same, whatever the text. The first byte picks how special tokens are read.
#![no_main]

use std::sync::OnceLock;

use ctxfast::tokenize::specials::SpecialTokens;
use ctxfast::tokenize::{EngineChoice, TokenCounter};
use libfuzzer_sys::fuzz_target;

const VOCABULARY: &str = include_str!("../data/bytelevel_bpe.json");

fn engines(mode: SpecialTokens) -> &'static (TokenCounter, TokenCounter) {
    static TEXT: OnceLock<(TokenCounter, TokenCounter)> = OnceLock::new();
    static MATCHED: OnceLock<(TokenCounter, TokenCounter)> = OnceLock::new();
    let cell = if mode == SpecialTokens::Text { &TEXT } else { &MATCHED };
    cell.get_or_init(|| {
        let load = |choice| TokenCounter::from_hf_json_with(VOCABULARY, 0, mode, true, choice).expect("the vocabulary loads");
        let fast = load(EngineChoice::Auto);
        assert_eq!(fast.engine_info().0, "bpe", "{}", fast.engine_info().1);
        (fast, load(EngineChoice::HuggingFace))
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let mode = if first & 1 == 0 { SpecialTokens::Text } else { SpecialTokens::Matched };
    let text = String::from_utf8_lossy(rest);
    let (fast, crate_engine) = engines(mode);
    let want = crate_engine.encode(&text).expect("the tokenizers crate encodes");
    assert_eq!(fast.encode(&text).expect("the fast engine encodes"), want, "{text:?}");
    assert_eq!(fast.count_uncached(&text).expect("counts"), want.len());
});
