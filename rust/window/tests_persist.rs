//! Binary snapshots and deltas: restore = snapshot + deltas gives exactly the live window, after
//! every kind of operation; damaged, reordered or repeated inputs are refused.

use super::persist::{is_binary, Extras};
use super::*;
use crate::engine::presets;
use crate::engine::testing::Words;
use crate::engine::TokenSource;

fn seg(text: String, layer: Layer, key: Option<String>, group: Option<String>, recoverable: bool) -> Arc<SegmentData> {
    let mut s = SegmentData::new(text, layer);
    s.key = key.map(Into::into);
    s.group = group.map(Into::into);
    s.recoverable = recoverable;
    s.score = 0.5;
    Arc::new(s)
}

/// A small deterministic generator, so a failure names its seed.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// One random operation of every kind a caller has.
fn step(w: &mut Window, r: &mut Lcg, turn: u64) {
    let words = |r: &mut Lcg| vec!["w"; 1 + r.next(30) as usize].join(" ");
    match r.next(10) {
        0..=3 => {
            let layer = [Layer::Conversation, Layer::CurrentTurn, Layer::Retrieved, Layer::ToolResult, Layer::Pinned][r.next(5) as usize];
            let key = (r.next(4) > 0).then(|| format!("k{}", r.next(40)));
            let group = (layer == Layer::ToolResult || r.next(3) == 0).then(|| format!("g{}", r.next(6)));
            let text = words(r);
            let n = Words.count(&text).unwrap_or(0);
            let _ = w.admit(seg(text, layer, key, group, r.next(2) == 0), n);
        }
        4..=5 => {
            let _ = w.fit(&Words);
        }
        6 => {
            let _ = w.discard(&format!("k{}", r.next(40)));
        }
        7 => {
            let _ = w.mark_stale(&format!("k{}", r.next(40)));
        }
        8 => {
            let key = format!("k{}", r.next(40));
            let _ = w.rewrite(&key, format!("summary {turn}"), 2, Some("model"));
        }
        _ => {
            if turn % 7 == 0 {
                w.set_why_horizon(Some(r.next(4))).unwrap();
            } else if let Ok((ids, text)) = w.digest_text_for(&format!("k{}", r.next(40))) {
                let n = Words.count(&text).unwrap_or(0);
                let key = format!("k{}", r.next(40));
                let _ = w.digest(&key, &ids, text, n);
            }
        }
    }
}

/// A context-window window after `turns` of `step`'s random operations drawn from `seed`.
fn played(limit: usize, seed: u64, turns: u64) -> Window {
    let mut r = Lcg(seed);
    let mut w = Window::new(limit, 0, presets::context_window(), None, None).unwrap();
    for t in 0..turns {
        step(&mut w, &mut r, t);
    }
    w
}

fn same(a: &Window, b: &Window) -> bool {
    a.to_json().ok() == b.to_json().ok() && persist::state_digest(a).ok() == persist::state_digest(b).ok()
}

#[test]
fn snapshot_plus_deltas_is_the_live_window_after_every_kind_of_operation() {
    for seed in 0..60u64 {
        let mut r = Lcg(seed);
        let policy = if seed % 2 == 0 { presets::context_window() } else { presets::agent(2) };
        let mut w = Window::new(60 + r.next(80) as usize, 0, policy, None, (seed % 3 == 0).then_some(0.7)).unwrap();
        for t in 0..5 {
            step(&mut w, &mut r, t);
        }
        let snap = w.to_snapshot(&Extras::default()).unwrap();
        assert!(is_binary(&snap));
        let (mut restored, _) = Window::from_snapshot(&snap).unwrap();
        assert!(same(&w, &restored), "seed {seed}: the snapshot restores another window");
        let mut mark = w.revision();
        for t in 5..80 {
            step(&mut w, &mut r, t);
            if r.next(3) == 0 {
                let delta = w.delta_since(mark, None).unwrap();
                restored = restored.with_delta(&delta).unwrap_or_else(|e| panic!("seed {seed} turn {t}: {e}")).0;
                assert!(same(&w, &restored), "seed {seed} turn {t}: snapshot + deltas differ from the live window");
                mark = w.revision();
            }
        }
        restored = restored.with_delta(&w.delta_since(mark, None).unwrap()).unwrap().0;
        // The restored window goes on like the live one, deltas included.
        let before = restored.revision();
        for t in 80..90 {
            step(&mut restored, &mut Lcg(seed + t), t);
            step(&mut w, &mut Lcg(seed + t), t);
        }
        if !same(&w, &restored) {
            let (a, b) = (String::from_utf8(w.to_json().unwrap()).unwrap(), String::from_utf8(restored.to_json().unwrap()).unwrap());
            let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(0);
            panic!("seed {seed}: the restored window diverged from the live one at\n{}\n{}", &a[at.saturating_sub(200)..(at + 200).min(a.len())], &b[at.saturating_sub(200)..(at + 200).min(b.len())]);
        }
        assert!(restored.delta_since(before, None).is_ok());
    }
}

