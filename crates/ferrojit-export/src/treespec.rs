//! Pytree specs (`torch/utils/_pytree.py`, protocol 1): how a program's inputs are flattened
//! into graph placeholders and its graph outputs are put back into tuples, lists, dicts and
//! namedtuples.

use crate::error::{ExportError, Result};
use crate::json::{parse_json, Node as Json};
use ferrojit_ir::Type;
use ferrojit_runtime::{DictValue, IValue, ListValue, NamedTupleInfo, TupleValue};
use std::collections::BTreeMap;

/// The pytree protocol this reader reads.
pub const TREESPEC_PROTOCOL: i64 = 1;

/// A key of a dict node.
#[derive(Debug, Clone, PartialEq)]
pub enum DictKey {
    Str(String),
    Int(i64),
}

/// One node of a spec.
#[derive(Debug, Clone, PartialEq)]
pub enum TreeSpec {
    /// A value that is not a container: one graph input or output.
    Leaf,
    /// `None`: no leaves.
    NoneNode,
    Tuple(Vec<TreeSpec>),
    List(Vec<TreeSpec>),
    /// dict, OrderedDict or defaultdict, with the keys in order.
    Dict(Vec<DictKey>, Vec<TreeSpec>),
    NamedTuple {
        type_name: String,
        field_names: Vec<String>,
        children: Vec<TreeSpec>,
    },
}

fn spec_error(message: impl Into<String>) -> ExportError {
    ExportError::TreeSpec(message.into())
}

impl TreeSpec {
    /// Reads the JSON text of a spec. `namedtuple_fields` gives the field names of the
    /// namedtuple types the program names (`treespec_namedtuple_fields`).
    pub fn parse(
        text: &str,
        namedtuple_fields: &BTreeMap<String, Vec<String>>,
    ) -> Result<TreeSpec> {
        let value = parse_json("treespec", text.as_bytes())?;
        let root = Json::new(&value, "treespec");
        let items = root.items()?;
        let [protocol, spec] = items.as_slice() else {
            return Err(spec_error("expected [protocol, spec]"));
        };
        let protocol = protocol.int()?;
        if protocol != TREESPEC_PROTOCOL {
            return Err(spec_error(format!(
                "protocol {protocol} is not the protocol {TREESPEC_PROTOCOL} this reader reads"
            )));
        }
        read_node(spec, namedtuple_fields)
    }

    /// How many leaves the spec has.
    pub fn leaf_count(&self) -> usize {
        match self {
            TreeSpec::Leaf => 1,
            TreeSpec::NoneNode => 0,
            TreeSpec::Tuple(children) | TreeSpec::List(children) | TreeSpec::Dict(_, children) => {
                children.iter().map(TreeSpec::leaf_count).sum()
            }
            TreeSpec::NamedTuple { children, .. } => {
                children.iter().map(TreeSpec::leaf_count).sum()
            }
        }
    }

    /// Flattens `value` by this spec, appending the leaves to `leaves`; `path` names the
    /// value in errors (`args[0]['x']`).
    pub fn flatten(
        &self,
        value: &IValue,
        path: &str,
        leaves: &mut Vec<(String, IValue)>,
    ) -> Result<()> {
        let mismatch = |expected: &str| {
            spec_error(format!(
                "{path} should be {expected} but is a {}",
                value.tag_name()
            ))
        };
        match self {
            TreeSpec::Leaf => leaves.push((path.to_string(), value.clone())),
            TreeSpec::NoneNode => {
                if !value.is_none() {
                    return Err(mismatch("None"));
                }
            }
            TreeSpec::Tuple(children) | TreeSpec::NamedTuple { children, .. } => {
                let IValue::Tuple(tuple) = value else {
                    return Err(mismatch("a tuple"));
                };
                self.flatten_sequence(children, &tuple.items, path, leaves)?;
            }
            TreeSpec::List(children) => {
                let items = match value {
                    IValue::List(list) => list.to_vec(),
                    IValue::Tuple(tuple) => tuple.items.clone(),
                    _ => return Err(mismatch("a list")),
                };
                self.flatten_sequence(children, &items, path, leaves)?;
            }
            TreeSpec::Dict(keys, children) => {
                let IValue::Dict(dict) = value else {
                    return Err(mismatch("a dict"));
                };
                if dict.len() != keys.len() {
                    return Err(spec_error(format!(
                        "{path} should have {} keys but has {}",
                        keys.len(),
                        dict.len()
                    )));
                }
                for (key, child) in keys.iter().zip(children) {
                    let (key_value, key_text) = match key {
                        DictKey::Str(text) => (IValue::string(text), format!("{path}['{text}']")),
                        DictKey::Int(number) => (IValue::Int(*number), format!("{path}[{number}]")),
                    };
                    let Some(item) = dict.get(&key_value) else {
                        return Err(spec_error(format!("{path} has no key {key_text}")));
                    };
                    child.flatten(&item, &key_text, leaves)?;
                }
            }
        }
        Ok(())
    }

