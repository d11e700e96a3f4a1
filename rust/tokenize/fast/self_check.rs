//! The fast engine's load-time check: its ids must equal the Hugging Face engine's on a set of
//! texts chosen to reach every rule it reimplements, or the file stays on the Hugging Face engine.
//!
//! The texts: fixed ones for the pre-tokenizer (contractions and case folding, digit runs, every
//! kind of space and line break, scripts with combining marks, text NFC changes), the added
//! tokens inside text, every token the automaton leaves out with neighbours on both sides, and
//! strings of random vocabulary tokens (a fixed seed, so a load is repeatable).

/// Texts whose pieces differ most between regex engines and normalizers.
pub const FIXED: &[&str] = &[
    "Hello, world! I'm sure you've heard they'll say we'd HAVE IT'S DON'T 'S 'ſ 'K.",
    "  leading and trailing spaces   ",
    "tabs\tand\t\tnewlines\n\n\nand\r\nwindows\rline ends \n  \n\t \n",
    "nbsp\u{a0}here, ideographic\u{3000}space, line\u{2028}separator, next\u{85}line, em\u{2003}space",
    "zero\u{200b}width, joiner\u{200d}, bom\u{feff}, mongolian\u{180e}separator, ogham\u{1680}mark",
    "Numbers: 1 12 123 1234 12345 123456 3.14159 1,000,000 ١٢٣٤ ௧௨௩ ½ ² Ⅻ",
    "Tôi không biết việc này sẽ được giải quyết như thế nào. Người Việt Nam.",
    "İstanbul'da ığdır şehri, Çağrı ÖZGÜR. Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "これはテストです。彼は走っている。東京都に住んでいます。カタカナ、ひらがな",
    "中文测试：你好，世界！今天天气很好。「引用」《书名》",
    "한국어 테스트 문장입니다. 안녕하세요! 한",
    "العربية: مرحبا بالعالم، هذا اختبار. עברית: שלום עולם",
    "हिन्दी में परीक्षण। தமிழ் சோதனை. ภาษาไทยทดสอบ",
    "e\u{301}cole, A\u{30a}ngstro\u{308}m, \u{212b}, caf\u{e9}, n\u{303}, \u{1100}\u{1161}\u{11a8}",
    "emoji 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🦀🦀🦀 ☃ ✓",
    "ﬁnancial ﬂow ﬀ ﬃ ß SS ẞ Σίσυφος ΣΊΣΥΦΟΣ Кириллица",
    "fn main() {\n    let x: Vec<u32> = (0..10).map(|i| i * 2).collect();\n\tprintln!(\"{x:?}\");\n}\n",
    "def f(a, b=2, *args, **kw):\n    return {'a': a, \"b\": [b, None, True]}  # comment\n",
    "{\"key\": \"value\", \"list\": [1, 2.5, -3e10, null], \"nested\": {\"a\": {\"b\": \"c\"}}}",
    "https://example.com/path?q=1&r=two#frag user@example.org C:\\Windows\\System32",
    "| col | col2 |\n|-----|------|\n| **bold** | _it_ |\n> quote\n- item\n1. item",
    "<|endoftext|> <|im_start|>user\nhi<|im_end|> <s> </s> [INST] [/INST] <|eot_id|> <｜begin▁of▁sentence｜>",
    "!!!??? ... --- === *** ### $$$ %%% ^^^ &&& ((( ))) ''' \"\"\" ``` ~~~",
    "a\u{0}b\u{1}c\u{7f}d\u{9f}e \u{10ffff} \u{fffd}",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "                                                                        x",
    "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
    "0000000000000000000000000000000000000000000000000001111111111111111112222",
];

/// A small fixed-seed generator (xorshift64*): repeatable texts without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % below.max(1)
    }
}

/// The texts to compare on: `FIXED`, the `added` contents inside text, each `left_out` token
/// between random tokens, and strings of random tokens (`token(i)` for i below `n`).
pub fn texts(n: usize, token: &dyn Fn(usize) -> Vec<u8>, left_out: &[Vec<u8>], added: &[String]) -> Vec<String> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out: Vec<String> = FIXED.iter().map(|s| s.to_string()).collect();
    let random = |rng: &mut Rng, k: usize| -> Vec<u8> { (0..k).flat_map(|_| token(rng.next(n))).collect() };
    let inside = left_out.iter().map(Vec::as_slice).chain(added.iter().take(64).map(|a| a.as_bytes()));
    for t in inside {
        let mut s = random(&mut rng, 2);
        s.extend_from_slice(t);
        s.extend(random(&mut rng, 2));
        out.push(String::from_utf8_lossy(&s).into_owned());
    }
    for round in 0..200 {
        let s = random(&mut rng, 4 + round % 40);
        out.push(String::from_utf8_lossy(&s).into_owned());
    }
    out
}

/// The first text where `fast` and `reference` disagree, described; Ok when none does.
pub fn compare(texts: &[String], fast: &dyn Fn(&str) -> Vec<u32>, reference: &dyn Fn(&str) -> Result<Vec<u32>, String>) -> Result<(), String> {
    for t in texts {
        let want = reference(t)?;
        let got = fast(t);
        if got != want {
            let at = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
            let short: String = t.chars().take(60).collect();
            return Err(format!(
                "its ids differ from the Hugging Face engine's on {short:?} at token {at} ({} tokens against {})",
                got.len(),
                want.len()
            ));
        }
    }
    Ok(())
}
