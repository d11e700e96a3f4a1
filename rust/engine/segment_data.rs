//! One segment's data as the core holds it: immutable once shared (`Arc<SegmentData>`).
//!
//! A conversation window restored from a store holds one of these per segment, so the layout is
//! kept small: the fields only summaries and tool calls use (`level`, `covers`, `tool`) live in
//! one optional box, and a digest computed once rides along (`DigestMemo`). The serialised form
//! is the flat record of every field, in the order the first release wrote it: saved windows
//! (binary and JSON) read the same whatever the layout in memory.

use std::sync::OnceLock;

use compact_str::CompactString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::segment::Layer;
use crate::error::{CtxError, CtxResult};

/// What a digest needs to say about a tool call: which step, which tool, with what.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub step: Option<i64>,
    pub tool: Option<String>,
    pub arguments: Option<String>,
}

/// The fields most segments leave empty.
#[derive(Clone, Debug, Default, PartialEq)]
struct Extra {
    level: Option<i64>,
    covers: Vec<String>,
    tool: Option<ToolCall>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SegmentData {
    pub text: String,
    /// Key and group are short names ("call_abc123", "tool:call_1"), held inline up to 24
    /// bytes: a request built afresh (`fit_columns`) allocates no string for either.
    pub key: Option<CompactString>,
    pub group: Option<CompactString>,
    pub score: f64,
    pub tokens: Option<usize>,
    pub layer: Layer,
    pub recoverable: bool,
    pub stale: bool,
    extra: Option<Box<Extra>>,
    /// The window's digest of this segment (`window::persist_v2`), once taken.
    pub digest: DigestMemo,
}

impl SegmentData {
    pub fn new(text: impl Into<String>, layer: Layer) -> Self {
        Self {
            text: text.into(),
            key: None,
            group: None,
            score: 0.0,
            tokens: None,
            layer,
            recoverable: false,
            stale: false,
            extra: None,
            digest: DigestMemo::default(),
        }
    }

    pub fn validate(&self) -> CtxResult<()> {
        if !(0.0..=1.0).contains(&self.score) {
            return Err(CtxError::invalid(format!("score must be a number in [0, 1], got {}", self.score)));
        }
        Ok(())
    }

    /// The summary level, if any.
    pub fn level(&self) -> Option<i64> {
        self.extra.as_ref().and_then(|e| e.level)
    }

    /// The keys of the summaries this one covers.
    pub fn covers(&self) -> &[String] {
        self.extra.as_ref().map_or(&[], |e| &e.covers)
    }

    /// The tool call this segment records, if any.
    pub fn tool(&self) -> Option<&ToolCall> {
        self.extra.as_ref().and_then(|e| e.tool.as_ref())
    }

    // Setting a field that is absent to absent changes nothing, and allocates nothing: most
    // segments have no level, covers or tool call, and a `fit_columns` tools column is mostly
    // None (boxing and freeing an empty `Extra` for each was 20 ns a row).

    pub fn set_level(&mut self, level: Option<i64>) {
        if level.is_some() || self.level().is_some() {
            self.extra_mut().level = level;
            self.tidy();
        }
    }

    pub fn set_covers(&mut self, covers: Vec<String>) {
        if !covers.is_empty() || !self.covers().is_empty() {
            self.extra_mut().covers = covers;
            self.tidy();
        }
    }

    pub fn set_tool(&mut self, tool: Option<ToolCall>) {
        if tool.is_some() || self.tool().is_some() {
            self.extra_mut().tool = tool;
            self.tidy();
        }
    }

    fn extra_mut(&mut self) -> &mut Extra {
        self.digest = DigestMemo::default();
        self.extra.get_or_insert_with(Box::default)
    }

    /// No box for fields that are all empty.
    fn tidy(&mut self) {
        if self.extra.as_ref().is_some_and(|e| e.level.is_none() && e.covers.is_empty() && e.tool.is_none()) {
            self.extra = None;
        }
    }
}

/// A digest of the segment it sits in, taken at most once: shared segment data never changes.
/// A clone starts empty (a clone is made to be changed), and it takes no part in equality.
#[derive(Default)]
pub struct DigestMemo(OnceLock<[u64; 2]>);

impl DigestMemo {
    pub fn get(&self) -> Option<u128> {
        self.0.get().map(|&[lo, hi]| u128::from(lo) | (u128::from(hi) << 64))
    }

    /// Keeps `digest` unless one is kept already.
    pub fn set(&self, digest: u128) {
        // Truncations to the two halves, by design.
        let _ = self.0.set([digest as u64, (digest >> 64) as u64]);
    }
}

impl Clone for DigestMemo {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for DigestMemo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for DigestMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DigestMemo")
    }
}

