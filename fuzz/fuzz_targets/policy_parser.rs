//! Arbitrary bytes as a policy: TOML text (`from_toml`) and, when they parse as JSON, the dict
//! form (`from_value`). Never panics; an error is always InvalidArgument; whatever parses is
//! valid-shaped, round-trips through `to_value` (and through TOML text), and `describe`s.
#![no_main]

use ctxfast::engine::policy_format::{describe, from_toml, from_value, to_value};
use ctxfast::engine::{Layer, Policy};
use ctxfast::error::{CtxError, CtxResult};
use libfuzzer_sys::fuzz_target;

fn check(parsed: CtxResult<(Option<String>, Policy)>) {
    let (name, p) = match parsed {
        Ok(x) => x,
        Err(CtxError::InvalidArgument(_)) => return,
        Err(e) => panic!("a policy parse failed with {e:?}, not InvalidArgument"),
    };
    for l in Layer::PROTECTED.iter() {
        assert!(p.protected.contains(l), "parsed policy does not protect {l:?}");
    }
    for r in &p.rungs {
        assert!(!r.layers.intersects(p.protected), "rung {:?} draws from a protected layer", r.name);
    }
    let v = to_value(name.as_deref(), &p);
    let back = from_value(&v);
    assert_eq!(back, Ok((name.clone(), p.clone())), "from_value(to_value(p)) != p for {v}");
    // The TOML form of the dict reads back too.
    let text = toml::to_string(&v).expect("a policy's dict form is TOML-serialisable");
    assert_eq!(from_toml(&text), Ok((name.clone(), p.clone())), "TOML round trip differs:\n{text}");
    let table = describe(name.as_deref(), &p);
    assert!(table.ends_with('\n'));
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        check(from_toml(text));
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        check(from_value(&v));
    }
});
