//! The scanners against the regex they replace (bpe-openai's pre-tokenizer): the same pieces on
//! the agreement corpora, on hand-picked traps and on seeded random text mixing scripts,
//! whitespace runs, digits, contractions, marks and emoji.

use super::{classes, pieces, Pattern};

fn regex_pieces(pattern: Pattern, text: &str) -> Vec<&str> {
    let tok = match pattern {
        Pattern::O200k => bpe_openai::o200k_base(),
        Pattern::Cl100k => bpe_openai::cl100k_base(),
    };
    tok.split(text).collect()
}

fn same(text: &str) {
    for pattern in [Pattern::O200k, Pattern::Cl100k] {
        let ours: Vec<&str> = pieces(pattern, text).collect();
        let theirs = regex_pieces(pattern, text);
        if ours != theirs {
            let at = ours.iter().zip(&theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len()));
            let lo = at.saturating_sub(2);
            panic!(
                "{pattern:?} differs at piece {at} of {text:?}:\n  ours   {:?}\n  regex  {:?}",
                &ours[lo..(at + 3).min(ours.len())],
                &theirs[lo..(at + 3).min(theirs.len())]
            );
        }
    }
}

#[test]
fn the_class_table_is_built_from_the_unicode_tables() {
    assert!(classes::table_is_built());
}

#[test]
fn traps() {
    let cases = [
        "", " ", "  ", "a", "don't", "DON'T", "I'm", "we'LL", "'s", "'S", "'ſ", "x'ſ", "'re", "'x", "''s",
        "hello world", " hello", "  hello", "\thello", "\u{a0}hello", "hello  ", "hello \n", "a\n\n b", "a \n \n b",
        "a\r\nb", "\n", "\r\n\r\n", " \n", "\n ", "x  \t y", "end   ", "1234567", "12 345", "१२३४", "½²",
        "!!!", " !!!", "!!!\n\n", "a/b", "!/\n/", " //\n", "foo.bar()", "(hello", "--flag=value",
        "CamelCaseWord", "HTTPServer", "iPhone", "ABC def", "ÀÉÎ", "straße", "ǅungla", "ʰello",
        "e\u{301}cole", "\u{301}e", "\u{301}\u{301}", "a\u{301}B\u{301}c", "!\u{301}", " \u{301}a", "ABC\u{301}",
        "日本語のテキスト", "中文，标点。", "한국어 텍스트", "العربية", "עברית", "ไทย", "🙂🙂 🎉", "👩‍👩‍👧",
        "x\u{200b}y", "\u{3000}全角", "\u{2028}line", "\u{85}next", "tab\u{b}vt\u{c}ff", "\u{1c}\u{1d}\u{1e}\u{1f}",
        "ｆｕｌｌｗｉｄｔｈ", "Ⅻ", "𝐀𝐁𝐂", "$100.00", "email@example.com", "{\"key\": [1, 2, 3]}", "    def f(x):\n        return x\n",
    ];
    for case in cases {
        same(case);
    }
}

#[test]
fn the_agreement_corpora() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpora");
    let mut read = 0;
    for name in ["pride_and_prejudice.txt", "wagahai.txt"] {
        let Ok(text) = std::fs::read_to_string(dir.join(name)) else { continue };
        for chunk in text.as_bytes().chunks(64 * 1024).filter_map(|c| std::str::from_utf8(c).ok()) {
            same(chunk);
        }
        same(&text);
        read += 1;
    }
    assert_eq!(read, 2, "the corpora under {}", dir.display());
    // Code: this crate's own sources and the Python package's.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stack = vec![root.join("rust"), root.join("python/ctxfast")];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                same(&text);
                files += 1;
            }
        }
    }
    assert!(files > 50);
}

/// A small seeded generator (xorshift): the fuzz is reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

