//! The built-in policies, one per seed document.

use super::policy::{Action, Filter, Floor, Order, Policy, Rung, Until};
use super::segment::{Layer, LayerSet};
use crate::error::CtxError;

const HISTORY: [Layer; 3] = [Layer::Conversation, Layer::ToolResult, Layer::Summary];

fn rung(name: &str, layers: &[Layer], order: Order, action: Action) -> Rung {
    Rung {
        name: name.to_string(),
        layers: LayerSet::of(layers),
        filter: None,
        order,
        action,
        floor: Floor::default(),
        until: Until::Fits,
    }
}

/// ContextWindow's default: conversation (with its tool results and summaries) oldest first,
/// then retrieved lowest score first.
pub fn context_window() -> Policy {
    Policy {
        rungs: vec![
            rung("conversation.oldest_first", &HISTORY, Order::Oldest, Action::Drop),
            rung("retrieved.lowest_score_first", &[Layer::Retrieved], Order::LowestScore, Action::Drop),
        ],
        protected: Layer::PROTECTED,
        labels: Policy::default_labels(),
    }
}

/// The troubleshooting assistant's ladder: whole exchanges oldest first down to the first user
/// turn plus the last three; then retrieved chunks down to four; then truncate chunk bodies.
pub fn troubleshooting() -> Policy {
    let mut history = rung("history.drop_oldest_exchange", &HISTORY, Order::Oldest, Action::Drop);
    history.floor = Floor { keep_first: 1, keep_last: 3, ..Floor::default() };
    let mut chunks = rung("retrieval.drop_lowest_ranked_chunk", &[Layer::Retrieved], Order::LowestScore, Action::Drop);
    chunks.floor = Floor { keep_top: 4, ..Floor::default() };
    let bodies = rung(
        "retrieval.truncate_chunk_bodies",
        &[Layer::Retrieved],
        Order::LowestScore,
        Action::Truncate { min_tokens: 128 },
    );
    let mut labels = Policy::default_labels();
    for l in HISTORY {
        labels[l.index()] = "history".into();
    }
    labels[Layer::Retrieved.index()] = "retrieval".into();
    Policy { rungs: vec![history, chunks, bodies], protected: Layer::PROTECTED, labels }
}

/// Seven tiers, first to go to never: stale (consumed) tool results; retrieved below the top k;
/// level-1 summaries covered by a level-2; the rolling summary; recent turns oldest first.
///
/// Only consumed (stale) tool results are tier 1. A tool result that is not stale and stands
/// outside any exchange (no CONVERSATION segment in its unit) is output the model has not used
/// yet: current material, not a "recent verbatim turn". `recent_turns` therefore takes units
/// holding a conversation turn only, and such live output goes last, on its own final rung
/// (`unconsumed_tool_results`, oldest first), only when every recent turn is gone.
pub fn seven_tier(top_k: usize) -> Policy {
    let mut stale = rung("stale_tool_results", &[Layer::ToolResult], Order::Oldest, Action::Drop);
    stale.filter = Some(Filter::Stale);
    let mut below = rung("retrieved_below_top_k", &[Layer::Retrieved], Order::LowestScore, Action::Drop);
    below.floor = Floor { keep_top: top_k, ..Floor::default() };
    let mut covered = rung("covered_level1_summaries", &[Layer::Summary], Order::Oldest, Action::Drop);
    covered.filter = Some(Filter::Covered);
    let mut rolling = rung("rolling_summary", &[Layer::Summary], Order::Oldest, Action::Drop);
    rolling.filter = Some(Filter::Level(0));
    // A unit is eligible when any member is in the rung's layers: an exchange with its tool
    // results holds a CONVERSATION segment, a lone live tool result does not.
    let recent = rung("recent_turns", &[Layer::Conversation], Order::Oldest, Action::Drop);
    let live = rung("unconsumed_tool_results", &[Layer::ToolResult], Order::Oldest, Action::Drop);
    Policy {
        rungs: vec![stale, below, covered, rolling, recent, live],
        protected: Layer::PROTECTED,
        labels: Policy::default_labels(),
    }
}

