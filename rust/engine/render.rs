//! The trace as text, for a terminal of 80 columns: a line that would be wider breaks where the
//! reader expects it (between layers, between summary items, before a rung's floor) and goes on
//! indented, never mid-word.
//!
//! ```text
//! ceiling 28,000  (window 32,000 − reserve 4,000)
//! start   system 1,462  tools 2,840  retrieval 15,900  history 12,300
//!         total 32,502   over by 4,502
//!
//! rung 1  history.drop_oldest_exchange  (floor: first 1 + last 3 exchanges)
//!    ex2  −1,180   history 11,120   total 31,322   over by 3,322
//!
//! send    27,092 tokens · 5 units dropped · retrieval untouched ·
//!         floor not reached · 1 count
//! ```
//!
//! A row says what happened to the unit right after its name (`ex1  digested −2,571`; a drop
//! says nothing), then the layers that changed with what they hold now, then the request's
//! total. When a row would pass 80 columns (long names such as `digest of messages[10..14]`, a
//! unit spanning `conversation+tool_result`), every row takes two lines: the unit and what
//! happened, then the figures.

use super::outcome::Row;
use super::trace::Trace;
use crate::fmt::{pad_left, pad_right, plural, thousands, wrap_parts, COLUMNS};
use crate::limits::{signed, unsigned};

/// Where a continuation line starts: under the first figure after "start   ".
const INDENT: usize = 8;
/// Where a row's figures start on their own line.
const FIGURES_INDENT: usize = 6;
/// A label wider than this is not padded: one huge key must not push every row off the screen.
const MAX_LABEL_PAD: usize = 40;

fn over_text(over: i64) -> String {
    if over > 0 {
        format!("over by {}", thousands(unsigned(over)))
    } else {
        format!("fits, {} spare", thousands(unsigned(-over)))
    }
}

fn verb(r: &Row) -> &'static str {
    match r.action {
        "drop" => "",
        "truncate" => "truncated ",
        _ => "digested ",
    }
}

struct Widths {
    label: usize,
    delta: usize,
}

fn figures(r: &Row, layer_w: usize) -> String {
    format!(
        "{} {}   total {}   {}",
        pad_right(&r.layer, layer_w),
        pad_left(&thousands(r.layer_after), 6),
        pad_left(&thousands(r.total_after), 6),
        over_text(r.over_after),
    )
}

fn one_line(r: &Row, w: &Widths, layer_w: usize) -> String {
    format!(
        "   {}  {}−{}   {}",
        pad_left(&r.label, w.label),
        verb(r),
        pad_left(&thousands(r.delta), w.delta),
        figures(r, layer_w)
    )
}

fn two_lines(r: &Row, w: &Widths, layer_w: usize) -> [String; 2] {
    let label = if w.label <= MAX_LABEL_PAD { pad_right(&r.label, w.label) } else { r.label.to_string() };
    [
        format!("   {label}  {}−{}", verb(r), pad_left(&thousands(r.delta), w.delta)),
        format!("{}{}", " ".repeat(FIGURES_INDENT), figures(r, layer_w)),
    ]
}

