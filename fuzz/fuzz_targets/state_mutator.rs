//! A valid window (built from fuzz input through the API) saved as JSON, then one or more
//! structured mutations of that JSON (set a field to an edge value, copy one field over another,
//! remove a field or an array element, duplicate an element), loaded with `Window::from_json`
//! and operated on. The same contract (and CTXFAST_FUZZ_STATE modes) as `state_loader`: refuse, or be
//! consistent and behave.
#![no_main]

use arbitrary::Arbitrary;
use ctxfast::window::Window;
use ctxfast_fuzz::{admit_loaded, build_window, mutate, Mutation, Op, WindowSpec};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    spec: WindowSpec,
    build: Vec<Op>,
    mutations: Vec<Mutation>,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let Some(w) = build_window(&input.spec, &input.build) else { return };
    let mut v = ctxfast_fuzz::state(&w);
    let original = v.clone();
    for m in input.mutations.iter().take(4) {
        mutate(&mut v, &original, m);
    }
    let bytes = serde_json::to_vec(&v).expect("JSON");
    let Ok(mut loaded) = Window::from_json(&bytes) else { return };
    let Some(mut d) = admit_loaded(&loaded) else { return };
    d.run(&mut loaded, &input.ops);
});
