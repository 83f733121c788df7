use super::*;

#[test]
fn backslash_quote_and_line_feed_are_escaped_as_the_format_requires() {
    assert_eq!(escaped(r#"a\b"c"#), r#"a\\b\"c"#);
    assert_eq!(escaped("a\nb"), r"a\nb");
    assert_eq!(escaped("plain /login é"), "plain /login é");
    assert_eq!(escaped(""), "");
}

#[test]
fn other_control_characters_become_the_replacement_character() {
    assert_eq!(
        escaped("a\rb\tc\u{7f}d\u{85}e"),
        "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}e"
    );
}

#[test]
fn a_forged_sample_line_stays_inside_its_label_value() {
    let forged = "x\"} 1\nlimits_forged_total{a=\"b\"} 999\n";
    let out = escaped(forged);
    assert!(!out.contains('\n'), "{out:?}");
    // Every quote in the output is escaped: the value cannot end early.
    let bytes = out.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'"' {
            let backslashes = bytes[..i].iter().rev().take_while(|&&c| c == b'\\').count();
            assert_eq!(backslashes % 2, 1, "an unescaped quote at {i} in {out:?}");
        }
    }
}

#[test]
fn a_long_value_is_cut_at_a_character_boundary_and_keeps_its_identity() {
    let short = "a".repeat(MAX_LABEL_VALUE_BYTES);
    assert_eq!(LabelValue::bounded(&short).as_str(), short);
    let long_a = format!("{}{}", "é".repeat(200), "A");
    let long_b = format!("{}{}", "é".repeat(200), "B");
    let (a, b) = (LabelValue::bounded(&long_a), LabelValue::bounded(&long_b));
    assert_ne!(a, b, "two long values stay two series");
    assert_eq!(
        a,
        LabelValue::bounded(&long_a),
        "the same value, the same series"
    );
    assert!(
        a.as_str().len() <= MAX_LABEL_VALUE_BYTES + 17,
        "{}",
        a.as_str().len()
    );
    let (kept, hash) = a.as_str().rsplit_once('~').unwrap();
    assert!(long_a.starts_with(kept));
    assert_eq!(hash.len(), 16);
    let huge = "x".repeat(4 << 20);
    assert!(LabelValue::bounded(&huge).as_str().len() <= MAX_LABEL_VALUE_BYTES + 17);
}
