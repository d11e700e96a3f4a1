//! The token source and the `arbitrary` inputs: segments, budgets and policies.

use super::*;

// ---------------------------------------------------------------------------------------------
// The token source: the core's one-token-a-word counter (rust/engine/testing.rs).

pub use ctxfast::engine::testing::Words;

pub fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

// ---------------------------------------------------------------------------------------------
// Inputs.

/// A count: small, medium, just under `MAX_COUNT`, or any `u64`.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Big {
    Small(u16),
    Medium(u32),
    NearMax(u16),
    Raw(u64),
}

impl Big {
    /// The value as given (may be above `MAX_COUNT`).
    pub fn raw(self) -> usize {
        match self {
            Big::Small(n) => n as usize,
            Big::Medium(n) => n as usize,
            Big::NearMax(d) => MAX_COUNT - d as usize,
            Big::Raw(n) => n as usize,
        }
    }
    /// The value within the documented limit (what a valid caller may pass).
    pub fn valid(self) -> usize {
        match self {
            Big::Raw(n) => (n as usize) % (MAX_COUNT + 1),
            other => other.raw(),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum TextIn {
    /// `n` words "w" (n mod 1024).
    Words(u16),
    /// `n` lines of one word each.
    Lines(u8),
    /// Any text (first 200 chars).
    Raw(String),
}

impl TextIn {
    pub fn build(&self) -> String {
        match self {
            TextIn::Words(n) => vec!["w"; (*n % 1024) as usize].join(" "),
            TextIn::Lines(n) => vec!["line"; *n as usize].join("\n"),
            TextIn::Raw(s) => s.chars().take(200).collect(),
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum ScoreIn {
    Zero,
    One,
    NegZero,
    Frac(u16),
}

impl ScoreIn {
    pub fn build(self) -> f64 {
        match self {
            ScoreIn::Zero => 0.0,
            ScoreIn::One => 1.0,
            ScoreIn::NegZero => -0.0,
            ScoreIn::Frac(n) => n as f64 / u16::MAX as f64,
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub struct ToolIn {
    pub step: Option<i64>,
    pub tool: Option<String>,
    pub arguments: Option<String>,
}

pub const KEYS: [&str; 12] = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11"];
pub const GROUPS: [&str; 6] = ["g0", "g1", "g2", "g3", "g4", "g5"];

pub fn key_name(k: u8) -> String {
    KEYS[k as usize % KEYS.len()].to_string()
}

#[derive(Arbitrary, Debug, Clone)]
pub struct SegIn {
    pub text: TextIn,
    pub layer: u8,
    pub key: Option<u8>,
    pub score: ScoreIn,
    /// None: the count is the text's.
    pub tokens: Option<Big>,
    pub recoverable: bool,
    pub stale: bool,
    pub group: Option<u8>,
    pub level: Option<i8>,
    pub covers: Vec<u8>,
    pub tool: Option<ToolIn>,
}

impl SegIn {
    /// The segment and its exact count; `valid` keeps the count within `MAX_COUNT`.
    pub fn build(&self, valid: bool) -> (SegmentData, usize) {
        let text = self.text.build();
        let layer = Layer::from_index(self.layer as usize % 8).unwrap_or(Layer::Conversation);
        let mut s = SegmentData::new(text, layer);
        s.key = self.key.map(|k| key_name(k).into());
        s.score = self.score.build();
        s.tokens = self.tokens.map(|b| if valid { b.valid() } else { b.raw() });
        s.recoverable = self.recoverable;
        s.stale = self.stale;
        s.group = self.group.map(|g| GROUPS[g as usize % GROUPS.len()].into());
        s.set_level(self.level.map(|l| (l % 4) as i64));
        s.set_covers(self.covers.iter().take(4).map(|&k| key_name(k)).collect());
        s.set_tool(self.tool.as_ref().map(|t| ToolCall {
            step: t.step,
            tool: t.tool.as_ref().map(|x| x.chars().take(40).collect()),
            arguments: t.arguments.as_ref().map(|x| x.chars().take(40).collect()),
        }));
        let n = s.tokens.unwrap_or_else(|| words(&s.text));
        (s, n)
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum FilterIn {
    Stale,
    Recoverable,
    Covered,
    Level(i8),
}

#[derive(Arbitrary, Debug, Clone)]
pub enum ActionIn {
    Drop,
    Truncate(u16),
    Digest,
}

#[derive(Arbitrary, Debug, Clone)]
pub struct FloorIn {
    pub keep_first: u8,
    pub keep_last: u8,
    pub keep_top: u8,
    pub min_tokens: u16,
}

#[derive(Arbitrary, Debug, Clone)]
pub struct RungIn {
    pub name: String,
    pub layers: u8,
    pub filter: Option<FilterIn>,
    pub order: u8,
    pub action: ActionIn,
    pub floor: Option<FloorIn>,
}

#[derive(Arbitrary, Debug, Clone)]
pub enum PolicyIn {
    Preset(u8),
    SevenTier(u16),
    Ranked(u16),
    Agent(u16),
    /// Extra protected layers (high nibble of the mask), up to 6 rungs, some relabelled layers.
    Custom { extra_protected: u8, rungs: Vec<RungIn>, labels: Vec<(u8, String)> },
}

impl PolicyIn {
    /// A valid-shaped policy: the protected set holds the four built-in protected layers and no
    /// rung draws from a protected layer (what `policy_format::from_value` accepts).
    pub fn build(&self) -> (Option<String>, Policy) {
        match self {
            PolicyIn::Preset(i) => {
                let name = presets::PRESET_NAMES[*i as usize % presets::PRESET_NAMES.len()];
                let (n, p) = presets::by_name(name).expect("a listed preset");
                (Some(n.to_string()), p)
            }
            PolicyIn::SevenTier(k) => (Some("seven_tier".into()), presets::seven_tier(*k as usize)),
            PolicyIn::Ranked(k) => (Some("ranked".into()), presets::ranked(*k as usize)),
            PolicyIn::Agent(k) => (Some("agent".into()), presets::agent(*k as usize)),
            PolicyIn::Custom { extra_protected, rungs, labels } => {
                let protected = LayerSet(Layer::PROTECTED.0 | (extra_protected & 0xF0));
                let rungs = rungs
                    .iter()
                    .take(6)
                    .map(|r| Rung {
                        name: r.name.chars().take(32).collect(),
                        layers: LayerSet(r.layers & !protected.0),
                        filter: r.filter.as_ref().map(|f| match f {
                            FilterIn::Stale => Filter::Stale,
                            FilterIn::Recoverable => Filter::Recoverable,
                            FilterIn::Covered => Filter::Covered,
                            FilterIn::Level(n) => Filter::Level((n % 4) as i64),
                        }),
                        order: [Order::Oldest, Order::Newest, Order::LowestScore, Order::Largest, Order::Rank]
                            [r.order as usize % 5],
                        action: match r.action {
                            ActionIn::Drop => Action::Drop,
                            ActionIn::Truncate(m) => Action::Truncate { min_tokens: m as usize % 300 },
                            ActionIn::Digest => Action::Digest,
                        },
                        floor: r
                            .floor
                            .as_ref()
                            .map(|f| Floor {
                                keep_first: f.keep_first as usize % 8,
                                keep_last: f.keep_last as usize % 8,
                                keep_top: f.keep_top as usize % 8,
                                min_tokens: f.min_tokens as usize,
                            })
                            .unwrap_or_default(),
                        // From the order byte's high bit, so the committed corpus decodes as before.
                        until: if r.order & 0x80 != 0 { Until::Cap } else { Until::Fits },
                    })
                    .collect();
                let mut l = Policy::default_labels();
                for (i, text) in labels.iter().take(4) {
                    l[*i as usize % 8] = text.chars().take(16).collect();
                }
                (None, Policy { rungs, protected, labels: l })
            }
        }
    }
}
