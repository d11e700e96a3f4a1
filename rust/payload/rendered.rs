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

use crate::engine::{self, Budget, FitOutcome, InputNames, Kept, Layer, Policy, SegmentData, TokenSource};
use crate::error::{CtxError, CtxResult};
use crate::limits::{add_total, check_count};
use crate::template::ChatTemplate;
use crate::tokenize::specials::Splitter;

/// How many times a fit is re-run with a lowered ceiling before it is refused.
pub const ROUNDS: usize = 8;

/// Labels of the parts every render carries.
pub const HEAD: &str = "<template head>";
pub const TOOLS: &str = "<tool schemas>";

/// A request, read by the adapter.
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
    /// Messages whose `content` holds one of the vocabulary's added tokens, with the first one
    /// found: the server will read it as a control token, not as text.
    pub control_tokens: Vec<(usize, String)>,
}

/// A render's exact count and how it is shared out.
struct Priced {
    total: usize,
    head: usize,
    shares: Vec<usize>,
}

fn price(src: &dyn TokenSource, splitter: &Splitter, text: &str, starts: &[usize]) -> CtxResult<Priced> {
    let mut p = Priced { total: 0, head: 0, shares: vec![0; starts.len()] };
    let mut started = 0; // how many messages begin at or before the current piece
    for (a, b) in splitter.pieces(text) {
        let n = check_count(src.count(text.get(a..b).unwrap_or(""))?, "a piece of the rendered prompt")?;
        p.total = add_total(p.total, n, "the rendered prompt")?;
        while started < starts.len() && starts[started] <= a {
            started += 1;
        }
        let slot = match started.checked_sub(1) {
            Some(m) => p.shares.get_mut(m),
            None => Some(&mut p.head),
        };
        if let Some(slot) = slot {
            *slot = slot.saturating_add(n);
        }
    }
    Ok(p)
}

fn to_value(json: &serde_json::Value) -> Value {
    Value::from_serialize(json)
}

fn with_content(message: &serde_json::Value, text: &str) -> Value {
    let mut m = message.clone();
    if let Some(obj) = m.as_object_mut() {
        obj.insert("content".into(), serde_json::Value::String(text.to_string()));
    }
    to_value(&m)
}

fn digest_message(text: &str) -> Value {
    to_value(&serde_json::json!({"role": "user", "content": text}))
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

/// Fits `req` under `budget` by `policy`, counting with `src` split by `splitter`.
pub fn fit_rendered(
    mut req: Request<'_>,
    budget: &Budget,
    policy: &Policy,
    src: &dyn TokenSource,
    splitter: &Splitter,
) -> CtxResult<Rendered> {
    let n = req.messages.len();
    let values: Vec<Value> = req.messages.iter().map(to_value).collect();
    let full = req.context(true);
    let (sent, sent_starts) = req.template.render_messages(&full, &values)?;
    let sent_price = price(src, splitter, &sent, &sent_starts)?;
    let (shares, head, tools) = if req.has_tools {
        let (bare, bare_starts) = req.template.render_messages(&req.context(false), &values)?;
        let bare_price = price(src, splitter, &bare, &bare_starts)?;
        let tools = sent_price.total.saturating_sub(bare_price.total);
        (bare_price.shares, bare_price.head, tools)
    } else {
        (sent_price.shares.clone(), sent_price.head, 0)
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
    let mut lowered = 0usize;
    let mut renders = 1 + usize::from(req.has_tools);
    for round in 0..ROUNDS {
        src.interrupted()?;
        let reserve = budget.reserve.saturating_add(lowered);
        if reserve >= budget.window {
            break;
        }
        let b = Budget { reserve, ..budget.clone() };
        let mut out = engine::fit_named(&refs, &costs, &b, policy, src, None, framing, Some(&names))
            .map_err(|e| restate(e, ceiling, lowered))?;
        let untouched = out.removals.is_empty() && out.truncations.is_empty();
        // The request as sent, and its shares (from the render without tools when it has them).
        let (prompt, total, shared) = if untouched {
            (sent.clone(), sent_price.total, Priced { total: sent_price.total.saturating_sub(tools), head, shares: shares.clone() })
        } else {
            let kept = kept_values(&out, &req.messages, &values);
            let (text, starts) = req.template.render_messages(&full, &kept)?;
            renders += 1;
            let p = price(src, splitter, &text, &starts)?;
            if p.total > ceiling {
                if round + 1 < ROUNDS {
                    lowered = lowered.saturating_add(p.total - ceiling);
                    continue;
                }
                break;
            }
            let shared = if req.has_tools {
                let (bare, bare_starts) = req.template.render_messages(&req.context(false), &kept)?;
                renders += 1;
                price(src, splitter, &bare, &bare_starts)?
            } else {
                Priced { total: p.total, head: p.head, shares: p.shares.clone() }
            };
            (text, p.total, shared)
        };
        restate_kept(&mut out, &mut segments, &shared, total, n, req.has_tools);
        out.total = total;
        out.ceiling = ceiling;
        out.over_by = sent_price.total.saturating_sub(ceiling);
        out.count_calls = renders;
        return Ok(Rendered { outcome: out, segments, prompt, control_tokens });
    }
    Err(CtxError::invalid(format!(
        "the rendered request does not fit under the ceiling of {ceiling} tokens: after {ROUNDS} fits, each with the ceiling \
         lowered by what the template's framing added, it is still over (lowered by {lowered} in all); raise the window \
         or lower the reserve"
    )))
}

/// The messages a fit keeps, as the template reads them: originals, shortened copies, digests.
fn kept_values(out: &FitOutcome, messages: &[serde_json::Value], values: &[Value]) -> Vec<Value> {
    let mut kept = Vec::with_capacity(out.kept.len());
    for k in &out.kept {
        match k {
            Kept::Original(i) => {
                if let Some(v) = values.get(*i) {
                    kept.push(v.clone());
                }
            }
            Kept::Truncated { index, text, .. } => {
                if let Some(m) = messages.get(*index) {
                    kept.push(with_content(m, text));
                }
            }
            Kept::Digest { digest } => {
                if let Some(d) = out.digests.get(*digest) {
                    kept.push(digest_message(&d.text));
                }
            }
        }
    }
    kept
}

/// Gives each kept message its share of the final render (`shared`, the render without tools
/// when the request has them), the head its text before the first message and the schemas what
/// they add (`total - shared.total`), so the kept tokens add up to `total`, what is sent.
fn restate_kept(out: &mut FitOutcome, segments: &mut [SegmentData], shared: &Priced, total: usize, n: usize, has_tools: bool) {
    let mut position = 0;
    for k in out.kept.iter_mut() {
        let share = match k {
            Kept::Original(i) | Kept::Truncated { index: i, .. } if *i >= n => continue,
            _ => shared.shares.get(position).copied().unwrap_or(0),
        };
        position += 1;
        match k {
            Kept::Original(i) => {
                if let Some(s) = segments.get_mut(*i) {
                    s.tokens = Some(share);
                }
            }
            Kept::Truncated { tokens, .. } => *tokens = share,
            Kept::Digest { digest } => {
                if let Some(d) = out.digests.get_mut(*digest) {
                    d.tokens = share;
                }
            }
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
