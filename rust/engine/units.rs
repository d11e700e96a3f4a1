//! Eviction units: segments sharing a group leave together, so a unit is the ladder's atom.
//!
//! Units are found by position, not by a table keyed on group names: one pass over the segments
//! starts a unit at each ungrouped segment and at each run of a group, and a segment whose group
//! is its predecessor's joins its predecessor's unit. Runs that continue a group seen earlier are
//! found afterwards from a hash of each run's name: a bit filter that fits in cache clears almost
//! every run at once, and the few it cannot clear are sorted by hash and compared by name. A
//! table probed for every segment outgrows the caches on large requests. A unit that is one run
//! needs no list of its members (they are the positions up to the next unit's); only when some
//! group is interleaved with others are the members listed, in one flat array.

use super::outcome::Label;
use super::policy::Policy;
use super::segment::{Layer, LayerSet, SegmentData};

/// The longest unit name copied into its unit: what a `Label` holds without allocating.
const INLINE_NAME: usize = 24;

pub(super) struct Unit {
    /// The first member's index: units are numbered in input order.
    pub position: usize,
    /// What the trace calls the unit without input names: its first member's group, else its
    /// key (`naming::default_label`), copied while the member is at hand when it is short
    /// enough to sit inline (`INLINE_NAME`, most group and key names). None: it has none, or a
    /// longer one, which the trace reads from the member (`long_name`). Why a copy: the ladder
    /// labels its rows in rank order, and reading each name from its segment there missed the
    /// cache once a row (a fifth of a fit of 10^6 segments); the unit's own line is read anyway.
    pub name: Option<Label>,
    /// The first member's name is longer than `INLINE_NAME` (then `name` is None).
    pub long_name: bool,
    /// Any member in a protected layer protects the whole unit.
    pub protected: bool,
    pub layers: LayerSet,
    /// Only if every member is.
    pub recoverable: bool,
    /// Only if every member is.
    pub stale: bool,
    /// The members' highest.
    pub score: f64,
    /// Holds a CONVERSATION segment: what floors such as "last 3 exchanges" count.
    pub exchange: bool,
    pub alive: bool,
}

impl Unit {
    /// Takes in `seg`, a member.
    fn add(&mut self, seg: &SegmentData, policy: &Policy) {
        self.layers.insert(seg.layer);
        self.protected |= policy.protected.contains(seg.layer);
        self.recoverable &= seg.recoverable;
        self.stale &= seg.stale;
        self.score = self.score.max(seg.score);
        self.exchange |= seg.layer == Layer::Conversation;
    }

    /// Takes in a later run of the same group: what `add` would have made of its members.
    fn absorb(&mut self, later: &Unit) {
        self.layers.0 |= later.layers.0;
        self.protected |= later.protected;
        self.recoverable &= later.recoverable;
        self.stale &= later.stale;
        self.score = self.score.max(later.score);
        self.exchange |= later.exchange;
    }

    fn starting_at(position: usize, seg: &SegmentData) -> Self {
        let name = seg.group.as_deref().or(seg.key.as_deref());
        let long_name = name.is_some_and(|n| n.len() > INLINE_NAME);
        Unit {
            position,
            name: name.filter(|_| !long_name).map(Label::from),
            long_name,
            protected: false,
            layers: LayerSet::default(),
            recoverable: true,
            stale: true,
            score: f64::NEG_INFINITY,
            exchange: false,
            alive: true,
        }
    }
}

/// The units of a request.
pub(super) struct Units {
    pub list: Vec<Unit>,
    /// Segment indices by unit when some group is interleaved: unit `u`'s members are
    /// `members[starts[u]..starts[u + 1]]`, in input order. Both empty when every unit is one
    /// run of segments.
    pub members: Vec<usize>,
    pub starts: Vec<usize>,
    /// Each segment's layer and whether it is recoverable, read in the same pass: the ladder
    /// reads them in rank order, and a byte a segment stays in cache where segments do not.
    pub seg_layer: Vec<Layer>,
    pub seg_recoverable: Vec<bool>,
}

/// One unit per group (at its first member's place) and one per ungrouped segment.
pub(super) fn build_units(segs: &[&SegmentData], policy: &Policy) -> Units {
    let n = segs.len();
    // Sized once for the most there can be: a vector grown by doubling copies itself and
    // touches fresh pages at every step, and pages reserved but never written cost nothing.
    let mut list: Vec<Unit> = Vec::with_capacity(n);
    let mut seg_layer = Vec::with_capacity(n);
    let mut seg_recoverable = Vec::with_capacity(n);
    // The first segment of each run of a group, with a hash of the group's name.
    let mut runs: Vec<(u64, usize)> = Vec::with_capacity(n);
    let mut previous: Option<&str> = None;
    for (i, &s) in segs.iter().enumerate() {
        let group = s.group.as_deref();
        if group.is_none() || group != previous {
            if let Some(g) = group {
                runs.push((crate::hash::xxh3_64(g.as_bytes()), i));
            }
            list.push(Unit::starting_at(i, s));
        }
        previous = group;
        if let Some(unit) = list.last_mut() {
            unit.add(s, policy);
        }
        seg_layer.push(s.layer);
        seg_recoverable.push(s.recoverable);
    }
    let rejoins = rejoins(segs, runs);
    if rejoins.is_empty() {
        return Units { list, members: Vec::new(), starts: Vec::new(), seg_layer, seg_recoverable };
    }
    let (list, of_segment) = merge(list, n, &rejoins);
    let (members, starts) = member_lists(&of_segment, list.len());
    Units { list, members, starts, seg_layer, seg_recoverable }
}