#[test]
fn digests_read_with_a_snapshot_are_the_digests_of_its_segments() {
    for seed in 0..20u64 {
        let mut r = Lcg(seed);
        let mut w = Window::new(80 + r.next(80) as usize, 0, presets::agent(2), None, None).unwrap();
        for t in 0..8 {
            step(&mut w, &mut r, t);
        }
        let snap = w.to_snapshot(&Extras::default()).unwrap();
        let mark = w.revision();
        let (restored, _) = Window::from_snapshot(&snap).unwrap();
        for e in &restored.entries {
            assert_eq!(e.seg.digest.get(), Some(persist::hash_of(e.seg.as_ref()).unwrap()), "seed {seed}: entry {}", e.id);
        }
        // The ledger's stored digest is the one its records give.
        assert_eq!(restored.why.digest(), record::scan(&restored.why.packed()).unwrap().sum, "seed {seed}");
        assert_eq!(restored.why.digest(), w.why.digest(), "seed {seed}");
        // Snapshot and deltas at once (validated once) give what applying them in turn gives.
        let mut deltas = Vec::new();
        let mut at = mark;
        for t in 8..20 {
            step(&mut w, &mut r, t);
            deltas.push(w.delta_since(at, None).unwrap());
            at = w.revision();
        }
        let slices: Vec<&[u8]> = deltas.iter().map(Vec::as_slice).collect();
        let (at_once, _, applied) = Window::from_snapshot_and_deltas(&snap, &slices).unwrap();
        assert_eq!(applied.len(), deltas.len());
        assert!(same(&w, &at_once), "seed {seed}");
        assert_eq!(w.state_digest_v2().unwrap(), at_once.state_digest_v2().unwrap());
        assert_eq!(w.state_digest_v3().unwrap(), at_once.state_digest_v3().unwrap());
        // Out of order: refused.
        if slices.len() > 1 {
            let swapped: Vec<&[u8]> = slices.iter().rev().copied().collect();
            assert!(Window::from_snapshot_and_deltas(&snap, &swapped).is_err());
        }
    }
}

#[test]
fn a_delta_applies_once_in_order_and_to_its_own_window_only() {
    let mut w = Window::new(100, 0, presets::context_window(), None, None).unwrap();
    let snap = w.to_snapshot(&Extras::default()).unwrap();
    let m0 = w.revision();
    let _ = w.admit(seg("a b c".into(), Layer::Conversation, Some("a".into()), None, false), 3);
    let d1 = w.delta_since(m0, None).unwrap();
    let m1 = w.revision();
    let _ = w.admit(seg("d e".into(), Layer::Conversation, Some("d".into()), None, false), 2);
    let d2 = w.delta_since(m1, None).unwrap();
    let (base, _) = Window::from_snapshot(&snap).unwrap();
    // Out of order, twice, or a snapshot where a delta belongs: refused.
    assert!(base.clone().with_delta(&d2).is_err());
    let (one, _) = base.with_delta(&d1).unwrap();
    assert!(one.clone().with_delta(&d1).is_err());
    assert!(one.clone().with_delta(&snap).is_err());
    let (two, _) = one.with_delta(&d2).unwrap();
    assert!(same(&w, &two));
    // A flipped bit anywhere is caught by the digest.
    for i in [0, 5, 6, d2.len() / 2, d2.len() - 1] {
        let mut bad = d2.clone();
        bad[i] ^= 0x20;
        assert!(Window::from_snapshot(&snap).unwrap().0.with_delta(&bad).is_err(), "byte {i}");
    }
    // Marks outside what the journal knows are refused, not answered wrongly.
    assert!(w.delta_since(w.revision() + 1, None).is_err());
    let (restored, _) = Window::from_snapshot(&w.to_snapshot(&Extras::default()).unwrap()).unwrap();
    assert!(restored.delta_since(m1, None).is_err());
    assert!(restored.delta_since(restored.revision(), None).is_ok());
}

