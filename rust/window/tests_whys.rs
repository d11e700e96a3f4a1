//! The packed `why` ledger: the same answers whatever the mix of packed records and overlay,
//! a digest that depends on the answers only, packed bytes that are checked, and answers that
//! read as they did when each was a struct with its rung's name spelled out.

use std::collections::BTreeMap;

use super::ledger::{Cause, Status};
use super::persist::Extras;
use super::record::{self, Rec};
use super::whys::Ledger;
use super::*;
use crate::engine::presets;
use crate::engine::testing::Words;

fn rec(i: u64) -> Rec {
    Rec {
        status: [Status::Held, Status::EvictedDispensable, Status::Rewritten, Status::Truncated][(i % 4) as usize],
        layer: Layer::Retrieved,
        cause: [None, Some(Cause::Rung(1)), Some(Cause::Rewrite), Some(Cause::Digest(0))][(i % 4) as usize],
        cycle: i * 977,
        tokens_before: i * 1_000_003,
        tokens_after: i,
        admissions: 1 + i % 3,
        provenance: (i % 4 == 2).then(|| format!("model-{i}").into_boxed_str()),
        rung: (i % 11 == 0).then(|| "an old rung".into()),
    }
}

fn names() -> Vec<Box<str>> {
    vec!["first".into(), "second".into()]
}

#[test]
fn the_ledger_answers_like_a_map_through_every_fold() {
    let mut l = Ledger::new(names());
    let mut model: BTreeMap<String, Rec> = BTreeMap::new();
    let mut x = 7u64;
    for step in 0..3000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let key = format!("k{}", (x >> 33) % 400);
        if (x >> 20) % 5 == 0 {
            assert_eq!(l.remove(&key), model.remove(&key).is_some(), "step {step}");
        } else {
            let r = rec(step);
            l.put(&key, r.clone());
            model.insert(key.clone(), r);
        }
        assert_eq!(l.len(), model.len());
        assert_eq!(l.held_count(), model.values().filter(|r| record::says_held(r.status)).count());
        assert_eq!(l.get(&key).map(|r| r.to_rec()), model.get(&key).cloned(), "step {step}");
    }
    let listed: Vec<(String, Rec)> = l.iter().map(|(k, r)| (k.to_string(), r.to_rec())).collect();
    let want: Vec<(String, Rec)> = model.iter().map(|(k, r)| (k.clone(), r.clone())).collect();
    assert_eq!(listed, want);
    // The same answers, packed and read back: same listing, same digest.
    let back = Ledger::from_packed(l.packed().into_owned(), names()).unwrap();
    assert_eq!(back.iter().map(|(k, r)| (k.to_string(), r.to_rec())).collect::<Vec<_>>(), want);
    assert_eq!(back.digest(), l.digest());
    // Built again in another order, straight from the model: the digest is the answers'.
    let mut other = Ledger::new(names());
    for (k, r) in model.iter().rev() {
        other.put(k, r.clone());
    }
    assert_eq!(other.digest(), l.digest());
    other.put("k0", rec(1));
    other.put("k0", rec(2));
    assert_ne!(other.digest(), l.digest());
}

#[test]
fn packed_records_that_are_not_well_formed_are_refused_without_a_panic() {
    let mut l = Ledger::new(names());
    for i in 0..40 {
        l.put(&format!("key-{i:03}"), rec(i));
    }
    let good = l.packed().into_owned();
    assert!(Ledger::from_packed(good.clone(), names()).is_some());
    for cut in 1..good.len() {
        // A cut inside a record is refused; a cut between records is a shorter ledger.
        if let Some(short) = Ledger::from_packed(good[..cut].to_vec(), names()) {
            assert!(short.len() < 40);
        }
    }
    for i in 0..good.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = good.clone();
            bad[i] ^= bit;
            let _ = Ledger::from_packed(bad, names()).map(|l| l.iter().count());
        }
    }
    // Keys out of order, or twice, are refused.
    let mut twice = Vec::new();
    record::encode(&mut twice, "b", rec(1).view());
    record::encode(&mut twice, "a", rec(1).view());
    assert!(Ledger::from_packed(twice.clone(), names()).is_none());
    twice.clear();
    record::encode(&mut twice, "a", rec(1).view());
    record::encode(&mut twice, "a", rec(2).view());
    assert!(Ledger::from_packed(twice, names()).is_none());
}