    fn flatten_sequence(
        &self,
        children: &[TreeSpec],
        items: &[IValue],
        path: &str,
        leaves: &mut Vec<(String, IValue)>,
    ) -> Result<()> {
        if items.len() != children.len() {
            return Err(spec_error(format!(
                "{path} should have {} elements but has {}",
                children.len(),
                items.len()
            )));
        }
        for (position, (child, item)) in children.iter().zip(items).enumerate() {
            child.flatten(item, &format!("{path}[{position}]"), leaves)?;
        }
        Ok(())
    }

    /// Builds the value this spec describes from `leaves`, taken in order.
    pub fn unflatten(&self, leaves: &mut std::vec::IntoIter<IValue>) -> Result<IValue> {
        Ok(match self {
            TreeSpec::Leaf => leaves
                .next()
                .ok_or_else(|| spec_error("fewer outputs than the spec's leaves"))?,
            TreeSpec::NoneNode => IValue::None,
            TreeSpec::Tuple(children) => {
                IValue::Tuple(TupleValue::new(unflatten_all(children, leaves)?))
            }
            TreeSpec::NamedTuple {
                type_name,
                field_names,
                children,
            } => IValue::Tuple(TupleValue::named(
                unflatten_all(children, leaves)?,
                NamedTupleInfo {
                    type_name: type_name.clone(),
                    field_names: field_names.clone(),
                },
            )),
            TreeSpec::List(children) => {
                let items = unflatten_all(children, leaves)?;
                IValue::List(ListValue::new(common_type(&items), items))
            }
            TreeSpec::Dict(keys, children) => {
                let items = unflatten_all(children, leaves)?;
                let key_type = match keys.first() {
                    Some(DictKey::Int(_)) => Type::Int,
                    _ => Type::Str,
                };
                let dict = DictValue::new(key_type, common_type(&items));
                for (key, item) in keys.iter().zip(items) {
                    let key = match key {
                        DictKey::Str(text) => IValue::string(text),
                        DictKey::Int(number) => IValue::Int(*number),
                    };
                    dict.insert(key, item);
                }
                IValue::Dict(dict)
            }
        })
    }
}

fn unflatten_all(
    children: &[TreeSpec],
    leaves: &mut std::vec::IntoIter<IValue>,
) -> Result<Vec<IValue>> {
    children
        .iter()
        .map(|child| child.unflatten(leaves))
        .collect()
}

/// The element type of a container of `items`: their common type, or `Any`.
fn common_type(items: &[IValue]) -> Type {
    let mut types = items.iter().map(IValue::type_of);
    match types.next() {
        None => Type::Any,
        Some(first) => {
            if types.all(|other| other == first) {
                first
            } else {
                Type::Any
            }
        }
    }
}