const ATOMS: &[&str] = &[
    "a", "Z", "word", "Word", "WORD", "ab", "'", "'s", "'S", "'ll", "'Re", "'ve", "'d", "'m", "'t", "'ſ", " ", "  ", "\t",
    "\n", "\r", "\r\n", "\u{a0}", "\u{3000}", "\u{2028}", "\u{85}", "0", "7", "42", "1234", "٣", "½", "Ⅻ", "!", "?", ".", ",",
    "/", "//", "-", "_", "(", ")", "{", "}", "\"", "#", "@", "$", "%", "&", "*", "+", "=", "<", ">", "|", "\\", "~", "`",
    "é", "É", "ß", "ǅ", "ʰ", "\u{301}", "\u{300}", "\u{0903}", "日", "本", "カ", "ー", "한", "ㄱ", "ا", "ب", "א", "ไ", "ि",
    "🙂", "🎉", "\u{200d}", "\u{fe0f}", "\u{200b}", "𝐀", "ｆ", "Ω", "ω", "ϑ", "ꙮ", "\u{e000}", "\u{10ffff}", "\u{1f}", "\u{7f}",
];

#[test]
fn random_text() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut buf = String::new();
    for _ in 0..200_000 {
        buf.clear();
        let n = 1 + rng.next() % 24;
        for _ in 0..n {
            buf.push_str(rng.pick(ATOMS));
        }
        same(&buf);
    }
}

#[test]
fn random_code_points() {
    // Any scalar value, weighted towards the planes text uses.
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut buf = String::new();
    for _ in 0..100_000 {
        buf.clear();
        for _ in 0..(1 + rng.next() % 16) {
            let r = rng.next();
            let c = match r % 4 {
                0 => (r >> 8) % 0x80,
                1 => (r >> 8) % 0x800,
                2 => (r >> 8) % 0x3_0000,
                _ => (r >> 8) % 0x11_0000,
            } as u32;
            if let Some(ch) = char::from_u32(c) {
                buf.push(ch);
            }
        }
        same(&buf);
    }
}

/// The pair table of a pattern's encoding.
fn pairs_of(p: Pattern) -> &'static super::Pairs {
    match p {
        Pattern::O200k => crate::tokenize::Encoding::O200kBase.pairs(),
        Pattern::Cl100k => crate::tokenize::Encoding::Cl100kBase.pairs(),
    }
}

#[test]
fn the_pair_table_counts_every_piece_of_one_or_two_bytes_as_the_bpe_does() {
    for (enc, p) in [(crate::tokenize::Encoding::O200kBase, Pattern::O200k), (crate::tokenize::Encoding::Cl100kBase, Pattern::Cl100k)] {
        let bpe = &enc.tokenizer().bpe;
        let pairs = pairs_of(p);
        let mut ones = 0;
        for a in 0..=255u8 {
            assert_eq!(pairs.count(a, 0, 1), bpe.count(&[a]), "{enc:?} byte {a}");
            for b in 0..=255u8 {
                let n = bpe.count(&[a, b]);
                assert_eq!(pairs.count(a, b, 2), n, "{enc:?} bytes {a} {b}");
                ones += usize::from(n == 1);
            }
        }
        assert!(ones > 1000, "{enc:?}: {ones} pairs are tokens");
    }
}

/// Throughput of the pieces alone and of the cached count (`cargo test --release -- --ignored
/// --nocapture scan_speed`): not a timed test, a probe for profiling.
#[test]
#[ignore]
fn scan_speed() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpora/pride_and_prejudice.txt");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mb = text.len() as f64 / 1e6;
    let time = |label: &str, f: &dyn Fn() -> usize| {
        let mut best = f64::MAX;
        let mut n = 0;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            n = f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        eprintln!("{label}: {:.0} MB/s ({n})", mb / best);
    };
    let bpe = &bpe_openai::o200k_base().bpe;
    time("regex split", &|| bpe_openai::o200k_base().split(&text).count());
    time("scan", &|| pieces(Pattern::O200k, &text).count());
    time("scan + memo count", &|| super::count(Pattern::O200k, &text, pairs_of(Pattern::O200k), |p| bpe.count(p)));
    let misses = std::cell::Cell::new(0usize);
    super::count(Pattern::O200k, &text, pairs_of(Pattern::O200k), |p| {
        misses.set(misses.get() + 1);
        bpe.count(p)
    });
    let distinct: std::collections::HashSet<&str> = pieces(Pattern::O200k, &text).collect();
    eprintln!("warm misses {} of {} pieces, {} distinct", misses.get(), pieces(Pattern::O200k, &text).count(), distinct.len());
    time("scan + bpe count", &|| pieces(Pattern::O200k, &text).map(|p| bpe.count(p.as_bytes())).sum());
}