impl Trace {
    pub fn render(&self) -> String {
        let mut lines: Vec<String> = Vec::new();
        let ceiling = format!(
            "ceiling {}  (window {} − reserve {})",
            thousands(self.ceiling),
            thousands(self.window),
            thousands(self.reserve)
        );
        match self.target {
            Some(t) => {
                let watermark = format!("low watermark: evict down to {}", thousands(t));
                lines.extend(wrap_parts("", &[ceiling, watermark], " · ", INDENT, COLUMNS));
            }
            None => lines.push(ceiling),
        }
        let layers: Vec<String> = self.start_layers.iter().map(|(l, n)| format!("{l} {}", thousands(*n))).collect();
        lines.extend(wrap_parts("start   ", &layers, "  ", INDENT, COLUMNS));
        lines.push(format!(
            "        total {}   {}",
            thousands(self.start_total),
            over_text(signed(self.start_total) - signed(self.ceiling))
        ));
        for (label, size, cap) in &self.caps {
            lines.push(format!(
                "cap     {label} {} over its cap of {} by {}",
                thousands(*size),
                thousands(*cap),
                thousands(size.saturating_sub(*cap))
            ));
        }
        let rows = || self.sections.iter().flat_map(|s| s.rows.iter());
        let w = Widths {
            label: rows().map(|r| r.label.chars().count()).max().unwrap_or(0).max(3),
            delta: rows().map(|r| thousands(r.delta).len()).max().unwrap_or(0),
        };
        let layer_w = |rows: &[Row]| rows.iter().map(|r| r.layer.chars().count()).max().unwrap_or(0);
        let split = self.sections.iter().any(|s| s.rows.iter().any(|r| one_line(r, &w, layer_w(&s.rows)).chars().count() > COLUMNS));
        for s in &self.sections {
            lines.push(String::new());
            self.rung_header(s, &mut lines);
            let lw = layer_w(&s.rows);
            for r in &s.rows {
                if split {
                    lines.extend(two_lines(r, &w, lw));
                } else {
                    lines.push(one_line(r, &w, lw));
                }
            }
            if s.floor_reached {
                lines.push("        floor reached".into());
            } else if s.exhausted {
                lines.push("        nothing left to take".into());
            }
        }
        lines.push(String::new());
        if let Some(cache) = &self.cache {
            lines.push(format!("cache   {cache}"));
        }
        lines.extend(self.summary());
        let mut out = String::new();
        for line in lines {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// "rung 1  name  (floor: …; enforces cap: …)", the parenthesis on lines of its own when the
    /// whole would pass 80 columns.
    fn rung_header(&self, s: &super::outcome::Section, lines: &mut Vec<String>) {
        let mut notes = Vec::new();
        if !s.floor.is_empty() {
            notes.push(format!("floor: {}", s.floor));
        }
        if !s.caps.is_empty() {
            notes.push(format!("enforces cap: {}", s.caps.join(", ")));
        }
        let head = format!("rung {}  {}", s.rung + 1, s.name);
        let whole = if notes.is_empty() { head.clone() } else { format!("{head}  ({})", notes.join("; ")) };
        if whole.chars().count() <= COLUMNS {
            lines.push(whole);
        } else {
            lines.push(head);
            lines.extend(notes.into_iter().map(|n| format!("{}{n}", " ".repeat(INDENT))));
        }
    }

    /// The last line: what is sent (or, for an attempt that failed, by how much it is short).
    fn summary(&self) -> Vec<String> {
        let mut parts = vec![format!("{} tokens", thousands(self.final_total))];
        if self.failed {
            parts.push(format!("short by {}", thousands(self.final_total.saturating_sub(self.ceiling))));
        }
        if self.units_removed + self.units_truncated + self.units_digested == 0 {
            parts.push("nothing removed".into());
        }
        if self.units_removed > 0 {
            parts.push(format!("{} unit{} dropped", self.units_removed, plural(self.units_removed)));
        }
        if self.units_digested > 0 {
            parts.push(format!("{} digested", self.units_digested));
        }
        if self.units_truncated > 0 {
            parts.push(format!("{} truncated", self.units_truncated));
        }
        for u in &self.untouched {
            parts.push(format!("{u} untouched"));
        }
        // A fit that succeeded says whether it got there without touching a floor; "floor
        // reached" is news only about an attempt that failed (each rung's own line says which
        // floor stopped it).
        if self.failed && self.floor_reached {
            parts.push("floor reached".into());
        } else if !self.failed && !self.sections.is_empty() && !self.floor_reached {
            parts.push("floor not reached".into());
        }
        if !self.failed {
            parts.push(format!("{} count{}", self.count_calls, plural(self.count_calls)));
        }
        let lead = if self.failed { "failed  " } else { "send    " };
        wrap_parts(lead, &parts, " · ", INDENT, COLUMNS)
    }
}
