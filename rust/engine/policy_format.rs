//! Policies as reviewable data: the dict / TOML form, parsed with errors that name the field.
//!
//! ```toml
//! name = "troubleshooting"
//! protected = ["system", "tools", "pinned", "current_turn"]
//! [labels]
//! conversation = "history"
//! [[rungs]]
//! name = "history.drop_oldest_exchange"
//! layers = ["conversation", "tool_result", "summary"]
//! order = "oldest"          # oldest | newest | lowest_score | largest | rank
//! action = "drop"           # drop | truncate | digest
//! floor = { keep_first = 1, keep_last = 3 }
//! until = "fits"           # fits (the default) | cap: trim a layer down to its Budget cap
//! ```

use serde_json::{json, Map, Value};

use super::policy::{Action, Filter, Floor, Order, Policy, Rung, Until};
use super::segment::{Layer, LayerSet};
use crate::error::{CtxError, CtxResult};
use crate::suggest::hint;

pub const ORDERS: [&str; 5] = ["oldest", "newest", "lowest_score", "largest", "rank"];
pub const ACTIONS: [&str; 3] = ["drop", "truncate", "digest"];
pub const FILTERS: [&str; 4] = ["stale", "recoverable", "covered", "level"];
pub const UNTILS: [&str; 2] = ["fits", "cap"];
const FLOOR_KEYS: [&str; 4] = ["keep_first", "keep_last", "keep_top", "min_tokens"];
const RUNG_KEYS: [&str; 8] = ["name", "layers", "order", "action", "filter", "floor", "min_tokens", "until"];
const POLICY_KEYS: [&str; 4] = ["name", "protected", "labels", "rungs"];
pub const DEFAULT_TRUNCATE_MIN_TOKENS: usize = 128;

pub use super::describe::describe;

fn bad(path: &str, msg: impl std::fmt::Display) -> CtxError {
    CtxError::invalid(format!("policy {path}: {msg}"))
}

fn check_keys(obj: &Map<String, Value>, allowed: &[&str], path: &str) -> CtxResult<()> {
    for k in obj.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(bad(path, format!("unknown field {k:?}{}; allowed: {}", hint(k, allowed), allowed.join(", "))));
        }
    }
    Ok(())
}

fn as_str<'v>(v: &'v Value, path: &str) -> CtxResult<&'v str> {
    v.as_str().ok_or_else(|| bad(path, format!("must be a string, got {v}")))
}

fn as_count(v: &Value, path: &str) -> CtxResult<usize> {
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| bad(path, format!("must be a whole number >= 0, got {v}")))
}

fn one_of(name: &str, known: &[&str], path: &str) -> CtxResult<()> {
    if known.contains(&name) {
        Ok(())
    } else {
        Err(bad(path, format!("unknown value {name:?}{}; known: {}", hint(name, known), known.join(", "))))
    }
}

fn layers(v: &Value, path: &str) -> CtxResult<LayerSet> {
    let items = match v {
        Value::String(_) => vec![v.clone()],
        Value::Array(a) => a.clone(),
        other => return Err(bad(path, format!("must be a layer name or a list of them, got {other}"))),
    };
    let mut set = LayerSet::default();
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let name = as_str(item, &p)?;
        set.insert(Layer::from_name(name).map_err(|e| bad(&p, e))?);
    }
    Ok(set)
}

fn filter(v: &Value, path: &str) -> CtxResult<Option<Filter>> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => {
            // "level:0" as a string shorthand for {"level": 0}.
            if let Some(n) = s.strip_prefix("level:") {
                let n: i64 = n.trim().parse().map_err(|_| bad(path, format!("bad level in {s:?}")))?;
                return Ok(Some(Filter::Level(n)));
            }
            match s.as_str() {
                "stale" => Ok(Some(Filter::Stale)),
                "recoverable" => Ok(Some(Filter::Recoverable)),
                "covered" => Ok(Some(Filter::Covered)),
                other => Err(bad(
                    path,
                    format!("unknown filter {other:?}{}; known: stale, recoverable, covered, level:N", hint(other, &FILTERS)),
                )),
            }
        }
        Value::Object(o) if o.len() == 1 && o.contains_key("level") => {
            let n = o["level"].as_i64().ok_or_else(|| bad(path, "level must be an integer"))?;
            Ok(Some(Filter::Level(n)))
        }
        other => Err(bad(path, format!("must be one of stale, recoverable, covered, level:N; got {other}"))),
    }
}

