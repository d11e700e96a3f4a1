//! What a fit tells its caller about the cache: the unchanged prefix, the predicted reads,
//! writes and uncached tokens under the profile, and what became of the cut, also as the
//! trace's one `cache` line.

use super::plan::Cut;
use super::profile::{CachePrediction, CacheProfile};
use super::sent::Sent;
use crate::engine::FitOutcome;
use crate::fmt::thousands;

#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub profile: String,
    /// Whether a previous request was given.
    pub previous: bool,
    pub prediction: CachePrediction,
    pub cut: Cut,
    pub total: usize,
}

impl Report {
    /// "openai · 18,432 of 24,010 tokens as before · read 18,432 · write 0 · uncached 5,578 ·
    /// cut kept".
    pub fn line(&self) -> String {
        let p = &self.prediction;
        let prefix = if self.previous {
            format!("{} of {} tokens as before", thousands(p.unchanged_prefix), thousands(self.total))
        } else {
            "no previous request".to_string()
        };
        let cut = match self.cut {
            Cut::Fresh => "cut not planned (no previous request)".to_string(),
            Cut::Kept => "cut kept".to_string(),
            Cut::Moved { target: Some(t) } => format!("cut moved (down to {})", thousands(t)),
            Cut::Moved { target: None } => "cut moved (exactly to fit)".to_string(),
        };
        format!(
            "{} · {prefix} · read {} · write {} · uncached {} · {cut}",
            self.profile,
            thousands(p.read),
            thousands(p.write),
            thousands(p.uncached)
        )
    }
}

/// What this request sent, and the report against `previous`. `prefix` is the unchanged
/// prefix when the caller measured it on the rendered prompt (open models); otherwise it is the
/// sent items' common run. `marks` are this payload's cache breakpoints (tokens before each).
/// With `show`, the trace gets the report's line.
#[allow(clippy::too_many_arguments)]
pub fn settle(
    out: &mut FitOutcome,
    cut: Cut,
    fps: &[u64],
    counts: &[usize],
    front: &[usize],
    rungs: Vec<String>,
    previous: Option<&Sent>,
    profile: &CacheProfile,
    prefix: Option<usize>,
    marks: Vec<usize>,
    show: bool,
) -> (Sent, Report) {
    let mut sent = Sent::of(fps, counts, front, out, rungs);
    sent.breakpoints = marks;
    let unchanged = previous.map(|p| prefix.unwrap_or_else(|| sent.unchanged_prefix(p)));
    let previous_marks = previous.map_or(&[][..], |p| p.breakpoints.as_slice());
    let prediction = profile.predict(out.total, unchanged, previous_marks, &sent.breakpoints);
    let report = Report { profile: profile.name.clone(), previous: previous.is_some(), prediction, cut, total: out.total };
    if show {
        out.trace.cache = Some(report.line());
    }
    (sent, report)
}
