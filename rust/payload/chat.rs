//! Eviction units over a chat-style message list, and the check that every tool result can stay
//! with its call. This is the rule `python/ctxfast/_rounds.py` states (and the Python adapters'
//! full readers apply), written once more for the fast path; `tests/test_fast_path.py` checks the
//! two against each other on generated conversations.
//!
//! An exchange runs from a user message to the next one; the last is the current turn, except in
//! an agent loop (two or more assistant messages with tool calls after the last ask), where the
//! ask and the newest round are, and each older round is a unit `exN.roundK` of its own.

use rustc_hash::FxHashMap as HashMap;

use crate::engine::Layer;

/// A message's role, as the unit rule sees it (`developer` is a system role).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// Each message's layer and eviction group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Units {
    pub layers: Vec<Layer>,
    pub groups: Vec<Option<String>>,
}

/// Layers and groups for `roles`; `makes_calls[i]` says whether message `i` calls tools.
/// `pin_first_user` keeps the first user message (the task statement) unless it is the ask.
pub fn units(roles: &[Role], makes_calls: &[bool], pin_first_user: bool) -> Units {
    let n = roles.len();
    let mut groups: Vec<Option<String>> = Vec::with_capacity(n);
    let (mut exchanges, mut ask, mut first_user) = (0usize, None, None);
    for (i, role) in roles.iter().enumerate() {
        if *role == Role::System {
            groups.push(None);
            continue;
        }
        if *role == Role::User {
            exchanges += 1;
            ask = Some(i);
            first_user = first_user.or(Some(i));
        }
        groups.push(Some(format!("ex{exchanges}")));
    }
    let pinned = if pin_first_user && first_user != ask { first_user } else { None };
    let mut current = vec![false; n];
    if let Some(ask) = ask {
        current[ask..].iter_mut().for_each(|c| *c = true);
        let calls: Vec<usize> = (ask + 1..n)
            .filter(|&i| roles[i] == Role::Assistant && makes_calls.get(i).copied().unwrap_or(false))
            .collect();
        if calls.len() >= 2 {
            let base = groups[ask].clone().unwrap_or_default();
            for (k, pair) in calls.windows(2).enumerate() {
                for i in pair[0]..pair[1] {
                    current[i] = false;
                    if groups[i].is_some() {
                        groups[i] = Some(format!("{base}.round{}", k + 1));
                    }
                }
            }
        }
    } else if let Some(last) = groups.iter().rev().find_map(|g| g.clone()) {
        // No ask: the last unit is the current turn, so a fit never sends an empty request.
        for (c, g) in current.iter_mut().zip(&groups) {
            *c = g.as_deref() == Some(last.as_str());
        }
    }
    let layers = (0..n)
        .map(|i| match roles[i] {
            Role::System => Layer::System,
            _ if current[i] => Layer::CurrentTurn,
            _ if Some(i) == pinned => Layer::Pinned,
            Role::Tool => Layer::ToolResult,
            _ => Layer::Conversation,
        })
        .collect();
    for (i, g) in groups.iter_mut().enumerate() {
        if roles[i] != Role::System && !current[i] && Some(i) == pinned {
            *g = None;
        }
    }
    Units { layers, groups }
}

/// Whether every result answers one earlier call, once, in the same unit, and no call id
/// repeats. `calls` and `results` are `(message, id)`; with no call ids at all, nothing is
/// checked (an old payload pairs by position). When this says no, the full reader words the error.
pub fn pairs_hold(calls: &[(usize, &str)], results: &[(usize, &str)], groups: &[Option<String>]) -> bool {
    if calls.is_empty() {
        return true;
    }
    let mut by_id: HashMap<&str, usize> = HashMap::default();
    for &(m, id) in calls {
        if by_id.insert(id, m).is_some() {
            return false;
        }
    }
    let mut answered: HashMap<&str, ()> = HashMap::default();
    for &(m, id) in results {
        match by_id.get(id) {
            Some(&call) if call < m && groups.get(call) == groups.get(m) => {}
            _ => return false,
        }
        if answered.insert(id, ()).is_some() {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use Role::*;

    fn g(units: &Units) -> Vec<Option<&str>> {
        units.groups.iter().map(|g| g.as_deref()).collect()
    }

    #[test]
    fn an_agent_loop_splits_into_rounds_and_keeps_the_ask_and_newest_round() {
        let roles = [System, User, Assistant, Tool, Assistant, Tool, Assistant, Tool];
        let calls = [false, false, true, false, true, false, true, false];
        let u = units(&roles, &calls, false);
        assert_eq!(
            g(&u),
            [None, Some("ex1"), Some("ex1.round1"), Some("ex1.round1"), Some("ex1.round2"), Some("ex1.round2"), Some("ex1"), Some("ex1")]
        );
        assert_eq!(u.layers[2], Layer::Conversation);
        assert_eq!(u.layers[3], Layer::ToolResult);
        assert_eq!(u.layers[6], Layer::CurrentTurn);
        assert_eq!(u.layers[1], Layer::CurrentTurn);
    }

    #[test]
    fn the_first_user_message_is_pinned_only_when_it_is_not_the_ask() {
        let u = units(&[User, Assistant, User], &[false; 3], true);
        assert_eq!(u.layers, [Layer::Pinned, Layer::Conversation, Layer::CurrentTurn]);
        assert_eq!(g(&u), [None, Some("ex1"), Some("ex2")]);
        let u = units(&[User, Assistant], &[false; 2], true);
        assert_eq!(u.layers, [Layer::CurrentTurn, Layer::CurrentTurn]);
    }

    #[test]
    fn with_no_ask_the_last_unit_is_current() {
        let u = units(&[System, Assistant, Tool], &[false, true, false], false);
        assert_eq!(u.layers, [Layer::System, Layer::CurrentTurn, Layer::CurrentTurn]);
    }

    #[test]
    fn pairs_must_follow_their_call_in_the_same_unit() {
        let groups = vec![Some("ex1".to_string()), Some("ex1".to_string()), Some("ex2".to_string())];
        assert!(pairs_hold(&[(0, "a")], &[(1, "a")], &groups));
        assert!(!pairs_hold(&[(0, "a")], &[(2, "a")], &groups));
        assert!(!pairs_hold(&[(0, "a"), (1, "a")], &[], &groups));
        assert!(!pairs_hold(&[(0, "a")], &[(1, "a"), (1, "a")], &groups));
        assert!(!pairs_hold(&[(1, "a")], &[(0, "a")], &groups));
        assert!(pairs_hold(&[], &[(2, "zz")], &groups));
    }
}
