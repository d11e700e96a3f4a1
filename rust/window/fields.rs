//! How a window's fields are written: maps in key order, the policy as its document.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::engine::{policy_format, Policy};

/// Maps are written in key order, so the same window always saves to the same bytes (and the
/// same integrity digest), whatever order its hash maps hold their keys in.
pub(super) fn sorted<S: serde::Serializer, V: Serialize>(map: &HashMap<String, V>, s: S) -> Result<S::Ok, S::Error> {
    // A sorted list of references, not a BTreeMap: no node allocations on the parking path.
    let mut ordered: Vec<(&String, &V)> = map.iter().collect();
    ordered.sort_unstable_by(|a, b| a.0.cmp(b.0));
    s.collect_map(ordered)
}

pub(super) mod policy_serde {
    use super::*;
    use serde::{Deserializer, Serializer};

    /// Readable formats (JSON) get the policy's document; the binary one gets it as JSON text,
    /// since a format without type markers cannot carry a free-form document.
    pub fn serialize<S: Serializer>(p: &Policy, s: S) -> Result<S::Ok, S::Error> {
        let doc = policy_format::to_value(None, p);
        if s.is_human_readable() {
            doc.serialize(s)
        } else {
            s.serialize_str(&doc.to_string())
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
        let v = if d.is_human_readable() {
            serde_json::Value::deserialize(d)?
        } else {
            let text = String::deserialize(d)?;
            serde_json::from_str(&text).map_err(serde::de::Error::custom)?
        };
        policy_format::from_value(&v).map(|(_, p)| p).map_err(serde::de::Error::custom)
    }
}