/// The runs that continue a group seen earlier: (run's first segment, the group's first
/// segment). Only runs whose hash `repeated_hashes` cannot clear are looked at. Sorted by (hash,
/// name, position), a group's runs are neighbours and the first of them is where the group
/// began; names are compared only when two hashes are equal.
fn rejoins(segs: &[&SegmentData], mut runs: Vec<(u64, usize)>) -> Vec<(usize, usize)> {
    let repeated = repeated_hashes(&runs);
    if repeated.is_empty() {
        return Vec::new();
    }
    runs.retain(|r| repeated.binary_search(&r.0).is_ok());
    let name = |i: usize| segs.get(i).and_then(|s| s.group.as_deref());
    let same_group = |a: &(u64, usize), b: &(u64, usize)| a.0 == b.0 && name(a.1) == name(b.1);
    runs.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| name(a.1).cmp(&name(b.1))).then(a.1.cmp(&b.1)));
    let mut out = Vec::new();
    let mut first: Option<&(u64, usize)> = None;
    for run in &runs {
        match first {
            Some(f) if same_group(f, run) => out.push((run.1, f.1)),
            _ => first = Some(run),
        }
    }
    out
}

/// Bits per run in `repeated_hashes`' filter, and how many it sets for each.
const FILTER_BITS: usize = 32;
const FILTER_PROBES: u32 = 4;

/// The hashes, sorted, of the runs whose hash may have come before: a bit filter (four bits a
/// run, set as the runs come) never clears a hash it has seen, and clears one it has not but for
/// a few in ten thousand. At 32 bits a run it is a quarter the size of the runs themselves, and
/// its probes stay in cache where a table of the names would not.
fn repeated_hashes(runs: &[(u64, usize)]) -> Vec<u64> {
    let words = (runs.len().saturating_mul(FILTER_BITS) / 64).max(1).next_power_of_two();
    let mask = u64::try_from(words).map_or(u64::MAX, |w| w.saturating_mul(64) - 1);
    let mut bits = vec![0u64; words];
    let mut repeated = Vec::new();
    for &(hash, _) in runs {
        let mut seen = true;
        for probe in 0..FILTER_PROBES {
            // Four windows of the hash, 16 bits apart: independent enough for a filter.
            let bit = hash.rotate_right(probe * 16) & mask;
            let (word, within) = (usize::try_from(bit / 64).unwrap_or(0), bit % 64);
            if let Some(w) = bits.get_mut(word) {
                seen &= *w & (1 << within) != 0;
                *w |= 1 << within;
            }
        }
        if seen {
            repeated.push(hash);
        }
    }
    repeated.sort_unstable();
    repeated.dedup();
    repeated
}

/// Folds each run that continues a group into the unit of the group's first run, and numbers
/// the units that remain in input order again. Returns them with the unit of each of the `n`
/// segments.
fn merge(runs: Vec<Unit>, n: usize, rejoins: &[(usize, usize)]) -> (Vec<Unit>, Vec<usize>) {
    // Run `r` holds the segments from its position up to the next run's.
    let mut run_of = Vec::with_capacity(n);
    for r in 0..runs.len() {
        let end = runs.get(r + 1).map_or(n, |next| next.position);
        run_of.resize(end, r);
    }
    let mut joins: Vec<Option<usize>> = vec![None; runs.len()];
    for &(run, first) in rejoins {
        if let (Some(&r), Some(&f)) = (run_of.get(run), run_of.get(first)) {
            joins[r] = Some(f);
        }
    }
    let mut renumbered = vec![0usize; runs.len()];
    let mut list: Vec<Unit> = Vec::with_capacity(runs.len().saturating_sub(rejoins.len()));
    for (r, unit) in runs.into_iter().enumerate() {
        // The group's first run comes earlier, so it is numbered already.
        let into = joins[r].map(|f| renumbered[f]);
        match into.and_then(|u| list.get_mut(u).map(|target| (u, target))) {
            Some((u, target)) => {
                target.absorb(&unit);
                renumbered[r] = u;
            }
            None => {
                renumbered[r] = list.len();
                list.push(unit);
            }
        }
    }
    for u in run_of.iter_mut() {
        *u = renumbered[*u];
    }
    (list, run_of)
}

/// A unit's segment indices, in input order: a run of positions, or listed.
#[derive(Clone)]
pub(super) enum Members<'l> {
    Run(std::ops::Range<usize>),
    Listed(std::iter::Copied<std::slice::Iter<'l, usize>>),
}

impl Iterator for Members<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Members::Run(r) => r.next(),
            Members::Listed(l) => l.next(),
        }
    }

    fn nth(&mut self, k: usize) -> Option<usize> {
        match self {
            Members::Run(r) => r.nth(k),
            Members::Listed(l) => l.nth(k),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Members::Run(r) => r.size_hint(),
            Members::Listed(l) => l.size_hint(),
        }
    }
}

impl ExactSizeIterator for Members<'_> {}

/// The flat member array and each unit's start in it (a counting sort of the segments by unit,
/// which keeps input order within a unit), with one more start closing the last unit.
fn member_lists(of_segment: &[usize], units: usize) -> (Vec<usize>, Vec<usize>) {
    let mut starts = vec![0usize; units + 1];
    for &u in of_segment {
        if let Some(n) = starts.get_mut(u + 1) {
            *n += 1;
        }
    }
    for u in 0..units {
        starts[u + 1] += starts[u];
    }
    let mut next = starts.clone();
    let mut members = vec![0usize; of_segment.len()];
    for (i, &u) in of_segment.iter().enumerate() {
        if let Some(at) = next.get_mut(u) {
            if let Some(slot) = members.get_mut(*at) {
                *slot = i;
            }
            *at += 1;
        }
    }
    (members, starts)
}
