//! A policy is data: ordered rungs plus the protected set. Nothing here runs; see `ladder` and `fit`.

use super::segment::{Layer, LayerSet};
use crate::fmt::plural;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Earliest position first.
    Oldest,
    /// Latest position first.
    Newest,
    /// Lowest score first, ties by position.
    LowestScore,
    /// Largest first, ties by position.
    Largest,
    /// (recoverable first, stale first, lowest score first, largest first), ties by position.
    Rank,
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::Oldest => "oldest",
            Order::Newest => "newest",
            Order::LowestScore => "lowest_score",
            Order::Largest => "largest",
            Order::Rank => "rank",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    Stale,
    Recoverable,
    /// Level-1 summaries whose key a held level-2 summary `covers`.
    Covered,
    /// Segments at this summary level (0 = the rolling summary).
    Level(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Drop,
    /// Shorten bodies on a token boundary, never below `min_tokens`.
    Truncate { min_tokens: usize },
    /// Replace a tool exchange by a short tagged record.
    Digest,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Floor {
    /// Keep the first N exchanges (the first user turn).
    pub keep_first: usize,
    /// Keep the last N exchanges.
    pub keep_last: usize,
    /// Keep the N highest-scored units.
    pub keep_top: usize,
    /// Stop before the rung's layers hold fewer than this many tokens.
    pub min_tokens: usize,
}

/// When a rung stops taking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Until {
    /// While the request is over its ceiling (the default): the ladder.
    #[default]
    Fits,
    /// While a layer it draws from is over its `Budget` cap, and even when the request already
    /// fits: how a policy enforces caps. Without such a rung caps are only reported.
    Cap,
}

impl Until {
    pub fn name(self) -> &'static str {
        match self {
            Until::Fits => "fits",
            Until::Cap => "cap",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rung {
    pub name: String,
    pub layers: LayerSet,
    pub filter: Option<Filter>,
    pub order: Order,
    pub action: Action,
    pub floor: Floor,
    pub until: Until,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub rungs: Vec<Rung>,
    pub protected: LayerSet,
    /// Display name of each layer in traces ("history" for conversation, say).
    pub labels: [String; 8],
}

impl Policy {
    pub fn default_labels() -> [String; 8] {
        Layer::ALL.map(|l| l.name().to_string())
    }

    pub fn label(&self, layer: Layer) -> &str {
        &self.labels[layer.index()]
    }
}

impl Floor {
    /// "first 1 + last 3 exchanges", "top 4 by score", "" when there is none. The noun is said
    /// once, so a floor fits on a trace's rung line at 80 columns.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match (self.keep_first, self.keep_last) {
            (0, 0) => {}
            (f, 0) => parts.push(format!("first {f} exchange{}", plural(f))),
            (0, l) => parts.push(format!("last {l} exchange{}", plural(l))),
            (f, l) => parts.push(format!("first {f} + last {l} exchange{}", plural(l))),
        }
        if self.keep_top > 0 {
            parts.push(format!("top {} by score", self.keep_top));
        }
        if self.min_tokens > 0 {
            parts.push(format!("{} tokens", crate::fmt::thousands(self.min_tokens)));
        }
        parts.join(" + ")
    }
}
