//! How the trace and `Unfittable` name what they talk about: by the caller's own input positions
//! (`messages[3..6]`) when the caller says what its input is called, else by group, key or
//! position (`ex2`, `chunk7`, `#9`).

use super::segment::SegmentData;

/// The caller's names for its input, for `fit(..., input_name="messages")`: segment `i` is item
/// `i` of the input, except the fixed parts (tool schemas, reply priming), which carry their own
/// label (`<reply priming>`) and come after the input's items.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InputNames {
    /// What the input is called: units read `messages[3..6]`.
    pub input: String,
    /// A fixed part's label, by segment index; None for an item of the input. Shorter than the
    /// segments when the tail holds no fixed part.
    pub fixed: Vec<Option<String>>,
}

/// At most this many names in one list of an error; the rest are counted ("+4 more").
const LIST_MAX: usize = 6;

/// `3..6, 9`: sorted indices as inclusive runs.
pub fn runs(indices: &[usize]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && indices[i + 1] == end + 1 {
            i += 1;
            end = indices[i];
        }
        out.push(if end == start { start.to_string() } else { format!("{start}..{end}") });
        i += 1;
    }
    out
}

/// The first `LIST_MAX` of `names`, then how many more.
pub fn bounded(names: Vec<String>) -> String {
    let more = names.len().saturating_sub(LIST_MAX);
    let mut shown: Vec<String> = names.into_iter().take(LIST_MAX).collect();
    if more > 0 {
        shown.push(format!("+{more} more"));
    }
    shown.join(", ")
}

impl InputNames {
    pub fn fixed_label(&self, index: usize) -> Option<&str> {
        self.fixed.get(index).and_then(|f| f.as_deref())
    }

    /// `messages[3..6]` for the input items among `members` (in input order), then the fixed
    /// parts' own labels: `messages[0] + <reply priming>`.
    pub fn name(&self, members: &[usize]) -> String {
        self.name_of(members.iter().copied())
    }

    /// `name`, of members given one by one (a unit's, without listing them first).
    pub fn name_of(&self, members: impl Iterator<Item = usize> + Clone) -> String {
        let items: Vec<usize> = members.clone().filter(|&m| self.fixed_label(m).is_none()).collect();
        let mut parts = Vec::new();
        if !items.is_empty() {
            parts.push(format!("{}[{}]", self.input, bounded(runs(&items))));
        }
        parts.extend(members.filter_map(|m| self.fixed_label(m)).map(str::to_string));
        parts.join(" + ")
    }
}

/// A unit named without input names: its first member's group, else its key, else `#position`.
pub fn default_label(segs: &[&SegmentData], first: usize) -> String {
    let s = segs[first];
    s.group.as_deref().or(s.key.as_deref()).map_or_else(|| format!("#{first}"), str::to_string)
}

/// Segments listed without input names: each by its key (quoted), else by position, runs of
/// positions merged (`"rules", #3..6`).
pub fn list_segments(segs: &[&SegmentData], members: &[usize]) -> String {
    let mut names = Vec::new();
    let mut positions: Vec<usize> = Vec::new();
    let flush = |positions: &mut Vec<usize>, names: &mut Vec<String>| {
        names.extend(runs(positions).into_iter().map(|r| format!("#{r}")));
        positions.clear();
    };
    for &m in members {
        match &segs[m].key {
            Some(k) => {
                flush(&mut positions, &mut names);
                names.push(format!("{k:?}"));
            }
            None => positions.push(m),
        }
    }
    flush(&mut positions, &mut names);
    bounded(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_read_as_inclusive_runs() {
        assert_eq!(runs(&[3, 4, 5, 6, 9]), vec!["3..6", "9"]);
        assert_eq!(runs(&[]), Vec::<String>::new());
        let names = InputNames { input: "messages".into(), fixed: vec![None, None, None, Some("<reply priming>".into())] };
        assert_eq!(names.name(&[1, 2]), "messages[1..2]");
        assert_eq!(names.name(&[0]), "messages[0]");
        assert_eq!(names.name(&[0, 3]), "messages[0] + <reply priming>");
        assert_eq!(names.name(&[3]), "<reply priming>");
        assert_eq!(bounded((0..9).map(|i| i.to_string()).collect()), "0, 1, 2, 3, 4, 5, +3 more");
    }
}
