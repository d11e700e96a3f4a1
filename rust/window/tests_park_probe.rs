//! A timing probe for restoring a parked window, stage by stage (not a test: `--ignored`).
//! `CTXFAST_PARK_SNAPSHOT` and `CTXFAST_PARK_DELTA` name files a real session wrote
//! (`to_bytes()`, `delta_since()`).

use std::time::Instant;

use super::persist::{open, KIND_SNAPSHOT};
use super::Window;
use crate::engine::SegmentData;

fn best_us(mut f: impl FnMut(), n: usize) -> f64 {
    let mut xs: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    xs.sort_by(f64::total_cmp);
    // The fastest run: what the code costs when nothing else runs (this machine is shared).
    xs.first().copied().unwrap_or(0.0)
}

#[test]
#[ignore = "a timing probe: needs CTXFAST_PARK_SNAPSHOT / CTXFAST_PARK_DELTA"]
fn restore_stages() {
    let (Ok(s), Ok(d)) = (std::env::var("CTXFAST_PARK_SNAPSHOT"), std::env::var("CTXFAST_PARK_DELTA")) else { return };
    let (Ok(snap), Ok(delta)) = (std::fs::read(s), std::fs::read(d)) else { return };
    let n = 2000;
    // Version 3 stores the digests a version-2 read takes from the bytes.
    let stored = snap.get(5).is_some_and(|&v| v > super::persist::VERSION_2);
    // CTXFAST_PROBE_ONLY=validate|scan|apply|resume|decode: that stage alone, for a profiler.
    if let Ok(only) = std::env::var("CTXFAST_PROBE_ONLY") {
        let Ok((w, _)) = Window::from_snapshot(&snap) else { return };
        let body = open(KIND_SNAPSHOT, &snap).map(|(_, b)| b).ok().unwrap_or_default();
        let packed = w.why.packed().into_owned();
        for _ in 0..20_000 {
            match only.as_str() {
                "validate" => drop(std::hint::black_box(w.validate())),
                "scan" => drop(std::hint::black_box(super::record::scan(&packed))),
                "apply" => drop(std::hint::black_box(w.clone().with_deltas(&[&delta]))),
                "resume" => drop(std::hint::black_box(Window::from_snapshot_and_deltas(&snap, &[&delta]))),
                _ => drop(std::hint::black_box(super::read_v2::read_body(body, stored))),
            }
        }
        return;
    }
    let body = || open(KIND_SNAPSHOT, &snap).map(|(_, b)| b);
    println!("open (digest)        {:8.1} µs", best_us(|| drop(body()), n));
    println!("decode body          {:8.1} µs", best_us(|| {
        let b = body().ok().unwrap_or_default();
        drop(super::read_v2::read_body(b, stored));
    }, n));
    println!("+ from_body          {:8.1} µs", best_us(|| {
        let b = body().ok().unwrap_or_default();
        if let Ok((b, _)) = super::read_v2::read_body(b, stored) {
            drop(Window::from_body(b));
        }
    }, n));
    if let Ok((b, _)) = super::read_v2::read_body(body().ok().unwrap_or_default(), stored) {
        println!("  policy parse       {:8.1} µs ({} B)", best_us(|| {
            let doc: Result<serde_json::Value, _> = serde_json::from_str(b.head.policy);
            if let Ok(doc) = doc { drop(crate::engine::policy_format::from_value(&doc)); }
        }, n), b.head.policy.len());
        let texts: Vec<&[u8]> = b.entries.iter().map(|e| e.seg.text.as_bytes()).collect();
        println!("  utf8 std           {:8.1} µs", best_us(|| for t in &texts { std::hint::black_box(std::str::from_utf8(t).is_ok()); }, n));
        println!("  utf8 simd          {:8.1} µs", best_us(|| for t in &texts { std::hint::black_box(simdutf8::basic::from_utf8(t).is_ok()); }, n));
        println!("  copy texts         {:8.1} µs", best_us(|| { let v: Vec<String> = b.entries.iter().map(|e| e.seg.text.clone()).collect(); std::hint::black_box(v); }, n));
        println!("  clone segs         {:8.1} µs", best_us(|| { let v: Vec<SegmentData> = b.entries.iter().map(|e| (*e.seg).clone()).collect(); std::hint::black_box(v); }, n));
        println!("  ledger scan        {:8.1} µs ({} B)", best_us(|| drop(super::record::scan(b.tail.why.0)), n), b.tail.why.0.len());
        println!("  seg hashes         {:8.1} µs", best_us(|| for e in &b.entries { drop(super::persist::hash_of(e.seg.as_ref())); }, n));
        println!("  seg one-shot       {:8.1} µs", best_us(|| { let mut buf = Vec::new(); for e in &b.entries { buf.clear(); if let Ok(x) = postcard::to_extend(e.seg.as_ref(), std::mem::take(&mut buf)) { buf = x; std::hint::black_box(crate::hash::xxh3_128(&buf)); } } }, n));
    }
    println!("from_snapshot        {:8.1} µs", best_us(|| drop(Window::from_snapshot(&snap)), n));
    let Ok((w, _)) = Window::from_snapshot(&snap) else { return };
    println!("  validate           {:8.1} µs", best_us(|| drop(w.validate()), n));
    println!("  clone              {:8.1} µs", best_us(|| drop(w.clone()), n));
    println!("  clone+with_deltas  {:8.1} µs", best_us(|| drop(w.clone().with_deltas(&[&delta])), n));
    let Ok((r, _)) = w.clone().with_deltas(&[&delta]) else { return };
    println!("  state_digest_v2    {:8.1} µs", best_us(|| drop(r.state_digest_v2()), n));
    println!("  state_digest_v3    {:8.1} µs", best_us(|| drop(r.state_digest_v3()), n));
    r.cache_digests();
    println!("  entries part       {:8.1} µs", best_us(|| { let v: Vec<_> = r.entries.iter().map(|e| (e.id, e.seg.digest.get(), e.tokens, e.version, e.admitted_cycle, &e.provenance)).collect(); drop(super::persist::hash_of(&v)); }, n));
    println!("  counters part      {:8.1} µs", best_us(|| drop(super::persist::hash_of(&(&r.counters, &r.totals, &r.last_kept))), n));
    println!("  cache_digests cold {:8.1} µs", best_us(|| { let mut x = r.clone(); for e in &mut x.entries { e.seg = std::sync::Arc::new((*e.seg).clone()); } x.cache_digests(); }, n));
    println!("from_snapshot_and_deltas {:5.1} µs", best_us(|| drop(Window::from_snapshot_and_deltas(&snap, &[&delta])), n));
    println!("from_snapshot+deltas {:8.1} µs", best_us(|| drop(Window::from_snapshot(&snap).and_then(|(w, _)| w.with_deltas(&[&delta]))), n));
}
