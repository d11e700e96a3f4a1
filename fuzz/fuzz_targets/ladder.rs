//! `engine::fit` on structured input: segments (any layer, key, score in [0, 1], counts up to
//! and past MAX_COUNT, recoverable/stale, groups, levels, covers, tool calls), a budget with caps,
//! a preset or a small arbitrary rung list, an optional separator and framing. See
//! `ctxfast_fuzz::check_ladder` for the invariants.
#![no_main]

use ctxfast_fuzz::{check_ladder, LadderInput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: LadderInput| {
    check_ladder(&input);
});