/// One rung over everything unprotected by the rank tuple (recoverable, stale, relevance, size);
/// the last `keep_last` exchanges are pinned with the system prompt, operator constraints
/// (PINNED) and the current task.
pub fn ranked(keep_last: usize) -> Policy {
    let mut all = rung(
        "ranked",
        &[Layer::Conversation, Layer::ToolResult, Layer::Retrieved, Layer::Summary],
        Order::Rank,
        Action::Drop,
    );
    all.floor = Floor { keep_last, ..Floor::default() };
    Policy { rungs: vec![all], protected: Layer::PROTECTED, labels: Policy::default_labels() }
}

/// For agent transcripts (the adapters' default), gentlest first, oldest first on each rung:
///
/// 1. `tool_exchanges.digest_oldest`: tool exchanges replaced by their digests, keeping the last
///    `keep_last` exchanges verbatim;
/// 2. `exchanges.drop_oldest`: whole exchanges (or their digests) dropped, keeping the same last
///    `keep_last` exchanges;
/// 3. `recent_tool_exchanges.digest`: then those last exchanges digested too;
/// 4. `recent_exchanges.drop`: then dropped;
/// 5. `retrieved.lowest_score_first`.
///
/// The first four rungs draw from the same layers (conversation, tool results, summaries), so a
/// floor means the same exchanges on each: the newest exchanges are digested before any of them
/// is dropped, and a request a little over loses a digest's worth, not a whole exchange. A tool
/// call never loses its result: the exchange goes whole, or is replaced whole by its record.
pub fn agent(keep_last: usize) -> Policy {
    let floor = Floor { keep_last, ..Floor::default() };
    let mut digest = rung("tool_exchanges.digest_oldest", &HISTORY, Order::Oldest, Action::Digest);
    digest.floor = floor;
    let mut drop = rung("exchanges.drop_oldest", &HISTORY, Order::Oldest, Action::Drop);
    drop.floor = floor;
    Policy {
        rungs: vec![
            digest,
            drop,
            rung("recent_tool_exchanges.digest", &HISTORY, Order::Oldest, Action::Digest),
            rung("recent_exchanges.drop", &HISTORY, Order::Oldest, Action::Drop),
            rung("retrieved.lowest_score_first", &[Layer::Retrieved], Order::LowestScore, Action::Drop),
        ],
        protected: Layer::PROTECTED,
        labels: Policy::default_labels(),
    }
}

/// The error for a preset name that is not in `by_name`, with the likeliest one it meant.
pub fn unknown(name: &str) -> CtxError {
    let hint = crate::suggest::hint(name, &PRESET_NAMES);
    CtxError::invalid(format!("unknown policy preset {name:?}{hint}; presets: {}", PRESET_NAMES.join(", ")))
}

pub const PRESET_NAMES: [&str; 5] = ["context_window", "troubleshooting", "seven_tier", "ranked", "agent"];

/// A preset by name, with its documented defaults (`seven_tier` top 3, `ranked` and `agent` keep
/// the last 2 exchanges). "default" is `context_window`. The one table the bindings and the
/// command line read, so a new preset is one function and one line here.
pub fn by_name(name: &str) -> Option<(&'static str, Policy)> {
    let found = match name {
        "context_window" | "default" => ("context_window", context_window()),
        "troubleshooting" => ("troubleshooting", troubleshooting()),
        "seven_tier" => ("seven_tier", seven_tier(DEFAULT_TOP_K)),
        "ranked" => ("ranked", ranked(DEFAULT_KEEP_LAST)),
        "agent" => ("agent", agent(DEFAULT_KEEP_LAST)),
        _ => return None,
    };
    Some(found)
}

/// `seven_tier`'s default: retrieved chunks beyond the 3 best may go.
pub const DEFAULT_TOP_K: usize = 3;
/// `ranked` and `agent`: the last 2 exchanges stay verbatim.
pub const DEFAULT_KEEP_LAST: usize = 2;
