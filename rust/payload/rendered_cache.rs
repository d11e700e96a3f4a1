//! A chat-template fit planned for the server's prompt cache (`engine::cache::plan`): the
//! previous request's cut repeated while the rendered prompt fits, else moved to a target with
//! room for the next turns. The unchanged prefix is measured on the rendered prompts' token ids,
//! not on the messages: a template can change what it renders before a message it keeps (a
//! Qwen3 thinking block dropped from an older turn).

use super::prefix::reusable_prefix;
use super::rendered::{fit_rendered, Rendered, Request};
use crate::engine::cache::{fingerprint, plan, settle, CacheProfile, Report, Sent};
use crate::engine::{Budget, Policy, TokenSource};
use crate::error::CtxResult;
use crate::tokenize::specials::Splitter;
use crate::tokenize::TokenCounter;

/// `fit_rendered` under the cache plan; returns the fit, what it sent and its report. `counter`
/// (a native tokenizer) measures the unchanged prefix on token ids; without one it is the
/// messages' common run. `show` puts the report's line in the trace.
#[allow(clippy::too_many_arguments)]
pub fn fit_rendered_planned(
    req: Request<'_>,
    budget: &Budget,
    policy: &Policy,
    src: &dyn TokenSource,
    splitter: &Splitter,
    counter: Option<&TokenCounter>,
    previous: Option<&Sent>,
    profile: &CacheProfile,
    show: bool,
) -> CtxResult<(Rendered, Sent, Report)> {
    // The messages' own counts identify them (the template's framing is the same for the same
    // message); they are cached, so the fit's own pricing does not count them again.
    let counts = req.segments.iter().map(|s| src.count(&s.text)).collect::<CtxResult<Vec<usize>>>()?;
    let fps: Vec<u64> = req.segments.iter().zip(&counts).map(|(s, &n)| fingerprint(s, n)).collect();
    let rungs: Vec<String> = policy.rungs.iter().map(|r| r.name.clone()).collect();
    let ceiling = budget.ceiling();
    let planned = plan(
        ceiling,
        previous,
        &fps,
        &counts,
        &rungs,
        profile,
        |aim, pins| match aim.filter(|&t| t < ceiling) {
            None => fit_rendered(req.clone(), budget, policy, src, splitter, pins),
            Some(low) => {
                let b = Budget::new(low.saturating_add(budget.reserve), budget.reserve, budget.caps)?;
                let mut r = fit_rendered(req.clone(), &b, policy, src, splitter, pins)?;
                r.outcome.ceiling = ceiling;
                r.outcome.over_by = r.outcome.trace.start_total.saturating_sub(ceiling);
                r.outcome.trace.window = budget.window;
                r.outcome.trace.ceiling = ceiling;
                r.outcome.trace.target = Some(low);
                Ok(r)
            }
        },
        |r: &Rendered| &r.outcome,
    )?;
    let mut done = planned.outcome;
    let prefix = match (previous.and_then(|p| p.prompt.as_deref()), counter) {
        (Some(before), Some(c)) => Some(reusable_prefix(c, before, &done.prompt)?),
        _ => None,
    };
    let shares: Vec<usize> = done.segments.iter().map(|s| s.tokens.unwrap_or(0)).collect();
    let (mut sent, report) = settle(&mut done.outcome, planned.cut, &fps, &shares, &[], rungs, previous, profile, prefix, Vec::new(), show);
    sent.prompt = Some(done.prompt.clone());
    Ok((done, sent, report))
}
