//! Fitting a request for an open model, whose cost is the count of its rendered chat template.
//!
//! 1. **Price.** The messages are rendered twice, with the tool schemas and without them. Each
//!    render is split at the vocabulary's added tokens (`tokenize::specials`) and every piece is
//!    counted through the count cache; the sum is the exact count of the render. The render
//!    without tools shares its tokens out among the messages (`template::track` says where each
//!    begins) and the text before the first message (the template's head); the schemas cost the
//!    difference between the two totals. So the shares add up to the exact count of the request
//!    as sent, wherever the template prints the schemas (Llama 3.1 in the first user message,
//!    Mistral before the last one).
//! 2. **Fit.** The ladder runs once on those shares, as for any adapter.
//! 3. **Check.** What it kept is rendered (with the tools) and counted again; the pieces are
//!    mostly cached, so this costs a render, not a recount. A template's framing can depend on
//!    the neighbours (the first user message carries the schemas; the system prompt moves), so the
//!    kept request can cost more than its shares. Then the ladder runs again with the ceiling
//!    lowered by the overshoot, at most `ROUNDS` times, and the fit is refused if it still does
//!    not fit.
//!
//! The `FitOutcome` returned states the sent request exactly: `total` is the count of the final
//! render, each kept segment's tokens are its share of that render, and the head and schema
//! parts carry the rest, so the kept tokens add up to `total`.

use minijinja::Value;

use super::rendered_plan::{self, Sent};
use super::rendered_price::{price, settle, Priced};
use crate::engine::cache::Pin;
use crate::engine::{self, Budget, FitOptions, FitOutcome, InputNames, Kept, Layer, Policy, SegmentData, TokenSource};
use crate::error::{CtxError, CtxResult, Unfittable};
use crate::template::ChatTemplate;
use crate::tokenize::specials::Splitter;

/// How many times a fit is re-run with a lowered ceiling before it is refused.
pub const ROUNDS: usize = 8;
/// The least a ceiling is lowered by after an overshoot (doubled at each further overshoot).
const MIN_STEP: usize = 4;

/// Labels of the parts every render carries.
pub const HEAD: &str = "<template head>";
pub const TOOLS: &str = "<tool schemas>";

/// A request, read by the adapter.
#[derive(Clone)]
pub struct Request<'a> {
    pub template: &'a ChatTemplate,
    /// Every context variable but `messages`; `tools` is among them when the request has tools.
    pub context: Vec<(String, Value)>,
    pub has_tools: bool,
    /// Each message as the template reads it (tool-call arguments parsed).
    pub messages: Vec<serde_json::Value>,
    /// Per message: its text a rung may shorten (its `content` string, else ""), layer, group
    /// and tool call. `tokens` is filled in here.
    pub segments: Vec<SegmentData>,
    pub input_name: String,
}

/// A fitted request: the outcome (indices as `engine::fit`'s, the messages then the head and the
/// schemas), the segments with their tokens, and the prompt that is sent.
pub struct Rendered {
    pub outcome: FitOutcome,
    pub segments: Vec<SegmentData>,
    pub prompt: String,
    /// The messages sent, in order (`rendered_plan`).
    pub sent: Vec<Sent>,
    /// Messages whose `content` holds one of the vocabulary's added tokens, with the first one
    /// found: the server will read it as a control token, not as text.
    pub control_tokens: Vec<(usize, String)>,
}

fn to_value(json: &serde_json::Value) -> Value {
    Value::from_serialize(json)
}

impl Request<'_> {
    fn context(&self, with_tools: bool) -> Vec<(String, Value)> {
        let mut ctx = self.context.clone();
        if !with_tools {
            for (k, v) in ctx.iter_mut() {
                if k == "tools" {
                    *v = Value::from(());
                }
            }
        }
        ctx
    }
}

/// What a digest (a user message) costs beyond its text: the least any user message with a
/// text content pays beyond that text, in the render without tools.
fn digest_framing(req: &Request<'_>, shares: &[usize], src: &dyn TokenSource) -> CtxResult<usize> {
    let mut least: Option<usize> = None;
    let users = req.messages.iter().enumerate().rev().filter(|(_, m)| m.get("role").and_then(|r| r.as_str()) == Some("user"));
    for (i, m) in users.take(4) {
        if let (Some(text), Some(&share)) = (m.get("content").and_then(|c| c.as_str()), shares.get(i)) {
            let framing = share.saturating_sub(src.count(text)?);
            least = Some(least.map_or(framing, |l| l.min(framing)));
        }
    }
    Ok(least.unwrap_or(4))
}