fn floor(v: Option<&Value>, path: &str) -> CtxResult<Floor> {
    let Some(v) = v else { return Ok(Floor::default()) };
    let obj = v.as_object().ok_or_else(|| bad(path, format!("must be a table, got {v}")))?;
    check_keys(obj, &FLOOR_KEYS, path)?;
    let get = |k: &str| obj.get(k).map(|x| as_count(x, &format!("{path}.{k}"))).transpose().map(|o| o.unwrap_or(0));
    Ok(Floor {
        keep_first: get("keep_first")?,
        keep_last: get("keep_last")?,
        keep_top: get("keep_top")?,
        min_tokens: get("min_tokens")?,
    })
}

fn rung(v: &Value, path: &str, protected: LayerSet) -> CtxResult<Rung> {
    let obj = v.as_object().ok_or_else(|| bad(path, format!("must be a table, got {v}")))?;
    check_keys(obj, &RUNG_KEYS, path)?;
    let need = |k: &str| obj.get(k).ok_or_else(|| bad(path, format!("missing field {k:?}")));
    let name = as_str(need("name")?, &format!("{path}.name"))?.to_string();
    let layer_set = layers(need("layers")?, &format!("{path}.layers"))?;
    if let Some(l) = layer_set.iter().find(|l| protected.contains(*l)) {
        return Err(bad(&format!("{path}.layers"), format!("{} is protected; no rung may draw from it", l.name())));
    }
    let order_name = as_str(need("order")?, &format!("{path}.order"))?;
    one_of(order_name, &ORDERS, &format!("{path}.order"))?;
    let order = match order_name {
        "oldest" => Order::Oldest,
        "newest" => Order::Newest,
        "lowest_score" => Order::LowestScore,
        "largest" => Order::Largest,
        _ => Order::Rank,
    };
    let action_name = obj.get("action").map(|a| as_str(a, &format!("{path}.action"))).transpose()?.unwrap_or("drop");
    one_of(action_name, &ACTIONS, &format!("{path}.action"))?;
    let min_tokens = obj
        .get("min_tokens")
        .map(|m| as_count(m, &format!("{path}.min_tokens")))
        .transpose()?;
    let action = match action_name {
        "truncate" => Action::Truncate { min_tokens: min_tokens.unwrap_or(DEFAULT_TRUNCATE_MIN_TOKENS) },
        "digest" => Action::Digest,
        _ => Action::Drop,
    };
    if min_tokens.is_some() && !matches!(action, Action::Truncate { .. }) {
        return Err(bad(&format!("{path}.min_tokens"), "applies to truncate rungs only (use floor.min_tokens for a layer floor)"));
    }
    let until = match obj.get("until") {
        None => Until::Fits,
        Some(u) => {
            let p = format!("{path}.until");
            let name = as_str(u, &p)?;
            one_of(name, &UNTILS, &p)?;
            if name == "cap" { Until::Cap } else { Until::Fits }
        }
    };
    Ok(Rung {
        name,
        layers: layer_set,
        filter: filter(obj.get("filter").unwrap_or(&Value::Null), &format!("{path}.filter"))?,
        order,
        action,
        floor: floor(obj.get("floor"), &format!("{path}.floor"))?,
        until,
    })
}

