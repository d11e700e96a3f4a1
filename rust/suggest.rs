//! "Did you mean …": the one place that picks the known name a typo most likely meant, for every
//! error about an unknown name (presets, layers, encodings, policy fields, orders, actions,
//! filters), so each suggests the same way.

/// Edits between `a` and `b` (insert, delete, substitute, or swap two neighbours), ignoring case:
/// "agnet" is one swap from "agent", "oder" one insert from "order".
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    // Three rows of the optimal-string-alignment table: the one two back is what a swap reads.
    let mut two_back: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(two_back[j - 2] + 1);
            }
            cur[j] = best;
        }
        two_back = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

/// The known name `name` most likely meant: the only known name it begins ("lowest" for
/// "lowest_score"), else the nearest within two edits (one for names of three characters or
/// fewer, where two edits reach almost anything). None when nothing is that close: a wrong
/// guess misleads more than no guess. Ties go to the earlier known name.
pub fn closest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    let lower = name.to_lowercase();
    let chars = lower.chars().count();
    if chars == 0 {
        return None;
    }
    if chars >= 3 {
        let mut prefixed = known.iter().filter(|k| k.to_lowercase().starts_with(&lower));
        if let (Some(k), None) = (prefixed.next(), prefixed.next()) {
            return Some(k);
        }
    }
    let limit = if chars <= 3 { 1 } else { 2 };
    known
        .iter()
        .map(|k| (distance(&lower, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// ` (did you mean "agent"?)` for an error message, or "" when no known name is close.
pub fn hint(name: &str, known: &[&str]) -> String {
    match closest(name, known) {
        Some(k) => format!(" (did you mean {k:?}?)"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_the_name_they_meant() {
        assert_eq!(distance("agnet", "agent"), 1);
        assert_eq!(distance("oder", "order"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("Retrieved", "retrieved"), 0);
        let presets = ["context_window", "troubleshooting", "seven_tier", "ranked", "agent"];
        assert_eq!(closest("agnet", &presets), Some("agent"));
        assert_eq!(closest("seven-tier", &presets), Some("seven_tier"));
        assert_eq!(closest("troubleshoot", &presets), Some("troubleshooting"));
        assert_eq!(closest("nope", &presets), None);
        assert_eq!(closest("", &presets), None);
        let encodings = ["o200k_base", "cl100k_base"];
        assert_eq!(closest("p50k_base", &encodings), None, "a real but unsupported encoding gets no guess");
        assert_eq!(closest("o200k", &encodings), Some("o200k_base"));
        assert_eq!(closest("cl100k-base", &encodings), Some("cl100k_base"));
        assert_eq!(closest("dro", &["drop", "truncate", "digest"]), Some("drop"));
        assert_eq!(closest("xy", &["drop", "truncate", "digest"]), None);
        let orders = ["oldest", "newest", "lowest_score", "largest", "rank"];
        assert_eq!(closest("lowest", &orders), Some("lowest_score"), "a unique prefix beats a near miss");
        assert_eq!(closest("olde", &orders), Some("oldest"));
        assert_eq!(hint("agnet", &presets), " (did you mean \"agent\"?)");
        assert_eq!(hint("zzz", &presets), "");
    }
}
