//! A removal as a trace row: what the unit is called, and the layer column its removal changed.

use std::sync::Arc;

use super::ladder::Ladder;
use compact_str::format_compact;

use super::outcome::{Label, Row};
use super::policy::Action;
use super::segment::{Layer, LayerSet};
use crate::limits::signed;

impl Ladder<'_> {
    /// What a unit is called in the trace: by input positions when the caller named its input.
    pub(super) fn unit_label(&self, u: usize) -> Label {
        match self.names {
            Some(n) => n.name_of(self.members(u)).into(),
            // `naming::default_label`, from the name the unit kept when it was built: reading it
            // from the segment again would miss the cache on every row of a large request.
            None => {
                let unit = &self.units[u];
                match &unit.name {
                    Some(name) => name.clone(),
                    None if unit.long_name => self.segs.get(unit.position).and_then(|s| s.group.as_deref().or(s.key.as_deref())).unwrap_or_default().into(),
                    None => format_compact!("#{}", unit.position),
                }
            }
        }
    }

    /// The policy labels of `layers`, in display order, as one column heading
    /// (`conversation+tool_result`), and what those labels hold now. A rung's rows mostly change
    /// the same layers, so each heading is worked out once.
    pub(super) fn layer_column(&mut self, layers: LayerSet) -> (Arc<str>, usize) {
        let known = self.columns.iter().find(|c| c.0 == layers);
        let (heading, named) = match known {
            Some((_, heading, named)) => (heading.clone(), *named),
            None => {
                let mut labels: Vec<&str> = Vec::new();
                for l in Layer::DISPLAY_ORDER.iter().filter(|l| layers.contains(**l)) {
                    let label = self.policy.label(*l);
                    if !labels.contains(&label) {
                        labels.push(label);
                    }
                }
                // Layers that share a label ("history") are one figure.
                let mut named = LayerSet::default();
                for l in Layer::ALL.into_iter().filter(|l| labels.contains(&self.policy.label(*l))) {
                    named.insert(l);
                }
                let heading: Arc<str> = labels.join("+").into();
                self.columns.push((layers, heading.clone(), named));
                (heading, named)
            }
        };
        (heading, named.iter().map(|l| self.layer_sizes[l.index()]).sum())
    }

    pub(super) fn row(&mut self, label: Label, layers: LayerSet, before: usize, action: Action) -> Row {
        let total_after = self.total();
        let (layer, layer_after) = self.layer_column(layers);
        Row {
            label,
            delta: before.saturating_sub(total_after),
            action: match action {
                Action::Drop => "drop",
                Action::Truncate { .. } => "truncate",
                Action::Digest => "digest",
            },
            layer,
            layer_after,
            total_after,
            over_after: signed(total_after) - signed(self.ceiling),
        }
    }
}
