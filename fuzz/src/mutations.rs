//! Mutations of a saved state: paths into its JSON and the changes made there.

use super::*;

// ---------------------------------------------------------------------------------------------
// Mutations of a saved state.

#[derive(Arbitrary, Debug, Clone)]
pub enum JsonIn {
    Null,
    Bool(bool),
    Zero,
    One,
    U64Max,
    MaxCount,
    MaxCountPlus1,
    MaxTotal,
    NegOne,
    Int(i64),
    Float(f64),
    Str(String),
    /// A layer's name.
    Layer(u8),
    EmptyArray,
    EmptyObject,
}

impl JsonIn {
    fn build(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            JsonIn::Null => json!(null),
            JsonIn::Bool(b) => json!(b),
            JsonIn::Zero => json!(0),
            JsonIn::One => json!(1),
            JsonIn::U64Max => json!(u64::MAX),
            JsonIn::MaxCount => json!(MAX_COUNT),
            JsonIn::MaxCountPlus1 => json!(MAX_COUNT + 1),
            JsonIn::MaxTotal => json!(MAX_TOTAL),
            JsonIn::NegOne => json!(-1),
            JsonIn::Int(i) => json!(i),
            JsonIn::Float(f) => serde_json::Number::from_f64(*f).map_or(json!(0.5), serde_json::Value::Number),
            JsonIn::Str(s) => json!(s.chars().take(40).collect::<String>()),
            JsonIn::Layer(l) => {
                let layer = Layer::from_index(*l as usize % 8).unwrap_or(Layer::System);
                // Layers serialise by their variant name (serde derive).
                serde_json::to_value(layer).unwrap_or(json!(null))
            }
            JsonIn::EmptyArray => json!([]),
            JsonIn::EmptyObject => json!({}),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Mutation {
    /// Replace the node at `path` by `value`.
    Set { path: Vec<u8>, value: JsonIn },
    /// Copy the original state's node at `from` over the node at `to` (an id onto another
    /// entry's id, a key onto another key, a layer onto another layer ...).
    Copy { from: Vec<u8>, to: Vec<u8> },
    /// Remove the node at `path` from its object or array.
    Remove { path: Vec<u8> },
    /// Append a copy of the array element at `path` to its array.
    Duplicate { path: Vec<u8> },
}

#[derive(Clone, Debug)]
enum Sel {
    Key(String),
    Index(usize),
}

/// The path bytes as selectors: each byte picks a child of the current container.
fn resolve(v: &serde_json::Value, path: &[u8]) -> Vec<Sel> {
    let mut out = Vec::new();
    let mut node = v;
    for &b in path.iter().take(8) {
        match node {
            serde_json::Value::Object(o) if !o.is_empty() => {
                let (k, child) = o.iter().nth(b as usize % o.len()).expect("in range");
                out.push(Sel::Key(k.clone()));
                node = child;
            }
            serde_json::Value::Array(a) if !a.is_empty() => {
                let i = b as usize % a.len();
                out.push(Sel::Index(i));
                node = &a[i];
            }
            _ => break,
        }
    }
    out
}

fn at_mut<'v>(mut v: &'v mut serde_json::Value, sels: &[Sel]) -> Option<&'v mut serde_json::Value> {
    for s in sels {
        v = match s {
            Sel::Key(k) => v.get_mut(k.as_str())?,
            Sel::Index(i) => v.get_mut(*i)?,
        };
    }
    Some(v)
}

fn at<'v>(mut v: &'v serde_json::Value, sels: &[Sel]) -> Option<&'v serde_json::Value> {
    for s in sels {
        v = match s {
            Sel::Key(k) => v.get(k.as_str())?,
            Sel::Index(i) => v.get(*i)?,
        };
    }
    Some(v)
}

pub fn mutate(v: &mut serde_json::Value, original: &serde_json::Value, m: &Mutation) {
    match m {
        Mutation::Set { path, value } => {
            let sels = resolve(v, path);
            if let Some(node) = at_mut(v, &sels) {
                *node = value.build();
            }
        }
        Mutation::Copy { from, to } => {
            let src = at(original, &resolve(original, from)).cloned();
            let sels = resolve(v, to);
            if let (Some(src), Some(node)) = (src, at_mut(v, &sels)) {
                *node = src;
            }
        }
        Mutation::Remove { path } | Mutation::Duplicate { path } => {
            let sels = resolve(v, path);
            let Some((last, parent)) = sels.split_last() else { return };
            let Some(parent) = at_mut(v, parent) else { return };
            match (last, parent, matches!(m, Mutation::Remove { .. })) {
                (Sel::Key(k), serde_json::Value::Object(o), true) => {
                    o.shift_remove(k.as_str());
                }
                (Sel::Index(i), serde_json::Value::Array(a), true) => {
                    a.remove(*i);
                }
                (Sel::Index(i), serde_json::Value::Array(a), false) => {
                    let copy = a[*i].clone();
                    a.push(copy);
                }
                _ => {}
            }
        }
    }
}