/// Fits `req` under `budget` by `policy`, counting with `src` split by `splitter`, the previous
/// request's cut (`pins`, `engine::cache`) repeated first.
pub fn fit_rendered(
    mut req: Request<'_>,
    budget: &Budget,
    policy: &Policy,
    src: &dyn TokenSource,
    splitter: &Splitter,
    pins: &[Pin],
) -> CtxResult<Rendered> {
    let n = req.messages.len();
    let values: Vec<Value> = req.messages.iter().map(to_value).collect();
    let full = req.context(true);
    let (sent, sent_starts) = req.template.render_messages(&full, &values)?;
    let sent_price = price(src, splitter, &sent, &sent_starts)?;
    let printed: Vec<Option<String>> = req.messages.iter().map(|m| rendered_plan::printed(m, None)).collect();
    let contents: Vec<Option<&str>> = printed.iter().map(|c| c.as_deref()).collect();
    let (shares, head, tools) = if req.has_tools {
        let (bare, bare_starts) = req.template.render_messages(&req.context(false), &values)?;
        let bare_price = settle(price(src, splitter, &bare, &bare_starts)?, &contents, src)?;
        let tools = sent_price.total.saturating_sub(bare_price.total);
        (bare_price.shares, bare_price.head, tools)
    } else {
        // Without tools the render sent is the one that prices the messages.
        let settled = settle(sent_price.clone(), &contents, src)?;
        (settled.shares, settled.head, 0)
    };
    let framing = digest_framing(&req, &shares, src)?;
    let control_tokens = req
        .messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let found = splitter.found(m.get("content").and_then(|c| c.as_str())?);
            found.first().map(|t| (i, t.to_string()))
        })
        .collect();

    let mut segments = std::mem::take(&mut req.segments);
    for (s, &t) in segments.iter_mut().zip(&shares) {
        s.tokens = Some(t);
    }
    let mut fixed = vec![Some(HEAD.to_string())];
    let mut head_seg = SegmentData::new(HEAD, Layer::System);
    head_seg.tokens = Some(head);
    segments.push(head_seg);
    if req.has_tools {
        let mut t = SegmentData::new(TOOLS, Layer::Tools);
        t.tokens = Some(tools);
        segments.push(t);
        fixed.push(Some(TOOLS.to_string()));
    }
    let mut names = InputNames { input: req.input_name.clone(), fixed: vec![None; n] };
    names.fixed.extend(fixed);
    let costs: Vec<usize> = segments.iter().map(|s| s.tokens.unwrap_or(0)).collect();
    let refs: Vec<&SegmentData> = segments.iter().collect();

    let ceiling = budget.ceiling();
    // The ceiling the ladder is given: lowered when the kept render costs more than its shares,
    // raised when it costs less (shares can over-charge; then the ladder removed too much).
    let mut target = ceiling;
    let (mut passed, mut failed) = (None::<usize>, None::<usize>);
    let mut best: Option<Attempt> = None;
    let mut merge = false;
    let mut lowest: Option<usize> = None; // the smallest rendered total over the ceiling
    let mut overshoots = 0u32;
    let mut renders = 1 + usize::from(req.has_tools);
    for _ in 0..ROUNDS {
        src.interrupted()?;
        let b = Budget { window: target.saturating_add(budget.reserve), ..budget.clone() };
        let opts = FitOptions { framing, names: Some(&names), pins, ..Default::default() };
        let out = match engine::fit_with(&refs, &costs, &b, policy, src, &opts) {
            Ok(out) => out,
            // A lowered ceiling the ladder cannot meet: the best request that fitted stands.
            Err(CtxError::Unfittable(_)) if best.is_some() => break,
            Err(e) => return Err(restate(e, ceiling, ceiling.saturating_sub(target))),
        };
        let believed = out.total;
        let untouched = out.removals.is_empty() && out.truncations.is_empty();
        let mut plan: Vec<Sent> = (0..n).map(|index| Sent::Message { index, content: None }).collect();
        let (prompt, total, kept) = if untouched {
            (sent.clone(), sent_price.total, None)
        } else {
            // Digests stand alone as user messages, unless the template refuses that (roles
            // that must alternate): then, for this request, they join the user messages.
            plan = rendered_plan::plan(&out, &req.messages, n, merge);
            let mut kept = rendered_plan::values(&plan, &out, &req.messages, &values);
            let mut rendered = req.template.render_messages(&full, &kept);
            if rendered.is_err() && !merge && !out.digests.is_empty() {
                merge = true;
                plan = rendered_plan::plan(&out, &req.messages, n, merge);
                kept = rendered_plan::values(&plan, &out, &req.messages, &values);
                rendered = req.template.render_messages(&full, &kept);
            }
            let (text, starts) = rendered?;
            renders += 1;
            let priced = price(src, splitter, &text, &starts)?;
            (text, priced.total, Some((kept, priced)))
        };
        if total <= ceiling {
            passed = passed.max(Some(target));
            let better = best.as_ref().is_none_or(|b| total > b.total);
            if better {
                best = Some(Attempt { out, plan, prompt, total, kept });
            }
            let slack = (ceiling / 100).max(8);
            if untouched || !better || believed <= total.saturating_add(slack) {
                break;
            }
            target = target.saturating_add(believed - total);
            if failed.is_some_and(|f| target >= f) {
                target = (target.min(failed.unwrap_or(target)) + passed.unwrap_or(0)) / 2;
            }
        } else {
            lowest = Some(lowest.map_or(total, |l: usize| l.min(total)));
            failed = Some(failed.map_or(target, |f| f.min(target)));
            // Lowered by the overshoot, and by more each time it comes back: a cut that lands a
            // token over again (a shortened text, a merged digest) must not take every round.
            let step = (total - ceiling).max(MIN_STEP).saturating_mul(1 << overshoots.min(16));
            overshoots += 1;
            target = target.saturating_sub(step);
            if let Some(p) = passed {
                if target <= p {
                    break;
                }
            }
        }
        if target == 0 || passed.is_some_and(|p| target <= p) || failed.is_some_and(|f| target >= f) {
            break;
        }
    }
    let Some(a) = best else {
        let total = lowest.unwrap_or(sent_price.total);
        return Err(Unfittable {
            ceiling,
            total,
            shortfall: total.saturating_sub(ceiling),
            detail: vec![format!(
                "after {ROUNDS} fits, each under a ceiling lowered by what the chat template's framing added to the \
                 messages kept, the rendered request is still over; raise the window or lower the reserve"
            )],
            ..Unfittable::default()
        }
        .into());
    };
    let Attempt { mut out, plan, prompt, total, kept } = a;
    // The shares of what is sent, from the render without tools when it has them.
    let shared = match kept {
        None => Priced { total: sent_price.total.saturating_sub(tools), head, shares: shares.clone() },
        Some((kept, priced)) => {
            let contents = rendered_plan::contents(&plan, &out, &req.messages);
            let contents: Vec<Option<&str>> = contents.iter().map(|c| c.as_deref()).collect();
            let bare = if req.has_tools {
                let (text, starts) = req.template.render_messages(&req.context(false), &kept)?;
                renders += 1;
                price(src, splitter, &text, &starts)?
            } else {
                priced
            };
            settle(bare, &contents, src)?
        }
    };
    restate_kept(&mut out, &mut segments, &plan, &shared, total, n, req.has_tools);
    out.total = total;
    out.ceiling = ceiling;
    out.over_by = sent_price.total.saturating_sub(ceiling);
    out.count_calls = renders;
    Ok(Rendered { outcome: out, segments, prompt, sent: plan, control_tokens })
}

