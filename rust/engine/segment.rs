//! Layers and segments as the core sees them: plain data, no Python.

use serde::{Deserialize, Serialize};

// Segment data has its own file; paths through this module still reach it.
pub use super::segment_data::{SegmentData, ToolCall};
use crate::error::{CtxError, CtxResult};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Layer {
    System = 0,
    Tools = 1,
    Pinned = 2,
    CurrentTurn = 3,
    Conversation = 4,
    ToolResult = 5,
    Retrieved = 6,
    Summary = 7,
}

impl Layer {
    pub const ALL: [Layer; 8] = [
        Layer::System,
        Layer::Tools,
        Layer::Pinned,
        Layer::CurrentTurn,
        Layer::Conversation,
        Layer::ToolResult,
        Layer::Retrieved,
        Layer::Summary,
    ];

    /// The order the trace lists layers in, whatever order the request holds them in: the order a
    /// prompt is assembled in (instructions first, the question last), so two payloads of the
    /// same shape read the same.
    pub const DISPLAY_ORDER: [Layer; 8] = [
        Layer::System,
        Layer::Tools,
        Layer::Pinned,
        Layer::Retrieved,
        Layer::Summary,
        Layer::Conversation,
        Layer::ToolResult,
        Layer::CurrentTurn,
    ];

    /// The layers no built-in rung touches.
    pub const PROTECTED: LayerSet = LayerSet(0b0000_1111);

    pub fn name(self) -> &'static str {
        match self {
            Layer::System => "system",
            Layer::Tools => "tools",
            Layer::Pinned => "pinned",
            Layer::CurrentTurn => "current_turn",
            Layer::Conversation => "conversation",
            Layer::ToolResult => "tool_result",
            Layer::Retrieved => "retrieved",
            Layer::Summary => "summary",
        }
    }

    pub fn from_name(name: &str) -> CtxResult<Self> {
        // Names are lowercase ASCII: comparing without case needs no lowered copy (an
        // allocation per row of a `fit_columns` request), and the name as written is tried first.
        Layer::ALL
            .into_iter()
            .find(|l| l.name() == name)
            .or_else(|| Layer::ALL.into_iter().find(|l| l.name().eq_ignore_ascii_case(name)))
            .ok_or_else(|| {
                let known: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
                let hint = crate::suggest::hint(name, &known);
                CtxError::invalid(format!("unknown layer {name:?}{hint}; known layers: {}", known.join(", ")))
            })
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_index(i: usize) -> Option<Self> {
        Layer::ALL.get(i).copied()
    }
}

/// A set of layers as a bit mask.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct LayerSet(pub u8);

impl LayerSet {
    pub fn of(layers: &[Layer]) -> Self {
        LayerSet(layers.iter().fold(0, |m, l| m | (1 << l.index())))
    }
    pub fn contains(self, l: Layer) -> bool {
        self.0 & (1 << l.index()) != 0
    }
    pub fn intersects(self, other: LayerSet) -> bool {
        self.0 & other.0 != 0
    }
    pub fn insert(&mut self, l: Layer) {
        self.0 |= 1 << l.index();
    }
    pub fn iter(self) -> impl Iterator<Item = Layer> {
        Layer::ALL.into_iter().filter(move |l| self.contains(*l))
    }
}
