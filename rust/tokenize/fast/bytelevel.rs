//! GPT-2's byte-level alphabet: how a byte-level BPE file writes raw bytes as printable
//! characters in its vocabulary and merges.
//!
//! Printable Latin-1 bytes stand for themselves; the other 68 (controls, space, NBSP, soft
//! hyphen...) are given the characters U+0100 onwards, in byte order. So `Ġ` (U+0120) is a space
//! and `Ċ` (U+010A) a newline. The mapping is a bijection, so a vocabulary string decodes to at
//! most one byte string, and a character outside the alphabet means the file is not byte-level.

/// Whether byte `b` is written as the character of the same number.
fn stands_for_itself(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The character each byte is written as.
pub fn alphabet() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        table[b as usize] = if stands_for_itself(b) {
            char::from(b)
        } else {
            let c = char::from_u32(next).unwrap_or('\0');
            next += 1;
            c
        };
    }
    table
}

/// Decodes vocabulary strings to the bytes they stand for.
pub struct ByteLevel {
    to_byte: rustc_hash::FxHashMap<char, u8>,
}

impl ByteLevel {
    pub fn new() -> Self {
        let to_byte = alphabet().iter().enumerate().map(|(b, &c)| (c, b as u8)).collect();
        Self { to_byte }
    }

    /// The bytes `token` stands for; None when a character is outside the alphabet.
    pub fn decode(&self, token: &str) -> Option<Vec<u8>> {
        token.chars().map(|c| self.to_byte.get(&c).copied()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_gpt2_alphabet() {
        let bl = ByteLevel::new();
        assert_eq!(bl.decode("Ġhello"), Some(b" hello".to_vec()));
        assert_eq!(bl.decode("Ċ"), Some(b"\n".to_vec()));
        assert_eq!(bl.decode("Ã©"), Some("é".as_bytes().to_vec()));
        assert_eq!(bl.decode("a b"), None, "a raw space is not in the alphabet");
        let all: std::collections::HashSet<char> = alphabet().into_iter().collect();
        assert_eq!(all.len(), 256, "one character per byte");
    }
}