/// The cached count alone, many times over (`perf record` or cachegrind on this test). Reads
/// `CTXFAST_PROFILE_TEXT` (a file; default Pride and Prejudice) with `CTXFAST_PROFILE_PATTERN`
/// (`cl100k`; default o200k), `CTXFAST_PROFILE_PASSES` times (default 40) after one warming pass.
#[test]
#[ignore]
fn memo_profile() {
    let default = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpora/pride_and_prejudice.txt");
    let path = std::env::var_os("CTXFAST_PROFILE_TEXT").map_or(default, std::path::PathBuf::from);
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let cl100k = std::env::var("CTXFAST_PROFILE_PATTERN").is_ok_and(|p| p == "cl100k");
    let (pattern, bpe) = if cl100k {
        (Pattern::Cl100k, &bpe_openai::cl100k_base().bpe)
    } else {
        (Pattern::O200k, &bpe_openai::o200k_base().bpe)
    };
    let passes: usize = std::env::var("CTXFAST_PROFILE_PASSES").ok().and_then(|p| p.parse().ok()).unwrap_or(40);
    let pieces = super::pieces(pattern, &text).count();
    super::count(pattern, &text, pairs_of(pattern), |p| bpe.count(p));
    // CTXFAST_PROFILE_FLUSH=MB: before each pass, write that much (untimed; 64 MB if not a
    // number), as another library's work between two counts would, so the piece cache starts
    // from memory.
    let flush_mb: usize = std::env::var("CTXFAST_PROFILE_FLUSH").ok().map_or(0, |v| v.parse().unwrap_or(64));
    let mut flush = vec![0u8; flush_mb << 20];
    let mut took = std::time::Duration::ZERO;
    let mut n = 0;
    let misses = std::cell::Cell::new(0usize);
    for pass in 0..passes {
        flush.iter_mut().step_by(64).for_each(|b| *b = b.wrapping_add(pass as u8));
        let t = std::time::Instant::now();
        n += super::count(pattern, &text, pairs_of(pattern), |p| {
            misses.set(misses.get() + 1);
            bpe.count(p)
        });
        took += t.elapsed();
    }
    let slots = super::memo::with(pattern, |m| m.map(|m| m.slots()));
    eprintln!("{:.0} MB/s ({n} tokens, {pieces} pieces a pass, {} missed; cache slots short, long: {slots:?})", passes as f64 * text.len() as f64 / 1e6 / took.as_secs_f64(), misses.get() / passes.max(1));
}


#[test]
fn a_block_that_ends_the_text_closes_its_last_piece() {
    // The walk goes by ends; without the text's end among them the last piece took a block of
    // its own (three blocks for a 19-token sentence instead of two).
    for (text, end) in [("ab cd", 5), ("x = 1;\n", 7), ("The quick brown fox.", 20)] {
        let starts = super::blocks::o200k(text.as_bytes(), 0);
        assert_eq!(starts.settled, end, "{text:?}");
        assert_eq!(starts.bits >> end, 1, "{text:?}: the end closes the last piece");
        assert_eq!(super::blocks::cl100k(text.as_bytes(), 0).bits >> end, 1, "{text:?}");
    }
    // A block that does not reach the end, or ends exactly on its 64th byte, has no such bit.
    let long = "word ".repeat(20);
    assert_eq!(super::blocks::o200k(long.as_bytes(), 0).bits >> 63, 0);
    let exact = "word ".repeat(12) + "abcd";
    assert_eq!(super::blocks::o200k(exact.as_bytes(), 0).settled, 64);
}