/// The serialised record, borrowed for writing.
#[derive(Serialize)]
struct WireOut<'a> {
    text: &'a str,
    layer: Layer,
    key: Option<&'a str>,
    score: f64,
    tokens: Option<usize>,
    recoverable: bool,
    stale: bool,
    group: Option<&'a str>,
    level: Option<i64>,
    covers: &'a [String],
    tool: Option<&'a ToolCall>,
}

/// The serialised record, owned for reading.
#[derive(Deserialize)]
struct WireIn {
    #[serde(deserialize_with = "text")]
    text: String,
    layer: Layer,
    key: Option<CompactString>,
    score: f64,
    tokens: Option<usize>,
    recoverable: bool,
    stale: bool,
    group: Option<CompactString>,
    level: Option<i64>,
    covers: Vec<String>,
    tool: Option<ToolCall>,
}

/// The text: from a binary form (postcard) as bytes, checked as UTF-8 with SIMD; from a
/// readable one (JSON) as a string, escapes and all.
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    if d.is_human_readable() {
        return String::deserialize(d);
    }
    struct Utf8;
    impl<'de> serde::de::Visitor<'de> for Utf8 {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("UTF-8 text")
        }
        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<String, E> {
            match simdutf8::basic::from_utf8(v) {
                Ok(s) => Ok(s.to_owned()),
                Err(_) => Err(E::invalid_value(serde::de::Unexpected::Bytes(v), &self)),
            }
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_owned())
        }
        fn visit_string<E: serde::de::Error>(self, v: String) -> Result<String, E> {
            Ok(v)
        }
    }
    d.deserialize_bytes(Utf8)
}

impl Serialize for SegmentData {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        WireOut {
            text: &self.text,
            layer: self.layer,
            key: self.key.as_deref(),
            score: self.score,
            tokens: self.tokens,
            recoverable: self.recoverable,
            stale: self.stale,
            group: self.group.as_deref(),
            level: self.level(),
            covers: self.covers(),
            tool: self.tool(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SegmentData {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireIn::deserialize(d)?;
        let extra = (w.level.is_some() || !w.covers.is_empty() || w.tool.is_some())
            .then(|| Box::new(Extra { level: w.level, covers: w.covers, tool: w.tool }));
        Ok(Self {
            text: w.text,
            key: w.key,
            group: w.group,
            score: w.score,
            tokens: w.tokens,
            layer: w.layer,
            recoverable: w.recoverable,
            stale: w.stale,
            extra,
            digest: DigestMemo::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_small_and_the_record_is_flat() {
        // One restored window holds one per segment: keep an eye on the size.
        assert!(std::mem::size_of::<SegmentData>() <= 144, "{}", std::mem::size_of::<SegmentData>());
        let mut s = SegmentData::new("t", Layer::Summary);
        s.set_level(Some(2));
        s.set_covers(vec!["a".into()]);
        s.set_tool(Some(ToolCall { step: Some(1), tool: Some("x".into()), arguments: None }));
        let json = serde_json::to_value(&s).unwrap_or_default();
        let fields: Vec<&str> = json.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        assert_eq!(fields, ["text", "layer", "key", "score", "tokens", "recoverable", "stale", "group", "level", "covers", "tool"]);
        let back: SegmentData = serde_json::from_value(json).unwrap_or_else(|_| SegmentData::new("", Layer::System));
        assert_eq!(back, s);
        s.set_level(None);
        s.set_covers(Vec::new());
        s.set_tool(None);
        assert!(s.extra.is_none());
    }

    #[test]
    fn binary_text_is_checked_as_utf8() {
        let s = SegmentData::new("héllo 🙂", Layer::Conversation);
        let bytes = postcard::to_allocvec(&s).unwrap_or_default();
        assert_eq!(postcard::from_bytes::<SegmentData>(&bytes).ok(), Some(s));
        // The text's first byte made a lone continuation byte: refused, not read.
        let at = bytes.iter().position(|&b| b == b'h').unwrap_or(0);
        let mut bad = bytes.clone();
        bad[at] = 0x80;
        assert!(postcard::from_bytes::<SegmentData>(&bad).is_err());
    }

    #[test]
    fn setting_an_absent_field_to_absent_changes_nothing() {
        // No box is made (and none freed) for a row whose tool, level and covers are all
        // absent; the digest computed meanwhile still stands, since the content did not change.
        let mut s = SegmentData::new("t", Layer::Conversation);
        s.digest.set(7);
        s.set_tool(None);
        s.set_level(None);
        s.set_covers(Vec::new());
        assert!(s.extra.is_none());
        assert_eq!(s.digest.get(), Some(7));
        s.set_tool(Some(ToolCall { step: None, tool: Some("x".into()), arguments: None }));
        assert_eq!(s.digest.get(), None, "a real change forgets the digest");
    }

    #[test]
    fn a_clone_forgets_the_digest() {
        let s = SegmentData::new("t", Layer::Summary);
        s.digest.set(7);
        assert_eq!(s.digest.get(), Some(7));
        assert_eq!(s.clone().digest.get(), None);
    }
}
