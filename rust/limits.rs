//! The documented limits. Every count, window and sum ctxfast accepts is checked against these,
//! so no arithmetic on tokens can wrap, saturate silently or hang: larger inputs are refused with
//! an error naming the limit.

use crate::error::{CtxError, CtxResult};
use crate::fmt::thousands;

/// The largest token count of one unit (a segment's `tokens=`, a counter's answer) and the
/// largest window: 2⁴⁸ − 1, about 2.8 × 10¹⁴. No real text comes near it (it would be a petabyte),
/// and sums of 2¹⁴ such counts still fit in `MAX_TOTAL` with room to spare.
pub const MAX_COUNT: usize = (1 << 48) - 1;

/// The largest total of one request, or of what one window holds: 2⁶². Every sum the ladder and
/// the window form is at most the request's starting total, so checking that one sum keeps every
/// later figure (and every signed difference against the ceiling) in range.
pub const MAX_TOTAL: usize = 1 << 62;

/// The deepest nesting accepted in a policy dict or a provider payload (serde_json's own limit).
pub const MAX_DEPTH: usize = 128;

/// `n` as a count, or an error naming `what` and the limit.
pub fn check_count(n: usize, what: &str) -> CtxResult<usize> {
    if n <= MAX_COUNT {
        Ok(n)
    } else {
        Err(CtxError::invalid(format!("{what} is {n}, above the largest count ctxfast accepts ({})", thousands(MAX_COUNT))))
    }
}

/// The sum of `counts`, or an error when it passes `MAX_TOTAL`.
pub fn checked_total<I: IntoIterator<Item = usize>>(counts: I, what: &str) -> CtxResult<usize> {
    let mut total: usize = 0;
    for n in counts {
        total = total.checked_add(n).filter(|t| *t <= MAX_TOTAL).ok_or_else(|| too_large(what))?;
    }
    Ok(total)
}

/// A total as a signed figure, for differences against a ceiling. Totals are at most `MAX_TOTAL`
/// (checked where they are formed), so this never saturates in practice.
pub fn signed(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A signed figure back as a total; negative figures are 0.
pub fn unsigned(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// `a + b` within `MAX_TOTAL`, or an error.
pub fn add_total(a: usize, b: usize, what: &str) -> CtxResult<usize> {
    a.checked_add(b).filter(|t| *t <= MAX_TOTAL).ok_or_else(|| too_large(what))
}

fn too_large(what: &str) -> CtxError {
    CtxError::invalid(format!("{what} passes {} tokens, the largest total ctxfast accepts", thousands(MAX_TOTAL)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_refuse_instead_of_wrapping() {
        assert!(check_count(MAX_COUNT, "x").is_ok());
        assert!(check_count(MAX_COUNT + 1, "x").is_err());
        assert_eq!(checked_total([1, 2, 3], "r").ok(), Some(6));
        assert!(checked_total([usize::MAX, 2], "r").is_err());
        assert!(checked_total([MAX_TOTAL, 1], "r").is_err());
        assert!(add_total(MAX_TOTAL, 0, "w").is_ok());
        assert!(add_total(MAX_TOTAL, 1, "w").is_err());
    }
}
