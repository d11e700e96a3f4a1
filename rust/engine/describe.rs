//! `Policy.describe()`: the documented order, first to go … never, as a reviewer reads it on a
//! terminal. One block per rung, one attribute per line, so it fits 80 columns whatever the
//! policy (a long value wraps at a space under its own column).

use super::policy::{Action, Filter, Order, Policy, Until};
use crate::fmt::{wrap_parts, COLUMNS};

/// Where an attribute's value starts: "     draws from  ".
const VALUE_COLUMN: usize = 17;

fn order_text(o: Order) -> &'static str {
    match o {
        Order::Oldest => "oldest first",
        Order::Newest => "newest first",
        Order::LowestScore => "lowest score first",
        Order::Largest => "largest first",
        Order::Rank => "rank: recoverable, stale, low score, large",
    }
}

/// What a rung draws from: layers sharing a label read as one, "history (conversation,
/// tool_result, summary)", qualified by the rung's filter.
pub(super) fn draws_from(p: &Policy, r: &super::policy::Rung) -> String {
    let mut by_label: Vec<(String, Vec<&str>)> = Vec::new();
    for l in r.layers.iter() {
        let lab = p.label(l).to_string();
        match by_label.iter_mut().find(|(x, _)| *x == lab) {
            Some((_, names)) => names.push(l.name()),
            None => by_label.push((lab, vec![l.name()])),
        }
    }
    let from: Vec<String> = by_label
        .into_iter()
        .map(|(lab, names)| if names == [lab.as_str()] { lab } else { format!("{lab} ({})", names.join(", ")) })
        .collect();
    let from = from.join(", ");
    match r.filter {
        None => from,
        Some(Filter::Stale) => format!("stale {from}"),
        Some(Filter::Recoverable) => format!("recoverable {from}"),
        Some(Filter::Covered) => format!("{from} level-1 covered by a level-2"),
        Some(Filter::Level(0)) => format!("{from} rolling (level 0)"),
        Some(Filter::Level(n)) => format!("{from} level {n}"),
    }
}

fn attribute(out: &mut String, name: &str, value: &str) {
    let lead = format!("     {name:<11} ");
    let words: Vec<String> = value.split(' ').filter(|w| !w.is_empty()).map(str::to_string).collect();
    for line in wrap_parts(&lead, &words, " ", VALUE_COLUMN, COLUMNS) {
        out.push_str(&line);
        out.push('\n');
    }
}

/// The documented order, first to go … never:
///
/// ```text
/// policy troubleshooting — first to go … never
/// 1  history.drop_oldest_exchange
///      draws from  history (conversation, tool_result, summary)
///      order       oldest first
///      action      drop whole unit
///      floor       first 1 + last 3 exchanges
/// …
/// never: system, tools, pinned, current_turn
/// ```
///
/// A rung with `until = "cap"` adds an `until` line naming what it enforces.
pub fn describe(name: Option<&str>, p: &Policy) -> String {
    let mut out = format!("policy {} — first to go … never\n", name.unwrap_or("(custom)"));
    for (i, r) in p.rungs.iter().enumerate() {
        out.push_str(&format!("{}  {}\n", i + 1, r.name));
        attribute(&mut out, "draws from", &draws_from(p, r));
        attribute(&mut out, "order", order_text(r.order));
        let action = match r.action {
            Action::Drop => "drop whole unit".to_string(),
            Action::Truncate { min_tokens } => format!("truncate body (>= {min_tokens} tokens)"),
            Action::Digest => "digest tool exchange".to_string(),
        };
        attribute(&mut out, "action", &action);
        let floor = r.floor.describe();
        attribute(&mut out, "floor", if floor.is_empty() { "none" } else { &floor });
        if r.until == Until::Cap {
            attribute(&mut out, "until", "its layers are within their Budget caps (runs even when the request fits)");
        }
    }
    let never: Vec<&str> = p.protected.iter().map(|l| l.name()).collect();
    out.push_str(&format!("never: {}\n", never.join(", ")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy_format::from_toml;
    use crate::engine::presets;

    #[test]
    fn describe_lists_rungs_first_to_never_in_80_columns() {
        let d = describe(Some("troubleshooting"), &presets::troubleshooting());
        let lines: Vec<&str> = d.lines().collect();
        assert!(lines[0].contains("first to go"));
        assert_eq!(lines[1], "1  history.drop_oldest_exchange");
        assert_eq!(lines[2], "     draws from  history (conversation, tool_result, summary)");
        assert_eq!(lines[3], "     order       oldest first");
        assert_eq!(lines[4], "     action      drop whole unit");
        assert_eq!(lines[5], "     floor       first 1 + last 3 exchanges");
        assert!(d.contains("     action      truncate body (>= 128 tokens)"), "{d}");
        assert!(d.ends_with("never: system, tools, pinned, current_turn\n"), "{d}");
        // Every preset, as `Policy.preset(name)` finds it: a new one is covered without an edit here.
        for (name, p) in presets::PRESET_NAMES.iter().filter_map(|n| presets::by_name(n)) {
            for line in describe(Some(name), &p).lines() {
                assert!(line.chars().count() <= COLUMNS, "{name}: {line:?}");
            }
        }
    }

    #[test]
    fn a_cap_rung_says_what_it_enforces() {
        let (_, p) = from_toml(
            "[[rungs]]\nname = \"retrieved.to_cap\"\nlayers = [\"retrieved\"]\norder = \"lowest_score\"\nuntil = \"cap\"\n",
        )
        .unwrap();
        let d = describe(None, &p);
        assert!(d.contains("     until       its layers are within their Budget caps (runs even when the\n"), "{d}");
        assert!(d.contains("\n                 request fits)\n"), "{d}");
        assert!(d.lines().all(|l| l.chars().count() <= COLUMNS), "{d}");
    }
}
