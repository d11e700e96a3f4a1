use serde_json::json;

use super::ChatTemplate;
use crate::error::CtxError;

fn render(source: &str, context: serde_json::Value) -> String {
    ChatTemplate::new(source, Some("2024-07-26")).unwrap().render(&context).unwrap()
}

#[test]
fn chatml_renders_with_trimmed_blocks() {
    let source = "{% for message in messages %}\n{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}\n{% endfor %}\n{% if add_generation_prompt %}\n{{ '<|im_start|>assistant\\n' }}\n{% endif %}\n";
    let out = render(source, json!({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true}));
    // As jinja2 renders it: the newline after an expression (not a block tag) stays.
    assert_eq!(out, "<|im_start|>user\nHi<|im_end|>\n\n<|im_start|>assistant\n\n");
}

#[test]
fn lstrip_blocks_strips_the_indent_before_a_tag() {
    let out = render("{% for m in messages %}\n    {% if m %}[{{ m }}]{% endif %}\n{% endfor %}", json!({"messages": ["a", "b"]}));
    assert_eq!(out, "[a][b]");
}

#[test]
fn tojson_writes_what_json_dumps_writes() {
    let ctx = json!({"x": {"b": [1, 2.5, "q'<>&\"", null, true], "a": {}, "u": "é"}});
    assert_eq!(render("{{ x | tojson }}", ctx.clone()), r#"{"b": [1, 2.5, "q'<>&\"", null, true], "a": {}, "u": "é"}"#);
    assert_eq!(
        render("{{ x | tojson(indent=2) }}", json!({"x": {"k": [1, {}], "e": []}})),
        "{\n  \"k\": [\n    1,\n    {}\n  ],\n  \"e\": []\n}"
    );
    assert_eq!(render("{{ x | tojson(ensure_ascii=True, sort_keys=True) }}", json!({"x": {"b": "é", "a": 1}})), r#"{"a": 1, "b": "\u00e9"}"#);
    assert_eq!(render("{{ x | tojson(separators=(',', ':')) }}", json!({"x": {"a": [1, 2]}})), r#"{"a":[1,2]}"#);
}

#[test]
fn python_methods_loop_controls_slices_and_dates() {
    assert_eq!(render("{{ '  hi  '.strip() }}|{{ 'a,b'.split(',') | join('-') }}|{{ 'Ab'.lower() }}", json!({})), "hi|a-b|ab");
    assert_eq!(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", json!({"d": {"z": 1, "a": 2}})), "z=1;a=2;");
    assert_eq!(render("{% for i in [1,2,3,4] %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}", json!({})), "13");
    assert_eq!(render("{% for m in messages[::-1] %}{{ m }}{% endfor %}", json!({"messages": [1, 2, 3]})), "321");
    assert_eq!(render("{{ strftime_now('%d %b %Y') }}", json!({})), "26 Jul 2024");
    assert_eq!(render("{{ 'x'.startswith('x') }}{{ 'abc'.endswith('c') }}", json!({})), "TrueTrue"); // Python's bools
    assert_eq!(render("{% generation %}{{ 'a' }}{% endgeneration %}b", json!({})), "ab");
}

#[test]
fn raise_exception_and_syntax_errors_are_template_errors() {
    let t = ChatTemplate::new("{% if messages[0].role != 'user' %}{{ raise_exception('Conversation roles must alternate') }}{% endif %}ok", None).unwrap();
    match t.render(&json!({"messages": [{"role": "assistant"}]})) {
        Err(CtxError::Template(m)) => assert!(m.contains("Conversation roles must alternate"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(ChatTemplate::new("{% for %}", None), Err(CtxError::Template(_))));
    assert!(matches!(ChatTemplate::new("x", Some("yesterday")), Err(CtxError::InvalidArgument(_))));
}

#[test]
fn indent_keeps_a_final_line_break_as_jinja2_does() {
    assert_eq!(render("{{ '{\\n'|indent(4, first=true) }}|{{ 'a\\n\\nb'|indent(2) }}|{{ 'a\\nb'|indent(width='> ', blank=true) }}", json!({})), "    {\n|a\n\n  b|a\n> b");
}

#[test]
fn malformed_tags_are_errors_not_panics() {
    // Found by reading the generation-tag rewrite: `{%}` once sliced `tag[2..1]`.
    for source in ["{%}", "{%", "{%-%}", "{%+}", "x{%}y", "{% generation", "{%- generation -%}", "%}{%"] {
        let _ = ChatTemplate::new(source, None).map(|t| t.render(&json!({})));
    }
}