/// Entries with these ids (their keys `k<id>`), for `merge_entries`.
#[test]
fn the_version_3_digest_sees_a_change_in_any_part() {
    // Version 3 writes the entries and last_kept as fixed-width fields: each field, the order
    // and the lengths must still reach the digest.
    let w = played(400, 11, 6);
    assert!(w.entries.len() >= 2 && !w.last_kept.is_empty());
    let base = w.state_digest_v3().unwrap();
    type Change = (&'static str, fn(&mut Window));
    let changes: Vec<Change> = vec![
        ("entry id", |w| w.entries[0].id += 1),
        ("entry tokens", |w| w.entries[0].tokens += 1),
        ("entry version", |w| w.entries[0].version += 1),
        ("entry cycle", |w| w.entries[0].admitted_cycle += 1),
        ("entry provenance", |w| w.entries[0].provenance = Some(Box::new((None, "x".into())))),
        ("entry segment", |w| {
            let mut seg = (*w.entries[0].seg).clone();
            seg.score = 0.5 - seg.score / 2.0;
            seg.digest = Default::default();
            w.entries[0].seg = Arc::new(seg);
        }),
        ("entry order", |w| w.entries.swap(0, 1)),
        ("an entry fewer", |w| w.entries.truncate(w.entries.len() - 1)),
        ("last_kept", |w| w.last_kept[0].1 += 1),
        ("last_kept shorter", |w| w.last_kept.truncate(w.last_kept.len() - 1)),
        ("counters", |w| w.counters.fits += 1),
        ("revision", |w| w.revision += 1),
        ("limit", |w| w.limit += 1),
    ];
    for (what, change) in changes {
        let mut other = w.clone();
        change(&mut other);
        assert_ne!(other.state_digest_v3().unwrap(), base, "{what}");
    }
    assert_eq!(w.clone().state_digest_v3().unwrap(), base);
}

fn entries(ids: &[u64]) -> Vec<Entry> {
    ids.iter()
        .map(|&id| Entry { id, seg: seg(format!("t{id}"), Layer::Conversation, Some(format!("k{id}")), None, false), tokens: 1, version: 0, admitted_cycle: 0, provenance: None })
        .collect()
}

fn ids(es: &[Entry]) -> Vec<u64> {
    es.iter().map(|e| e.id).collect()
}

#[test]
fn merging_a_delta_takes_each_id_once_from_the_delta_or_the_old_entries() {
    use super::delta::merge_entries;
    // The usual turn: the oldest evicted, one entry changed in place, two new ones at the end.
    let old = entries(&[1, 2, 3, 4, 5, 6]);
    let mut changed = entries(&[4, 7, 8]);
    changed[0].tokens = 9;
    let (out, gone, placed) = merge_entries(old, changed, &[3, 4, 5, 6, 7, 8]).unwrap();
    assert_eq!(ids(&out), [3, 4, 5, 6, 7, 8]);
    assert_eq!(out[1].tokens, 9, "the delta's entry replaces the old one");
    assert_eq!(ids(&gone), [1, 2, 4], "left, and replaced");
    assert_eq!(placed, [1, 4, 5]);
    // An order far from the old one (past the look-ahead): found through the index.
    let old = entries(&(1..=40).collect::<Vec<_>>());
    let order: Vec<u64> = (1..=40).rev().collect();
    let (out, gone, _) = merge_entries(old, Vec::new(), &order).unwrap();
    assert_eq!(ids(&out), order);
    assert!(gone.is_empty());
    // An id twice, or one neither carried nor held: refused.
    assert!(merge_entries(entries(&[1, 2]), Vec::new(), &[1, 1]).is_err());
    assert!(merge_entries(entries(&(1..=20).collect::<Vec<_>>()), Vec::new(), &[20, 1, 20]).is_err());
    assert!(merge_entries(entries(&[1, 2]), entries(&[3]), &[1, 4]).is_err());
}

#[test]
fn a_delta_is_about_the_size_of_what_changed() {
    let mut w = Window::new(2000, 0, presets::context_window(), None, None).unwrap();
    for i in 0..60 {
        let text = format!("turn {i} ") + &"word ".repeat(200);
        let _ = w.admit(seg(text, Layer::Conversation, Some(format!("t{i}")), None, false), 202);
        let _ = w.fit(&Words);
    }
    let mark = w.revision();
    let text = "the new answer ".repeat(40);
    let new_bytes = text.len();
    let _ = w.admit(seg(text, Layer::Conversation, Some("new".into()), None, false), 120);
    let _ = w.fit(&Words);
    let delta = w.delta_since(mark, None).unwrap();
    let snap = w.to_snapshot(&Extras::default()).unwrap();
    assert!(delta.len() <= 2 * new_bytes, "delta {} bytes for {new_bytes} bytes of new text", delta.len());
    assert!(snap.len() > 5 * delta.len());
}

#[test]
fn a_version_3_snapshot_stores_one_digest_per_held_entry_and_the_ledgers() {
    let w = played(300, 5, 6);
    let digests = w.stored_digests().unwrap();
    assert_eq!(digests.len(), 16 * (w.entries.len() + 1));
    // The same body with one digest fewer (and its frame sealed again) is refused.
    let packed = w.why.packed().into_owned();
    let short = digests.get(..digests.len() - 16).unwrap();
    for stored in [short, &digests[..digests.len() - 1], &[][..]] {
        let bytes = persist::seal(persist::KIND_SNAPSHOT, &(w.body_out(&packed, stored), persist::ExtrasOut::of(&Extras::default())), 0).unwrap();
        let err = Window::from_snapshot(&bytes).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("bytes of digests"), "{err}");
    }
    let bytes = persist::seal(persist::KIND_SNAPSHOT, &(w.body_out(&packed, &digests), persist::ExtrasOut::of(&Extras::default())), 0).unwrap();
    assert!(Window::from_snapshot(&bytes).is_ok());
}

