//! Arbitrary text through the hand-written o200k and cl100k scanners (`tokenize::scan`) and
//! through the regexes they replace (bpe-openai's pre-tokenizer): the pieces must be the same.
//! The bytes are read as UTF-8, invalid sequences replaced, so every input is a text. The
//! count through this thread's piece cache (kept across inputs, so keys of every length meet)
//! (and the pair table, for pieces of one or two bytes) must be the sum of the regex's pieces'
//! counts.
#![no_main]

use ctxfast::tokenize::scan::{count, pieces, Pattern};
use ctxfast::tokenize::Encoding;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for (pattern, enc) in [(Pattern::O200k, Encoding::O200kBase), (Pattern::Cl100k, Encoding::Cl100kBase)] {
        let tok = enc.tokenizer();
        let ours: Vec<&str> = pieces(pattern, &text).collect();
        let theirs: Vec<&str> = tok.split(&text).collect();
        assert_eq!(ours, theirs, "{pattern:?} splits {text:?} differently");
        let expected: usize = theirs.iter().map(|p| tok.bpe.count(p.as_bytes())).sum();
        // Pieces of one or two bytes are counted from the encoding's pair table.
        assert_eq!(count(pattern, &text, enc.pairs(), |p| tok.bpe.count(p)), expected, "{pattern:?} counts {text:?} differently");
    }
});
