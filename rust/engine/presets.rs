//! The built-in policies, one per seed document.

use super::policy::{Action, Filter, Floor, Order, Policy, Rung};
use super::segment::{Layer, LayerSet};

const HISTORY: [Layer; 3] = [Layer::Conversation, Layer::ToolResult, Layer::Summary];

fn rung(name: &str, layers: &[Layer], order: Order, action: Action) -> Rung {
    Rung {
        name: name.to_string(),
        layers: LayerSet::of(layers),
        filter: None,
        order,
        action,
        floor: Floor::default(),
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

/// Seven tiers, first to go to never: stale tool results; retrieved below the top k; level-1
/// summaries covered by a level-2; the rolling summary; recent turns oldest first.
pub fn seven_tier(top_k: usize) -> Policy {
    let mut stale = rung("stale_tool_results", &[Layer::ToolResult], Order::Oldest, Action::Drop);
    stale.filter = Some(Filter::Stale);
    let mut below = rung("retrieved_below_top_k", &[Layer::Retrieved], Order::LowestScore, Action::Drop);
    below.floor = Floor { keep_top: top_k, ..Floor::default() };
    let mut covered = rung("covered_level1_summaries", &[Layer::Summary], Order::Oldest, Action::Drop);
    covered.filter = Some(Filter::Covered);
    let mut rolling = rung("rolling_summary", &[Layer::Summary], Order::Oldest, Action::Drop);
    rolling.filter = Some(Filter::Level(0));
    let recent = rung("recent_turns", &[Layer::Conversation, Layer::ToolResult], Order::Oldest, Action::Drop);
    Policy {
        rungs: vec![stale, below, covered, rolling, recent],
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

/// For agent transcripts (the adapters' default): first replace old tool exchanges by their
/// digests (keeping the last `keep_last` exchanges verbatim), then drop whole exchanges oldest
/// first, then retrieved lowest score first. A tool call never loses its result: the exchange
/// goes whole, or is replaced whole by its record.
pub fn agent(keep_last: usize) -> Policy {
    let mut digest = rung("tool_exchanges.digest_oldest", &[Layer::ToolResult], Order::Oldest, Action::Digest);
    digest.floor = Floor { keep_last, ..Floor::default() };
    Policy {
        rungs: vec![
            digest,
            rung("exchanges.drop_oldest", &HISTORY, Order::Oldest, Action::Drop),
            rung("retrieved.lowest_score_first", &[Layer::Retrieved], Order::LowestScore, Action::Drop),
        ],
        protected: Layer::PROTECTED,
        labels: Policy::default_labels(),
    }
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
