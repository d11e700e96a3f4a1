//! A window built through its public constructor, then a sequence of operations (admit, fit,
//! discard, mark_stale, rewrite, digest, why, to_json/from_json round trip); the window's
//! invariants are checked after each, and after a round trip the loaded copy must answer and
//! evolve exactly as the original. See `ctxfast_fuzz::Driver`.
#![no_main]

use arbitrary::Arbitrary;
use ctxfast_fuzz::{Driver, Op, WindowSpec};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    spec: WindowSpec,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let Some(mut w) = input.spec.build() else { return };
    let mut d = Driver::new(true);
    d.check(&w);
    d.run(&mut w, &input.ops);
});
