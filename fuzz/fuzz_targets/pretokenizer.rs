//! Arbitrary text through the hand-written o200k and cl100k scanners (`tokenize::scan`) and
//! through the regexes they replace (bpe-openai's pre-tokenizer): the pieces must be the same.
//! The bytes are read as UTF-8, invalid sequences replaced, so every input is a text.
#![no_main]

use ctxfast::tokenize::scan::{pieces, Pattern};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for (pattern, tok) in [(Pattern::O200k, bpe_openai::o200k_base()), (Pattern::Cl100k, bpe_openai::cl100k_base())] {
        let ours: Vec<&str> = pieces(pattern, &text).collect();
        let theirs: Vec<&str> = tok.split(&text).collect();
        assert_eq!(ours, theirs, "{pattern:?} splits {text:?} differently");
    }
});
