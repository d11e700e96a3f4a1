//! Arbitrary bytes as a saved window (`Window::from_json`). Input: JSON state, optionally
//! followed by a NUL byte and operation bytes (decoded with `arbitrary`); without them a fixed
//! script runs (why / mark_stale / rewrite / digest / discard on the state's keys, admits, fits,
//! a round trip). A state must be refused, or be consistent (`ctxfast_fuzz::consistency`, F9:
//! one entry per key, at most one current turn, balanced ledger, reserve < limit, unique ids)
//! and then survive every operation with the window's invariants holding.
//!
//! CTXFAST_FUZZ_STATE=valid treats inconsistent states as refused (as F9's validation will);
//! CTXFAST_FUZZ_STATE=lenient checks only that nothing panics.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use ctxfast::window::Window;
use ctxfast_fuzz::{admit_loaded, script, Op};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (json, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(mut w) = Window::from_json(json) else { return };
    let Some(mut d) = admit_loaded(&w) else { return };
    let ops = if rest.is_empty() {
        script(d.keys.len())
    } else {
        Vec::<Op>::arbitrary_take_rest(Unstructured::new(rest)).unwrap_or_default()
    };
    d.run(&mut w, &ops);
});