fn seg(text: &str, layer: Layer, key: &str) -> Arc<SegmentData> {
    let mut s = SegmentData::new(text, layer);
    s.key = Some(key.into());
    Arc::new(s)
}

#[test]
fn answers_keep_their_rung_names_and_a_stored_name_survives_the_binary_form() {
    let mut w = Window::new(30, 0, presets::context_window(), None, None).unwrap();
    for i in 0..6 {
        let _ = w.admit(seg(&"w ".repeat(10), Layer::Retrieved, &format!("r{i}")), 10);
    }
    w.fit(&Words).unwrap();
    let gone = w.whys().find(|y| y.status != Status::Held).unwrap();
    let Some(Cause::Rung(r)) = gone.cause else { panic!("{gone:?}") };
    assert_eq!(gone.rung.as_deref(), Some(w.policy().rungs[r].name.as_str()));
    // An answer saved before causes were recorded names its rung only by the name.
    let mut doc: serde_json::Value = serde_json::from_slice(&w.to_json().unwrap()).unwrap();
    let entry = &mut doc["why"][gone.key.as_str()];
    entry["cause"] = serde_json::Value::Null;
    entry["rung"] = "a rung of an older policy".into();
    let old = Window::from_json(&serde_json::to_vec(&doc).unwrap()).unwrap();
    let (back, _) = Window::from_snapshot(&old.to_snapshot(&Extras::default()).unwrap()).unwrap();
    let y = back.why(&gone.key).unwrap();
    assert_eq!((y.cause, y.rung.as_deref()), (None, Some("a rung of an older policy")));
    assert_eq!(back.to_json().unwrap(), old.to_json().unwrap());
}

#[test]
fn a_delta_from_another_window_at_the_same_revision_is_refused() {
    let make = |text: &str| {
        let mut w = Window::new(100, 0, presets::context_window(), None, None).unwrap();
        let _ = w.admit(seg(text, Layer::Retrieved, "a"), 3);
        w
    };
    let (mut a, b) = (make("one two three"), make("uno dos tres"));
    let base = b.to_snapshot(&Extras::default()).unwrap();
    let mark = a.revision();
    let _ = a.admit(seg("four", Layer::Retrieved, "d"), 1);
    let delta = a.delta_since(mark, None).unwrap();
    let (b, _) = Window::from_snapshot(&base).unwrap();
    assert!(b.with_delta(&delta).is_err(), "a's delta applied to b: the texts differ");
}

#[test]
fn the_cached_segment_digests_give_the_digest_computed_afresh() {
    let mut w = Window::new(60, 0, presets::context_window(), None, None).unwrap();
    for i in 0..20 {
        let _ = w.admit(seg(&"w ".repeat(1 + i % 7), Layer::Retrieved, &format!("r{i}")), 1 + i % 7);
        if i % 3 == 0 {
            w.fit(&Words).unwrap();
        }
        let _ = w.mark_stale(&format!("r{}", i / 2));
        let cached = (w.state_digest_v2().unwrap(), w.state_digest_v3().unwrap());
        let mut fresh = w.clone();
        // Segments copied afresh: their digests are taken again, not read from the memo.
        for e in &mut fresh.entries {
            e.seg = std::sync::Arc::new((*e.seg).clone());
        }
        assert_eq!(cached, (fresh.state_digest_v2().unwrap(), fresh.state_digest_v3().unwrap()), "after admission {i}");
    }
}
