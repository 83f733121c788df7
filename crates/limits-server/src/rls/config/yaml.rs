//! A YAML document as a tree whose every node knows its line, built from
//! yaml-rust2's event parser, so that errors found after parsing (a duplicate
//! descriptor, an unknown unit) still point at `FILE:LINE`.
//!
//! The tree is bounded: nesting deeper than [`MAX_DEPTH`] is an error rather
//! than a deep recursion later, and aliases share their anchor's node instead
//! of copying it (no "billion laughs" blow-up in memory; the descriptor
//! builder bounds the work with its own budget).

use std::collections::HashMap;
use std::rc::Rc;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// Deeper YAML nesting than this is refused (a descriptor tree uses two
/// levels of YAML, a list and a mapping, per level of descriptors).
pub(super) const MAX_DEPTH: usize = 200;

/// A YAML node and the line (1-based) it starts on.
#[derive(Clone, Debug)]
pub(super) struct Node {
    pub line: usize,
    pub value: Rc<Value>,
}

/// What a node holds.
#[derive(Debug)]
pub(super) enum Value {
    /// `~`, `null`, or nothing at all.
    Null,
    /// Any scalar, as written; `plain` is false when it was quoted.
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// A short name of the node's kind, for errors.
    pub fn kind(&self) -> &'static str {
        match &*self.value {
            Value::Null => "nothing",
            Value::Scalar { .. } => "a scalar",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

enum Frame {
    Seq(usize, usize, Vec<Node>),
    Map(usize, usize, Vec<(Node, Node)>, Option<Node>),
}

/// Parses the first document of `text`; an empty text is `Null`.
/// Errors read "ORIGIN:LINE: problem".
pub(super) fn parse(text: &str, origin: &str) -> Result<Node, String> {
    let mut parser = Parser::new_from_str(text);
    let mut frames: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut root: Option<Node> = None;
    let mut documents = 0;
    loop {
        let (event, mark) = parser
            .next_token()
            .map_err(|e| format!("{origin}:{}: invalid YAML: {}", e.marker().line(), e.info()))?;
        let line = mark.line();
        let done = match event {
            Event::StreamEnd => break,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(format!(
                        "{origin}:{line}: a second YAML document; one file holds one domain"
                    ));
                }
                None
            }
            Event::Nothing | Event::StreamStart | Event::DocumentEnd => None,
            Event::Alias(id) => match anchors.get(&id) {
                Some(node) => Some(node.clone()),
                None => return Err(format!("{origin}:{line}: an alias to an unknown anchor")),
            },
            Event::Scalar(text, style, anchor, _) => {
                let plain = style == TScalarStyle::Plain;
                let value = if plain && matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL")
                {
                    Value::Null
                } else {
                    Value::Scalar { text, plain }
                };
                let node = Node {
                    line,
                    value: Rc::new(value),
                };
                if anchor > 0 {
                    anchors.insert(anchor, node.clone());
                }
                Some(node)
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if frames.len() >= MAX_DEPTH {
                    return Err(format!(
                        "{origin}:{line}: nested more than {MAX_DEPTH} levels deep"
                    ));
                }
                frames.push(match event {
                    Event::SequenceStart(..) => Frame::Seq(line, anchor, Vec::new()),
                    _ => Frame::Map(line, anchor, Vec::new(), None),
                });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (line, anchor, value) = match frames.pop() {
                    Some(Frame::Seq(line, anchor, items)) => (line, anchor, Value::Seq(items)),
                    Some(Frame::Map(line, anchor, entries, _)) => {
                        (line, anchor, Value::Map(entries))
                    }
                    None => return Err(format!("{origin}:{line}: unbalanced YAML")),
                };
                let node = Node {
                    line,
                    value: Rc::new(value),
                };
                if anchor > 0 {
                    anchors.insert(anchor, node.clone());
                }
                Some(node)
            }
        };
        if let Some(node) = done {
            match frames.last_mut() {
                Some(Frame::Seq(_, _, items)) => items.push(node),
                Some(Frame::Map(_, _, entries, pending)) => match pending.take() {
                    Some(key) => entries.push((key, node)),
                    None => *pending = Some(node),
                },
                None => {
                    if root.is_none() {
                        root = Some(node);
                    }
                }
            }
        }
    }
    Ok(root.unwrap_or(Node {
        line: 1,
        value: Rc::new(Value::Null),
    }))
}