/// Parses the dict / TOML form.
pub fn from_value(v: &Value) -> CtxResult<(Option<String>, Policy)> {
    let obj = v.as_object().ok_or_else(|| bad("", format!("must be a table, got {v}")))?;
    check_keys(obj, &POLICY_KEYS, "")?;
    let name = obj.get("name").map(|n| as_str(n, "name").map(str::to_string)).transpose()?;
    let protected = match obj.get("protected") {
        Some(p) => layers(p, "protected")?,
        None => Layer::PROTECTED,
    };
    if !Layer::PROTECTED.iter().all(|l| protected.contains(l)) {
        let missing: Vec<&str> = Layer::PROTECTED.iter().filter(|l| !protected.contains(*l)).map(|l| l.name()).collect();
        return Err(bad(
            "protected",
            format!("must include system, tools, pinned and current_turn (missing: {})", missing.join(", ")),
        ));
    }
    let mut labels = Policy::default_labels();
    if let Some(l) = obj.get("labels") {
        let lo = l.as_object().ok_or_else(|| bad("labels", "must be a table of layer = label"))?;
        for (k, v) in lo {
            let layer = Layer::from_name(k).map_err(|e| bad("labels", e))?;
            labels[layer.index()] = as_str(v, &format!("labels.{k}"))?.to_string();
        }
    }
    let rungs_v = obj.get("rungs").ok_or_else(|| bad("", "missing field \"rungs\""))?;
    let arr = rungs_v.as_array().ok_or_else(|| bad("rungs", "must be a list of rung tables"))?;
    let rungs = arr
        .iter()
        .enumerate()
        .map(|(i, r)| rung(r, &format!("rungs[{i}]"), protected))
        .collect::<CtxResult<Vec<_>>>()?;
    Ok((name, Policy { rungs, protected, labels }))
}

pub fn from_toml(text: &str) -> CtxResult<(Option<String>, Policy)> {
    let v: Value = toml::from_str(text).map_err(|e| CtxError::invalid(format!("policy TOML: {e}")))?;
    from_value(&v)
}

fn filter_value(f: Option<Filter>) -> Value {
    match f {
        None => Value::Null,
        Some(Filter::Stale) => json!("stale"),
        Some(Filter::Recoverable) => json!("recoverable"),
        Some(Filter::Covered) => json!("covered"),
        Some(Filter::Level(n)) => json!(format!("level:{n}")),
    }
}