#[test]
fn truncated_snapshots_and_other_kinds_are_refused() {
    let mut w = Window::new(100, 0, presets::context_window(), None, None).unwrap();
    let _ = w.admit(seg("a b c".into(), Layer::Conversation, Some("a".into()), None, false), 3);
    let snap = w.to_snapshot(&Extras { metas: Some("{}".into()), tokenizer: None }).unwrap();
    for cut in [0, 3, 6, 10, snap.len() - 1] {
        assert!(Window::from_snapshot(&snap[..cut]).is_err(), "cut at {cut}");
    }
    let mut other = snap.clone();
    other[5] = 9;
    assert!(Window::from_snapshot(&other).is_err());
    let (back, extras) = Window::from_snapshot(&snap).unwrap();
    assert_eq!(extras.metas.as_deref(), Some("{}"));
    assert!(same(&w, &back));
}

/// Probe (`cargo test --profile quick --lib park_probe -- --ignored --nocapture`): the costs of
/// parking a window shaped like the benchmark's turn 60 (114 held entries of ~1.2 KB, ~500
/// `why` answers).
#[test]
#[ignore]
fn park_probe() {
    let mut w = Window::new(32_000, 0, presets::context_window(), None, None).unwrap();
    for i in 0..500 {
        let text = format!("chunk {i} ") + &"some retrieved words ".repeat(60);
        let _ = w.admit(seg(text, Layer::Retrieved, Some(format!("doc-{i}")), None, false), 250);
        if i % 4 == 0 {
            let _ = w.fit(&Words);
        }
    }
    let time = |label: &str, f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        for _ in 0..200 {
            f();
        }
        println!("{label}: {:?}", start.elapsed() / 200);
    };
    let snap = w.to_snapshot(&Extras::default()).unwrap();
    println!("held {} whys {} snapshot {} bytes", w.entries().len(), w.why.len(), snap.len());
    time("to_snapshot", &mut || drop(w.to_snapshot(&Extras::default())));
    time("state_digest", &mut || drop(persist::state_digest(&w)));
    time("from_snapshot", &mut || drop(Window::from_snapshot(&snap)));
    let (back, _) = Window::from_snapshot(&snap).unwrap();
    time("validate", &mut || drop(back.validate()));
    time("clone", &mut || drop(back.clone()));
    time("state_digest_v2", &mut || drop(back.state_digest_v2()));
    time("ledger iter", &mut || {
        std::hint::black_box(back.why.iter().count());
    });
    let keys: Vec<String> = back.why.iter().map(|(k, _)| k.to_string()).collect();
    time("ledger get all", &mut || {
        std::hint::black_box(keys.iter().filter(|k| back.why.get(k).is_some()).count());
    });
    time("ledger packed", &mut || drop(back.why.packed()));
    let packed = back.why.packed().into_owned();
    time("scan", &mut || drop(record::scan(&packed)));
    let ptext = persist_v2::policy_text(&back.policy);
    time("policy text", &mut || drop(persist_v2::policy_text(&back.policy)));
    time("policy parse", &mut || drop(crate::engine::policy_format::from_value(&serde_json::from_str(&ptext).unwrap())));
    time("hash 500 small", &mut || {
        std::hint::black_box((0..500u32).fold(0u128, |a, i| a ^ record::hash(&i.to_le_bytes())));
    });
    time("seg validate", &mut || {
        std::hint::black_box(back.entries.iter().all(|e| e.seg.validate().is_ok()));
    });
    let body = crate::window::persist::open(persist::KIND_SNAPSHOT, &snap).unwrap().1;
    time("decode only", &mut || drop(super::read_v2::read_body(body, true)));
}
