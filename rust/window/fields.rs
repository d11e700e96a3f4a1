//! How a window's fields are written: maps in key order, the policy as its document.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::engine::{policy_format, Policy};

/// Maps are written in key order, so the same window always saves to the same bytes (and the
/// same integrity digest), whatever order its hash maps hold their keys in.
pub(super) fn sorted<S: serde::Serializer, K: Serialize + Ord, V: Serialize, H>(map: &HashMap<K, V, H>, s: S) -> Result<S::Ok, S::Error> {
    // A sorted list of references, not a BTreeMap: no node allocations on the parking path.
    let mut ordered: Vec<(&K, &V)> = map.iter().collect();
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


/// The ledger as a map of key -> full answer (the key repeated inside, the rung's name spelled
/// out): the readable form (`to_json`) and the binary format version 1, both still read. A
/// state read this way keeps every stored rung name until `Ledger::settle` drops the derivable.
pub(super) mod ledger_map {
    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    use super::super::ledger::Why;
    use super::super::record::Rec;
    use super::super::whys::Ledger;

    pub fn serialize<S: Serializer>(l: &Ledger, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(l.len()))?;
        for (k, r) in l.iter() {
            m.serialize_entry(k, &l.answer(k, r))?;
        }
        m.end()
    }

    struct V;

    impl<'de> Visitor<'de> for V {
        type Value = Ledger;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of key -> why answer")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ledger, A::Error> {
            let mut l = Ledger::default();
            while let Some((k, mut w)) = map.next_entry::<String, Why>()? {
                if w.key != k {
                    return Err(serde::de::Error::custom(format!("the ledger files the answer for {:?} under {k:?}", w.key)));
                }
                if l.contains(&k) {
                    return Err(serde::de::Error::custom(format!("the ledger has two answers for {k:?}")));
                }
                let rung = w.rung.take();
                let (_, rec) = Rec::from_why(w, rung);
                l.put(&k, rec);
            }
            Ok(l)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Ledger, D::Error> {
        d.deserialize_map(V)
    }
}

/// Bytes written as one byte string (postcard: a length and the bytes), read borrowed.
pub(super) struct Bytes<'a>(pub &'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Bytes<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Bytes<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_borrowed_bytes<E: serde::de::Error>(self, v: &'de [u8]) -> Result<Bytes<'de>, E> {
                Ok(Bytes(v))
            }
        }
        d.deserialize_bytes(V)
    }
}