/// The dict form of a policy; `from_value(to_value(p)) == p`.
pub fn to_value(name: Option<&str>, p: &Policy) -> Value {
    let names = |s: LayerSet| Value::Array(s.iter().map(|l| json!(l.name())).collect());
    let rungs: Vec<Value> = p
        .rungs
        .iter()
        .map(|r| {
            let mut o = Map::new();
            o.insert("name".into(), json!(r.name));
            o.insert("layers".into(), names(r.layers));
            o.insert("order".into(), json!(r.order.name()));
            let (action, min) = match r.action {
                Action::Drop => ("drop", None),
                Action::Truncate { min_tokens } => ("truncate", Some(min_tokens)),
                Action::Digest => ("digest", None),
            };
            o.insert("action".into(), json!(action));
            if let Some(m) = min {
                o.insert("min_tokens".into(), json!(m));
            }
            if r.filter.is_some() {
                o.insert("filter".into(), filter_value(r.filter));
            }
            let f = r.floor;
            let mut fl = Map::new();
            for (k, v) in [("keep_first", f.keep_first), ("keep_last", f.keep_last), ("keep_top", f.keep_top), ("min_tokens", f.min_tokens)] {
                if v > 0 {
                    fl.insert(k.into(), json!(v));
                }
            }
            if !fl.is_empty() {
                o.insert("floor".into(), Value::Object(fl));
            }
            // Only when it is not the default, so the dict form of a rung stays as it was.
            if r.until != Until::Fits {
                o.insert("until".into(), json!(r.until.name()));
            }
            Value::Object(o)
        })
        .collect();
    let mut labels = Map::new();
    for l in Layer::ALL {
        if p.label(l) != l.name() {
            labels.insert(l.name().into(), json!(p.label(l)));
        }
    }
    let mut o = Map::new();
    if let Some(n) = name {
        o.insert("name".into(), json!(n));
    }
    o.insert("protected".into(), names(p.protected));
    if !labels.is_empty() {
        o.insert("labels".into(), Value::Object(labels));
    }
    o.insert("rungs".into(), Value::Array(rungs));
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::presets;

    #[test]
    fn presets_round_trip_through_the_dict_form() {
        assert_eq!(presets::PRESET_NAMES.iter().filter_map(|n| presets::by_name(n)).count(), presets::PRESET_NAMES.len());
        // Every preset, as `Policy.preset(name)` finds it: a new one is covered without an edit here.
        for (name, p) in presets::PRESET_NAMES.iter().filter_map(|n| presets::by_name(n)) {
            let v = to_value(Some(name), &p);
            let (n, back) = from_value(&v).unwrap();
            assert_eq!(n.as_deref(), Some(name));
            assert_eq!(back, p, "{name}");
        }
    }

    #[test]
    fn toml_form_parses_and_errors_name_the_field() {
        let text = r#"
            name = "mine"
            [[rungs]]
            name = "old turns"
            layers = ["conversation"]
            order = "oldest"
            floor = { keep_last = 2 }
            [[rungs]]
            name = "chunks"
            layers = "retrieved"
            order = "lowest_score"
            action = "truncate"
            min_tokens = 64
        "#;
        let (_, p) = from_toml(text).unwrap();
        assert_eq!(p.rungs.len(), 2);
        assert_eq!(p.rungs[1].action, Action::Truncate { min_tokens: 64 });
        let err = from_toml(&text.replace("\"oldest\"", "\"olde\"")).unwrap_err().to_string();
        assert!(err.contains("rungs[0].order") && err.contains("olde") && err.contains("lowest_score"), "{err}");
        let err = from_toml(&text.replace("[\"conversation\"]", "[\"system\"]")).unwrap_err().to_string();
        assert!(err.contains("protected"), "{err}");
        let err = from_toml("rungs = 3").unwrap_err().to_string();
        assert!(err.contains("rungs"), "{err}");
    }

    #[test]
    fn until_cap_round_trips_and_typos_get_a_suggestion() {
        let text = "[[rungs]]\nname = \"r\"\nlayers = [\"retrieved\"]\norder = \"lowest_score\"\nuntil = \"cap\"\n";
        let (_, p) = from_toml(text).unwrap();
        assert_eq!(p.rungs[0].until, Until::Cap);
        let v = to_value(None, &p);
        assert_eq!(v["rungs"][0]["until"], json!("cap"));
        assert_eq!(from_value(&v).unwrap().1, p);
        // The default is not written, so existing dict forms stay as they were.
        assert!(to_value(None, &presets::agent(2))["rungs"][0].get("until").is_none());
        let err = from_toml(&text.replace("\"cap\"", "\"caps\"")).unwrap_err().to_string();
        assert!(err.contains("rungs[0].until") && err.contains("did you mean \"cap\"") && err.contains("fits, cap"), "{err}");
        // Report #21: every unknown name gets the likeliest one it meant.
        let err = from_toml(&text.replace("order =", "oder =")).unwrap_err().to_string();
        assert!(err.contains("unknown field \"oder\" (did you mean \"order\"?); allowed:"), "{err}");
        let err = from_toml(&text.replace("\"lowest_score\"", "\"lowest\"")).unwrap_err().to_string();
        assert!(err.contains("(did you mean \"lowest_score\"?)"), "{err}");
        let err = from_toml(&text.replace("\"retrieved\"", "\"retreived\"")).unwrap_err().to_string();
        assert!(err.contains("(did you mean \"retrieved\"?)"), "{err}");
        let err = from_toml(&format!("{text}action = \"drpo\"\n")).unwrap_err().to_string();
        assert!(err.contains("(did you mean \"drop\"?)"), "{err}");
        let err = from_toml(&format!("{text}filter = \"stael\"\n")).unwrap_err().to_string();
        assert!(err.contains("(did you mean \"stale\"?)"), "{err}");
        let err = from_toml(&format!("{text}floor = {{ keep_lats = 2 }}\n")).unwrap_err().to_string();
        assert!(err.contains("(did you mean \"keep_last\"?)"), "{err}");
        assert!(presets::unknown("agnet").to_string().contains("did you mean \"agent\""));
    }
}
