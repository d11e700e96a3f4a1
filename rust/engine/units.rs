//! Eviction units: segments sharing a group leave together, so a unit is the ladder's atom.

use rustc_hash::FxHashMap as HashMap;

use super::policy::Policy;
use super::segment::{Layer, LayerSet, SegmentData};

pub(super) struct Unit {
    /// Segment indices, in input order.
    pub members: Vec<usize>,
    /// The first member's index: units are numbered in input order.
    pub position: usize,
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
    /// The digest record standing in for the unit, once one was made.
    pub digest: Option<usize>,
}

impl Unit {
    fn starting_at(position: usize) -> Self {
        Unit {
            members: Vec::new(),
            position,
            protected: false,
            layers: LayerSet::default(),
            recoverable: true,
            stale: true,
            score: f64::NEG_INFINITY,
            exchange: false,
            alive: true,
            digest: None,
        }
    }
}

/// One unit per group (at its first member's place) and one per ungrouped segment.
pub(super) fn build_units(segs: &[&SegmentData], policy: &Policy) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    let mut by_group: HashMap<&str, usize> = HashMap::default();
    for (i, s) in segs.iter().enumerate() {
        let existing = s.group.as_deref().and_then(|g| by_group.get(g).copied());
        let u = match existing {
            Some(u) => u,
            None => {
                if let Some(g) = s.group.as_deref() {
                    by_group.insert(g, units.len());
                }
                units.push(Unit::starting_at(i));
                units.len() - 1
            }
        };
        let unit = &mut units[u];
        unit.members.push(i);
        unit.layers.insert(s.layer);
        unit.protected |= policy.protected.contains(s.layer);
        unit.recoverable &= s.recoverable;
        unit.stale &= s.stale;
        unit.score = unit.score.max(s.score);
        unit.exchange |= s.layer == Layer::Conversation;
    }
    units
}
