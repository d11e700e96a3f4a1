//! The error that replaces a damaged request: what the policy could not touch, grouped so a
//! reader sees at once which part is too big (`current_turn: messages[24..35], 18,356 tokens`),
//! what the floors kept, and what would make it fit.

use super::ladder::Ladder;
use super::naming::{bounded, default_label, list_segments};
use super::segment::Layer;
use crate::error::Unfittable;
use crate::fmt::{tokens, wrap_text, COLUMNS};

/// Where the members of one group are: input positions, or keys and `#positions`.
fn place(lad: &Ladder<'_>, members: &[usize]) -> String {
    match lad.names {
        Some(n) => n.name(members),
        None => list_segments(lad.segs, members),
    }
}

fn fixed_label<'l>(lad: &'l Ladder<'_>, m: usize) -> Option<&'l str> {
    lad.names.and_then(|n| n.fixed_label(m))
}

/// "a or b", "a, b, or c".
fn either(options: &[&str]) -> String {
    match options {
        [] => String::new(),
        [one] => one.to_string(),
        [a, b] => format!("{a} or {b}"),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
    }
}

/// What the policy could not touch, for the error that replaces a damaged request.
pub(super) fn unfittable(lad: &Ladder<'_>) -> Unfittable {
    let protected_units = || (0..lad.units.len()).filter(|&u| lad.units[u].alive && lad.units[u].protected);
    let mut components = Vec::new();
    for u in protected_units() {
        for m in lad.members(u).filter(|&m| lad.seg_alive[m]) {
            let s = lad.segs[m];
            let label = match &s.key {
                Some(k) => format!("{} {k:?}", lad.policy.label(s.layer)),
                None => lad.policy.label(s.layer).to_string(),
            };
            components.push((label, lad.seg_tokens[m]));
        }
    }
    let mut detail = Vec::new();
    // Grouped by layer label in display order, then each fixed part under its own label (reply
    // priming is a fixed part of the system layer, not a second system prompt).
    let held: Vec<usize> =
        protected_units().flat_map(|u| lad.members(u)).filter(|&m| lad.seg_alive[m]).collect();
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for layer in Layer::DISPLAY_ORDER {
        let label = lad.policy.label(layer);
        let mut members: Vec<usize> =
            held.iter().copied().filter(|&m| lad.segs[m].layer == layer && fixed_label(lad, m).is_none()).collect();
        if members.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(l, _)| l == label) {
            Some((_, ms)) => ms.append(&mut members),
            None => groups.push((label.to_string(), members)),
        }
    }
    let mut lines: Vec<String> = Vec::new();
    for (label, mut members) in groups {
        members.sort_unstable();
        let held: usize = members.iter().map(|&m| lad.seg_tokens[m]).sum();
        lines.push(format!("  {label}: {}, {}", place(lad, &members), tokens(held)));
    }
    let mut fixed: Vec<usize> = held.iter().copied().filter(|&m| fixed_label(lad, m).is_some()).collect();
    fixed.sort_unstable();
    for m in fixed {
        let label = fixed_label(lad, m).unwrap_or_default();
        lines.push(format!("  {label}: {}", tokens(lad.seg_tokens[m])));
    }
    if components.is_empty() && lad.live_units == 1 {
        // Nothing is protected and one unit is left: a request is never sent empty.
        if let Some(u) = lad.units.iter().position(|u| u.alive) {
            let s = lad.segs[lad.units[u].position];
            let name = s.group.as_deref().or(s.key.as_deref()).map(|n| format!(" {n:?}")).unwrap_or_default();
            components.push((format!("last unit, {}{name} (a request is never empty)", lad.policy.label(s.layer)), lad.unit_tokens(u)));
            detail.push(format!(
                "nothing is protected; the last unit stays, as a request is never empty: {}, {}",
                lad.unit_label(u),
                tokens(lad.unit_tokens(u))
            ));
        }
    }
    let protected_tokens: usize = components.iter().map(|(_, n)| n).sum();
    let total = lad.total();
    let floor_tokens = total.saturating_sub(protected_tokens);
    if !lines.is_empty() {
        let held_tokens: usize = held.iter().map(|&m| lad.seg_tokens[m]).sum();
        detail.push(format!("protected, {}:", tokens(held_tokens)));
        detail.extend(lines);
    }
    if floor_tokens > 0 {
        let kept: Vec<usize> = (0..lad.units.len()).filter(|&u| lad.units[u].alive && !lad.units[u].protected).collect();
        let at = match lad.names {
            Some(n) => n.name(&kept.iter().flat_map(|&u| lad.members(u)).collect::<Vec<_>>()),
            None => bounded(kept.iter().map(|&u| default_label(lad.segs, lad.units[u].position)).collect()),
        };
        let line = format!("kept by floors, {}: {at}", tokens(floor_tokens));
        detail.extend(wrap_text(&line, 2, COLUMNS));
    }
    let mut options = vec!["raise the window", "lower the reserve"];
    if floor_tokens > 0 {
        options.push("use a policy with lower floors");
    }
    // Layers a policy protects beyond the four every policy protects can be given back.
    let extra = lad.policy.protected.0 & !Layer::PROTECTED.0;
    if held.iter().any(|&m| extra & (1 << lad.segs[m].layer.index()) != 0) {
        options.push("protect fewer layers");
    }
    let mut remedy = format!("to fit: {}", either(&options));
    if options.len() == 2 && !held.is_empty() {
        remedy.push_str(" (the protected parts alone are over the ceiling)");
    }
    detail.extend(wrap_text(&remedy, 2, COLUMNS));
    Unfittable {
        floor_tokens,
        components,
        ceiling: lad.ceiling,
        total,
        shortfall: total.saturating_sub(lad.ceiling),
        detail,
        trace: String::new(),
    }
}