fn read_node(json: &Json, namedtuple_fields: &BTreeMap<String, Vec<String>>) -> Result<TreeSpec> {
    let type_name = match json.get_optional("type")? {
        None => None,
        Some(name) => Some(name.string()?),
    };
    let children: Vec<TreeSpec> = json
        .get("children_spec")?
        .items()?
        .iter()
        .map(|child| read_node(child, namedtuple_fields))
        .collect::<Result<_>>()?;
    let context_text = match json.get_optional("context")? {
        None => "null".to_string(),
        Some(context) => context.string()?,
    };
    let Some(type_name) = type_name else {
        return Ok(TreeSpec::Leaf);
    };
    Ok(match type_name.as_str() {
        "builtins.tuple" => TreeSpec::Tuple(children),
        "builtins.list" | "collections.deque" => TreeSpec::List(children),
        "builtins.NoneType" => TreeSpec::NoneNode,
        "builtins.dict" | "collections.OrderedDict" | "collections.defaultdict" => {
            // The context is JSON text (a namedtuple's is a bare type name).
            let context_value = parse_json("treespec context", context_text.as_bytes())?;
            let context = Json::new(&context_value, "treespec context");
            // A defaultdict's context is {default_factory_module, default_factory_name,
            // dict_context}; the others' is the list of keys.
            let keys_json = if type_name == "collections.defaultdict" {
                context.get("dict_context")?
            } else {
                context
            };
            let keys = keys_json
                .items()?
                .iter()
                .map(|key| match key.value {
                    serde_json::Value::String(text) => Ok(DictKey::Str(text.clone())),
                    serde_json::Value::Number(_) => Ok(DictKey::Int(key.int()?)),
                    _ => Err(key.error("a dict key that is neither a string nor an int")),
                })
                .collect::<Result<Vec<_>>>()?;
            if keys.len() != children.len() {
                return Err(spec_error(format!(
                    "a dict spec with {} keys and {} children",
                    keys.len(),
                    children.len()
                )));
            }
            TreeSpec::Dict(keys, children)
        }
        "collections.namedtuple" => {
            let name = context_text;
            let field_names = namedtuple_fields
                .get(&name)
                .cloned()
                .unwrap_or_else(|| (0..children.len()).map(|i| format!("_{i}")).collect());
            if field_names.len() != children.len() {
                return Err(spec_error(format!(
                    "namedtuple {name} has {} fields but {} children",
                    field_names.len(),
                    children.len()
                )));
            }
            TreeSpec::NamedTuple {
                type_name: name,
                field_names,
                children,
            }
        }
        other => {
            return Err(spec_error(format!(
                "unsupported pytree node type '{other}'"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEAF: &str = r#"{"type": null, "context": null, "children_spec": []}"#;

    #[test]
    fn dicts_defaultdicts_none_and_namedtuples_round_trip() {
        let text = format!(
            r#"[1, {{"type": "builtins.tuple", "context": "null", "children_spec": [
                {{"type": "builtins.dict", "context": "[\"a\", 3]", "children_spec": [{LEAF}, {LEAF}]}},
                {{"type": "collections.defaultdict", "context": "{{\"default_factory_module\": \"builtins\", \"default_factory_name\": \"list\", \"dict_context\": [\"k\"]}}", "children_spec": [{LEAF}]}},
                {{"type": "builtins.NoneType", "context": "null", "children_spec": []}},
                {{"type": "collections.namedtuple", "context": "m.Point", "children_spec": [{LEAF}, {LEAF}]}}
            ]}}]"#
        );
        let fields = BTreeMap::from([(
            "m.Point".to_string(),
            vec!["x".to_string(), "y".to_string()],
        )]);
        let spec = TreeSpec::parse(&text, &fields).unwrap();
        assert_eq!(spec.leaf_count(), 5);
        let leaves: Vec<IValue> = (1..=5).map(IValue::Int).collect();
        let value = spec.unflatten(&mut leaves.into_iter()).unwrap();
        let mut flat = Vec::new();
        spec.flatten(&value, "out", &mut flat).unwrap();
        let numbers: Vec<i64> = flat.iter().map(|(_, v)| v.to_int().unwrap()).collect();
        assert_eq!(numbers, vec![1, 2, 3, 4, 5]);
        assert_eq!(flat[1].0, "out[0][3]");
        let IValue::Tuple(tuple) = &value else {
            panic!("a tuple")
        };
        let IValue::Tuple(point) = &tuple.items[3] else {
            panic!("a namedtuple")
        };
        assert_eq!(point.named.as_ref().unwrap().field_names, vec!["x", "y"]);
    }

    #[test]
    fn other_protocols_and_unknown_types_are_refused() {
        assert!(TreeSpec::parse(&format!("[2, {LEAF}]"), &BTreeMap::new()).is_err());
        let unknown = r#"[1, {"type": "evil.Type", "context": "null", "children_spec": []}]"#;
        assert!(TreeSpec::parse(unknown, &BTreeMap::new()).is_err());
        let mismatch = format!(
            r#"[1, {{"type": "builtins.dict", "context": "[\"a\", \"b\"]", "children_spec": [{LEAF}]}}]"#
        );
        assert!(TreeSpec::parse(&mismatch, &BTreeMap::new()).is_err());
    }
}