/// A fit whose kept render was under the ceiling: the best one is sent.
struct Attempt {
    out: FitOutcome,
    plan: Vec<Sent>,
    prompt: String,
    total: usize,
    /// The kept messages as the template read them and their render's price (None: nothing
    /// was removed).
    kept: Option<(Vec<Value>, Priced)>,
}

/// Gives each message sent its share of the final render (`shared`: the render without tools
/// when the request has them), the head its text before the first message and the schemas what
/// they add (`total - shared.total`), so the kept tokens add up to `total`, what is sent. A
/// digest merged into a user message is in that message's share, and states 0 of its own.
fn restate_kept(
    out: &mut FitOutcome,
    segments: &mut [SegmentData],
    sent: &[Sent],
    shared: &Priced,
    total: usize,
    n: usize,
    has_tools: bool,
) {
    let mut message_share = vec![None; n];
    let mut digest_share = vec![0; out.digests.len()];
    for (position, s) in sent.iter().enumerate() {
        let share = shared.shares.get(position).copied().unwrap_or(0);
        match s {
            Sent::Message { index, .. } => {
                if let Some(slot) = message_share.get_mut(*index) {
                    *slot = Some(share);
                }
            }
            Sent::Digest { digest } => {
                if let Some(slot) = digest_share.get_mut(*digest) {
                    *slot = share;
                }
            }
        }
    }
    for k in out.kept.iter_mut() {
        match k {
            Kept::Original(i) => {
                if let (Some(s), Some(Some(share))) = (segments.get_mut(*i), message_share.get(*i)) {
                    s.tokens = Some(*share);
                }
            }
            Kept::Truncated { index, tokens, .. } => {
                if let Some(Some(share)) = message_share.get(*index) {
                    *tokens = *share;
                }
            }
            Kept::Digest { .. } => {}
        }
    }
    let kept_digests: Vec<usize> = out.kept.iter().filter_map(|k| if let Kept::Digest { digest } = k { Some(*digest) } else { None }).collect();
    for d in kept_digests {
        if let (Some(rec), Some(&share)) = (out.digests.get_mut(d), digest_share.get(d)) {
            rec.tokens = share;
        }
    }
    if let Some(h) = segments.get_mut(n) {
        h.tokens = Some(shared.head);
    }
    if has_tools {
        if let Some(t) = segments.get_mut(n + 1) {
            t.tokens = Some(total.saturating_sub(shared.total));
        }
    }
}

/// An `Unfittable` from a fit run under a lowered ceiling names the caller's ceiling.
fn restate(e: CtxError, ceiling: usize, lowered: usize) -> CtxError {
    match e {
        CtxError::Unfittable(mut u) if lowered > 0 => {
            u.detail.push(format!(
                "(the ladder ran with the ceiling lowered by {lowered} tokens, what the chat template's framing added \
                 to the shares of the messages kept; the ceiling is {ceiling})"
            ));
            CtxError::Unfittable(u)
        }
        other => other,
    }
}
