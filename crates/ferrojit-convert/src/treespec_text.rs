//! Writing pytree specs (`torch/utils/_pytree.py`, protocol 1) as the JSON text the program
//! keeps in its module call graph: the structure of the example inputs (`in_spec`) and of
//! the method's result (`out_spec`), so that `ep.module()(*args)` flattens and rebuilds them.

use serde_json::{json, Value as Json};

/// One node of a spec being written.
#[derive(Debug, Clone, PartialEq)]
pub enum SpecNode {
    /// One value; None is a leaf too (torch's pytree registers no node for it).
    Leaf,
    Tuple(Vec<SpecNode>),
    List(Vec<SpecNode>),
    /// A dict with string or integer keys, in order.
    Dict(Vec<Json>, Vec<SpecNode>),
}

impl SpecNode {
    fn to_json(&self) -> Json {
        let container = |type_name: &str, context: String, children: &[SpecNode]| {
            json!({
                "type": type_name,
                "context": context,
                "children_spec": children.iter().map(SpecNode::to_json).collect::<Vec<_>>(),
            })
        };
        match self {
            SpecNode::Leaf => json!({"type": null, "context": null, "children_spec": []}),
            SpecNode::Tuple(children) => container("builtins.tuple", "null".into(), children),
            SpecNode::List(children) => container("builtins.list", "null".into(), children),
            SpecNode::Dict(keys, children) => container(
                "builtins.dict",
                Json::Array(keys.clone()).to_string(),
                children,
            ),
        }
    }

    /// The spec as torch's `treespec_dumps` text: `[1, {...}]`.
    pub fn to_text(&self) -> String {
        json!([1, self.to_json()]).to_string()
    }
}

/// The in-spec of positional arguments: `((arg0, arg1, ...), {})`.
pub fn call_spec(arguments: Vec<SpecNode>) -> SpecNode {
    SpecNode::Tuple(vec![
        SpecNode::Tuple(arguments),
        SpecNode::Dict(Vec::new(), Vec::new()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrojit_export::treespec::TreeSpec;
    use std::collections::BTreeMap;

    #[test]
    fn written_specs_read_back_with_the_same_structure() {
        let spec = call_spec(vec![
            SpecNode::Leaf,
            SpecNode::List(vec![SpecNode::Leaf, SpecNode::Leaf]),
            SpecNode::Dict(
                vec![json!("a"), json!(3)],
                vec![SpecNode::Leaf, SpecNode::Leaf],
            ),
        ]);
        let read = TreeSpec::parse(&spec.to_text(), &BTreeMap::new()).unwrap();
        assert_eq!(read.leaf_count(), 5);
        let TreeSpec::Tuple(parts) = read else {
            panic!("expected a tuple")
        };
        assert!(matches!(&parts[0], TreeSpec::Tuple(args) if args.len() == 3));
    }
}
