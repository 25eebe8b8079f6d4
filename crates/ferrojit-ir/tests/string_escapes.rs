//! String constants print with PyTorch's escapes (`\'`, octal for control bytes, signed-char
//! escapes for bytes of 0x80 and above) and parse back to the same text; a malformed escape is
//! a parse error, never a panic.

use ferrojit_ir::attributes::quote_string;
use ferrojit_ir::{parse_graph, AttributeValue, Type};

fn graph_with_string(quoted: &str) -> String {
    format!("graph():\n  %0 : str = prim::Constant[value={quoted}]()\n  return (%0)\n")
}

fn parsed_string(text: &str) -> Result<String, String> {
    let graph = parse_graph(text).map_err(|error| error.to_string())?;
    let node = graph
        .producer(graph.outputs()[0])
        .ok_or_else(|| "the output has no producer".to_string())?;
    assert_eq!(graph.value_type(graph.outputs()[0]), &Type::Str);
    match graph.attribute(node, "value") {
        Some(AttributeValue::Str(value)) => Ok(value.to_string()),
        other => Err(format!("unexpected attribute {other:?}")),
    }
}

#[test]
fn every_character_round_trips_through_the_printed_form() {
    // Every code point below 0x800 (one- and two-byte UTF-8), quotes and backslashes among
    // them, plus three-byte and four-byte text.
    let mut text: String = (1u32..0x800).filter_map(char::from_u32).collect();
    text.push_str("日本語 🙂 don't \"x\" \\");
    let quoted = quote_string(&text);
    assert!(quoted.is_ascii(), "the printed form is ASCII: {quoted}");
    assert_eq!(parsed_string(&graph_with_string(&quoted)).unwrap(), text);
}

#[test]
fn malformed_escapes_are_errors() {
    for quoted in [
        r#""\0)""#,   // a signed escape cut short
        r#""\/""#,    // one digit only
        r#""\q""#,    // no such escape
        r#""\0)+"#,   // unterminated
        r#""\7777""#, // octal out of a byte's range is refused, not wrapped
    ] {
        let result = parsed_string(&graph_with_string(quoted));
        assert!(result.is_err(), "{quoted} parsed as {result:?}");
    }
}
