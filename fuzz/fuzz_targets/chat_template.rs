//! Arbitrary bytes as a chat template and its context: the text up to the first NUL byte is the
//! template source, the rest (when it is JSON) the context; otherwise a fixed conversation with
//! tool schemas. Compiling and rendering never panic: every failure is `CtxError::Template`
//! (or, for the context, the render's own refusal), whatever the source holds, and a render that
//! succeeds is deterministic. The tracked render of the open-model adapter renders the same text.
#![no_main]

use ctxfast::error::CtxError;
use ctxfast::template::ChatTemplate;
use libfuzzer_sys::fuzz_target;

fn default_context() -> serde_json::Value {
    serde_json::json!({
        "messages": [
            {"role": "system", "content": "Be brief. 'quotes' <tags> & \"more\""},
            {"role": "user", "content": "Weather in Paris? é😀\n"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "n": 1.5e-7}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "21 degrees"},
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
        "add_generation_prompt": true,
        "bos_token": "<s>",
        "eos_token": "</s>",
    })
}

/// The render `chat.fit_messages` makes (messages as objects that note each read) gives the
/// plain render's text, and message starts that rise and stay inside it.
fn tracked_matches(t: &ChatTemplate, context: &serde_json::Value, plain: Option<&String>) {
    let Some(obj) = context.as_object() else { return };
    let Some(messages) = obj.get("messages").and_then(|m| m.as_array()) else { return };
    if !messages.iter().all(|m| m.is_object()) {
        return;
    }
    let base: Vec<(String, minijinja::Value)> =
        obj.iter().filter(|(k, _)| *k != "messages").map(|(k, v)| (k.clone(), minijinja::Value::from_serialize(v))).collect();
    let values: Vec<minijinja::Value> = messages.iter().map(minijinja::Value::from_serialize).collect();
    match (t.render_messages(&base, &values), plain) {
        (Ok((text, starts)), Some(p)) => {
            assert_eq!(&text, p, "the tracked render differs from the plain one");
            assert!(starts.windows(2).all(|w| w[0] <= w[1]) && starts.iter().all(|&s| s <= text.len()));
        }
        (Ok(_), None) => panic!("the tracked render succeeded where the plain one failed"),
        (Err(CtxError::Template(_)), _) => assert!(plain.is_none(), "the tracked render failed where the plain one did not"),
        (Err(e), _) => panic!("a tracked render failed with {e:?}, not a template error"),
    }
}

fuzz_target!(|data: &[u8]| {
    let (source, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(source) = std::str::from_utf8(source) else { return };
    // Bounded inputs: the templates that matter are a few KB; this keeps each run fast.
    if source.len() > 4096 {
        return;
    }
    let context = serde_json::from_slice::<serde_json::Value>(rest)
        .ok()
        .filter(|v| v.is_object())
        .unwrap_or_else(default_context);
    match ChatTemplate::new(source, Some("2024-07-26")) {
        Ok(t) => {
            let first = t.render(&context);
            match &first {
                Ok(_) | Err(CtxError::Template(_)) => {}
                Err(e) => panic!("a render failed with {e:?}, not a template error"),
            }
            assert_eq!(first, t.render(&context), "two renders of one template differ");
            tracked_matches(&t, &context, first.as_ref().ok());
        }
        Err(CtxError::Template(_)) => {}
        Err(e) => panic!("a compile failed with {e:?}, not a template error"),
    }
});