/// Characters that each play a part in the block rules (letters of both cases and of the
/// contractions, a digit, the whitespace kinds, symbols, the tail's slash, the apostrophe, a
/// letter and a space past ASCII, and a curly quote and thin space, whose three bytes a block
/// reads as one symbol or leaves alone).
const BLOCK_ALPHABET: [&str; 17] =
    ["a", "B", "s", "r", "E", "l", "1", " ", "\t", "\n", ".", "/", "'", "\u{e9}", "\u{a0}", "\u{2019}", "\u{2009}"];

#[test]
fn every_short_text_of_the_block_alphabet() {
    let k = BLOCK_ALPHABET.len();
    for len in 1..=4u32 {
        for mut code in 0..k.pow(len) {
            let mut text = String::new();
            for _ in 0..len {
                text.push_str(BLOCK_ALPHABET[code % k]);
                code /= k;
            }
            same(&text);
        }
    }
}

#[test]
fn long_texts_of_the_block_alphabet() {
    // Past a block's 64 bytes, so its edge (what it leaves unsettled) is crossed everywhere.
    let mut rng = Rng(0x5EED_B10C);
    for round in 0..4000 {
        let len = 40 + (rng.next() % 120) as usize;
        // Some texts use few characters, so long runs of one kind reach the edge.
        let kinds = 2 + (rng.next() % 15) as usize;
        let offset = (round * 7) % BLOCK_ALPHABET.len();
        let mut text = String::new();
        for _ in 0..len {
            text.push_str(BLOCK_ALPHABET[(offset + (rng.next() as usize % kinds)) % BLOCK_ALPHABET.len()]);
        }
        same(&text);
    }
}

#[test]
fn counts_equal_the_bpe_of_the_regex_pieces() {
    // The count walks a block's pieces by length (one byte, two, up to eight, longer), not in order:
    // every length class, the block's edges and the cache's reuse across texts, against the BPE
    // of the regex's pieces. Longer words than the block alphabet's give pieces of 9-24 bytes
    // and past 24 (the long table's inline and digest keys).
    let words = ["abcdefghij", "          ", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefgh", "\n\n\n        ", "'re", "1234567"];
    let mut rng = Rng(0xC0_0A75);
    for round in 0..1500 {
        let len = 20 + (rng.next() % 200) as usize;
        let mut text = String::new();
        for _ in 0..len {
            let r = rng.next() as usize;
            if r % 5 == 0 {
                text.push_str(words[(r / 5) % words.len()]);
            } else {
                text.push_str(BLOCK_ALPHABET[(r / 5) % BLOCK_ALPHABET.len()]);
            }
        }
        for pattern in [Pattern::O200k, Pattern::Cl100k] {
            let bpe = match pattern {
                Pattern::O200k => &bpe_openai::o200k_base().bpe,
                Pattern::Cl100k => &bpe_openai::cl100k_base().bpe,
            };
            let expected: usize = regex_pieces(pattern, &text).iter().map(|p| bpe.count(p.as_bytes())).sum();
            let counted = super::count(pattern, &text, pairs_of(pattern), |p| bpe.count(p));
            assert_eq!(counted, expected, "{pattern:?} round {round}: {text:?}");
        }
    }
}

#[test]
fn space_runs_after_a_newline_of_every_length_and_offset() {
    // What follows a run's last newline is found by filling the spaces down from the run's end in
    // doubling steps: runs of every length up to past a block, ending on a word, a newline or the
    // text's end, at every offset in the block.
    for lead in 0..66 {
        for spaces in 0..70 {
            for end in ["x", "\n", "\n  y", ""] {
                same(&format!("{}\n{}{end}", "a".repeat(lead), " ".repeat(spaces)));
            }
        }
    }
}
