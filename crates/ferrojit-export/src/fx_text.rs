//! The text `print(torch.export.load(path).graph)` prints: the FX graph the deserializer
//! rebuilds from the JSON (placeholders from the graph inputs, a `get_attr` for each
//! subgraph before the node that takes it, `operator.getitem` nodes for the results of
//! multi-output nodes, and one `return`), in FX's `Node.format_node` form.

use crate::model::{
    Argument, ExportedProgram, Graph, InputSpec, Node, OptionalTensorArgument, SymArgument,
};
use ferrojit_runtime::ivalue::{python_float_repr, python_quote};
use std::collections::HashMap;

/// One FX node, as the text needs it.
struct FxNode {
    name: String,
    /// `placeholder`, `get_attr`, `call_function`.
    op: &'static str,
    target: String,
    args: Vec<FxValue>,
    kwargs: Vec<(String, FxValue)>,
}

/// An FX argument.
enum FxValue {
    Node(String),
    Literal(String),
    /// An operator argument (`torch.ops.mylib.op.default`): the graph text shows it as
    /// `str(OpOverload)` does (`mylib.op.default`), the code in full.
    Operator(String),
    /// A string: bare in the graph text, quoted in the code.
    Text(String),
    /// A device: `cpu` in the graph text, `device(type='cpu')` in the code.
    Device(String, Option<i64>),
    List(Vec<FxValue>),
}

impl FxValue {
    fn render(&self) -> String {
        match self {
            FxValue::Node(name) => format!("%{name}"),
            FxValue::Literal(text) | FxValue::Text(text) => text.clone(),
            FxValue::Operator(name) => name.strip_prefix("torch.ops.").unwrap_or(name).to_string(),
            FxValue::Device(kind, index) => device_text(kind, *index),
            FxValue::List(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(FxValue::render)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The output node's form: `str()` of the value, where a node prints as its bare name.
    fn render_output(&self) -> String {
        match self {
            FxValue::Node(name) => name.clone(),
            FxValue::Literal(text) | FxValue::Text(text) => text.clone(),
            FxValue::Operator(name) => name.strip_prefix("torch.ops.").unwrap_or(name).to_string(),
            FxValue::Device(kind, index) => device_text(kind, *index),
            FxValue::List(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(FxValue::render_output)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The Python source form (`repr`), as FX's code generator writes arguments; `rename`
    /// maps nodes whose variables FX renamed.
    fn render_code(&self, rename: &HashMap<String, String>) -> String {
        match self {
            FxValue::Node(name) => rename.get(name).unwrap_or(name).clone(),
            FxValue::Literal(text) => text.clone(),
            FxValue::Text(text) => python_quote(text),
            FxValue::Operator(name) => name.clone(),
            FxValue::Device(kind, index) => match index {
                Some(index) => format!("device(type={}, index={index})", python_quote(kind)),
                None => format!("device(type={})", python_quote(kind)),
            },
            FxValue::List(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|item| item.render_code(rename))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn collect_uses<'a>(&'a self, uses: &mut Vec<&'a str>) {
        match self {
            FxValue::Node(name) => uses.push(name),
            FxValue::Literal(_) | FxValue::Text(_) | FxValue::Operator(_) | FxValue::Device(..) => {
            }
            FxValue::List(items) => items.iter().for_each(|item| item.collect_uses(uses)),
        }
    }
}

fn device_text(kind: &str, index: Option<i64>) -> String {
    match index {
        Some(index) => format!("{kind}:{index}"),
        None => kind.to_string(),
    }
}

fn dtype_name(code: i64) -> String {
    let name = match code {
        1 => "uint8",
        2 => "int8",
        3 => "int16",
        4 => "int32",
        5 => "int64",
        6 => "float16",
        7 => "float32",
        8 => "float64",
        9 => "complex32",
        10 => "complex64",
        11 => "complex128",
        12 => "bool",
        13 => "bfloat16",
        28 => "uint16",
        29 => "float8_e4m3fn",
        30 => "float8_e5m2",
        31 => "float8_e4m3fnuz",
        32 => "float8_e5m2fnuz",
        _ => return format!("ScalarType({code})"),
    };
    format!("torch.{name}")
}

fn python_bool(value: bool) -> String {
    if value { "True" } else { "False" }.to_string()
}

fn sym<T>(symbol: &SymArgument<T>, literal: impl Fn(&T) -> String) -> FxValue {
    match symbol {
        SymArgument::Name(name) => FxValue::Node(name.clone()),
        SymArgument::Literal(value) => FxValue::Literal(literal(value)),
    }
}

fn literals<T>(items: &[T], render: impl Fn(&T) -> String) -> FxValue {
    FxValue::List(
        items
            .iter()
            .map(|item| FxValue::Literal(render(item)))
            .collect(),
    )
}

/// An argument as the deserializer turns it into an FX argument.
fn value(argument: &Argument) -> FxValue {
    let names =
        |names: &[String]| FxValue::List(names.iter().cloned().map(FxValue::Node).collect());
    match argument {
        Argument::None => FxValue::Literal("None".into()),
        Argument::Tensor(name) | Argument::Token(name) => FxValue::Node(name.clone()),
        Argument::Tensors(list) => names(list),
        Argument::Int(v) => FxValue::Literal(v.to_string()),
        Argument::Ints(v) => literals(v, i64::to_string),
        Argument::Float(v) => FxValue::Literal(python_float_repr(*v)),
        Argument::Floats(v) => literals(v, |f| python_float_repr(*f)),
        Argument::String(text) => FxValue::Text(text.clone()),
        Argument::Strings(texts) => {
            FxValue::List(texts.iter().cloned().map(FxValue::Text).collect())
        }
        Argument::SymInt(s) => sym(s, i64::to_string),
        Argument::SymInts(list) => {
            FxValue::List(list.iter().map(|s| sym(s, i64::to_string)).collect())
        }
        Argument::SymBool(s) => sym(s, |b| python_bool(*b)),
        Argument::SymBools(list) => {
            FxValue::List(list.iter().map(|s| sym(s, |b| python_bool(*b))).collect())
        }
        Argument::SymFloat(s) => sym(s, |f| python_float_repr(*f)),
        Argument::SymFloats(list) => FxValue::List(
            list.iter()
                .map(|s| sym(s, |f| python_float_repr(*f)))
                .collect(),
        ),
        Argument::ScalarType(code) => FxValue::Literal(dtype_name(*code)),
        Argument::MemoryFormat(code) => FxValue::Literal(
            match code {
                1 => "torch.contiguous_format",
                2 => "torch.channels_last",
                3 => "torch.channels_last_3d",
                4 => "torch.preserve_format",
                _ => "None",
            }
            .into(),
        ),
        Argument::Layout(code) => FxValue::Literal(
            match code {
                1 => "torch.sparse_coo",
                2 => "torch.sparse_csr",
                3 => "torch.sparse_csc",
                4 => "torch.sparse_bsr",
                5 => "torch.sparse_bsc",
                6 => "torch._mkldnn",
                _ => "torch.strided",
            }
            .into(),
        ),
        Argument::Device(device) => FxValue::Device(device.device_type.clone(), device.index),
        Argument::Bool(v) => FxValue::Literal(python_bool(*v)),
        Argument::Bools(v) => literals(v, |b| python_bool(*b)),
        Argument::Graph(graph) => FxValue::Node(graph.name.clone()),
        Argument::OptionalTensors(items) => FxValue::List(
            items
                .iter()
                .map(|item| match item {
                    OptionalTensorArgument::Tensor(name) => FxValue::Node(name.clone()),
                    OptionalTensorArgument::None => FxValue::Literal("None".into()),
                })
                .collect(),
        ),
        Argument::OptionalTensor(item) => match item {
            OptionalTensorArgument::Tensor(name) => FxValue::Node(name.clone()),
            OptionalTensorArgument::None => FxValue::Literal("None".into()),
        },
        Argument::CustomObj(object) => FxValue::Node(object.name.clone()),
        Argument::Operator(name) => FxValue::Operator(name.clone()),
        Argument::Complex { real, imag } => FxValue::Literal(format!(
            "({}+{}j)",
            python_float_repr(*real),
            python_float_repr(*imag)
        )),
        Argument::NestedTensors(lists) => {
            FxValue::List(lists.iter().map(|list| names(list)).collect())
        }
        Argument::IntLists(lists) => FxValue::List(
            lists
                .iter()
                .map(|list| literals(list, i64::to_string))
                .collect(),
        ),
        Argument::FloatLists(lists) => FxValue::List(
            lists
                .iter()
                .map(|list| literals(list, |f| python_float_repr(*f)))
                .collect(),
        ),
        Argument::StringToArgument(map) => FxValue::Literal(format!(
            "{{{}}}",
            map.iter()
                .map(|(key, inner)| format!("{key}: {}", value(inner).render()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The target as FX prints it (`operator.add` for `_operator.add`).
fn pretty_target(target: &str) -> String {
    match target.strip_prefix("_operator.") {
        Some(rest) => format!("operator.{rest}"),
        None => target.to_string(),
    }
}

fn is_operator_overload(target: &str) -> bool {
    target.starts_with("torch.ops.") && !target.starts_with("torch.ops.higher_order.")
}

/// `base`, or `base_1`, `base_2`, ... : the first name no node has yet, as FX makes names.
fn unique_name(nodes: &[FxNode], base: &str) -> String {
    (0..)
        .map(|count| match count {
            0 => base.to_string(),
            count => format!("{base}_{count}"),
        })
        .find(|candidate| nodes.iter().all(|node| node.name != *candidate))
        .unwrap_or_else(|| base.to_string())
}

fn push_call(nodes: &mut Vec<FxNode>, node: &Node) {
    let mut args = Vec::new();
    let mut kwargs = Vec::new();
    let higher_order = node.target.starts_with("torch.ops.higher_order.");
    for input in &node.inputs {
        // A subgraph the graph takes twice (`invoke_subgraph`'s repeated region) gets a second
        // get_attr node, named uniquely as FX names nodes (`repeated_subgraph0_1`).
        let mut subgraph_node = None;
        if let Argument::Graph(graph) = &input.arg {
            let name = unique_name(nodes, &graph.name);
            nodes.push(FxNode {
                name: name.clone(),
                op: "get_attr",
                target: graph.name.clone(),
                args: Vec::new(),
                kwargs: Vec::new(),
            });
            subgraph_node = Some(FxValue::Node(name));
        }
        let keyword = if higher_order {
            !input.name.is_empty()
        } else if is_operator_overload(&node.target) {
            input.kind == Some(crate::model::ArgumentKind::Keyword)
        } else {
            false
        };
        let converted = subgraph_node.unwrap_or_else(|| value(&input.arg));
        if keyword {
            kwargs.push((input.name.clone(), converted));
        } else {
            args.push(converted);
        }
    }
    let target = pretty_target(&node.target);
    let single_result = match node.outputs.as_slice() {
        [Argument::Tensors(_)] | [Argument::None] => false,
        [_] => !higher_order || node.is_hop_single_tensor_return == Some(true),
        _ => false,
    };
    let own_name = node
        .name
        .clone()
        .or_else(|| {
            node.outputs
                .first()
                .and_then(Argument::name)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "node".to_string());
    let name = if single_result {
        node.outputs
            .first()
            .and_then(Argument::name)
            .map(str::to_string)
            .unwrap_or(own_name)
    } else {
        own_name
    };
    nodes.push(FxNode {
        name: name.clone(),
        op: "call_function",
        target,
        args,
        kwargs,
    });
    if single_result || node.outputs.is_empty() {
        return;
    }
    let getitem = |nodes: &mut Vec<FxNode>, parent: &str, index: usize, name: &str| {
        nodes.push(FxNode {
            name: name.to_string(),
            op: "call_function",
            target: "operator.getitem".into(),
            args: vec![
                FxValue::Node(parent.to_string()),
                FxValue::Literal(index.to_string()),
            ],
            kwargs: Vec::new(),
        });
    };
    if let [Argument::Tensors(names)] = node.outputs.as_slice() {
        for (index, item) in names.iter().enumerate() {
            getitem(nodes, &name, index, item);
        }
        return;
    }
    for (index, output) in node.outputs.iter().enumerate() {
        match output {
            Argument::Tensors(items) => {
                let list_name = format!("{name}_{index}");
                getitem(nodes, &name, index, &list_name);
                for (inner, item) in items.iter().enumerate() {
                    getitem(nodes, &list_name, inner, item);
                }
            }
            // The deserializer names a `None` result's getitem `as_none`, made unique as FX
            // makes names (`as_none_1`, ...).
            Argument::None => {
                let unique = unique_name(nodes, "as_none");
                getitem(nodes, &name, index, &unique);
            }
            other => {
                if let Some(item) = other.name() {
                    getitem(nodes, &name, index, item);
                }
            }
        }
    }
}

/// The FX nodes of `graph`, and the output values, as the deserializer builds them.
fn fx_nodes(graph: &Graph, input_specs: &[InputSpec]) -> (Vec<FxNode>, Vec<FxValue>) {
    let mut nodes = Vec::new();
    for (position, input) in graph.inputs.iter().enumerate() {
        let name = match (input.name(), input_specs.get(position)) {
            (Some(name), _) => name.to_string(),
            (None, Some(InputSpec::ConstantInput { name, .. })) => name.clone(),
            _ => format!("arg{position}"),
        };
        nodes.push(FxNode {
            name: name.clone(),
            op: "placeholder",
            target: name,
            args: Vec::new(),
            kwargs: Vec::new(),
        });
    }
    for node in &graph.nodes {
        push_call(&mut nodes, node);
    }
    let outputs = graph.outputs.iter().map(value).collect();
    (nodes, outputs)
}

/// What `print(ep.graph)` prints for the program after `torch.export.load`.
pub fn print_graph(program: &ExportedProgram) -> String {
    let module = &program.graph_module;
    let (nodes, outputs) = fx_nodes(&module.graph, &module.signature.input_specs);
    let mut users: HashMap<&str, usize> = HashMap::new();
    for node in &nodes {
        let mut uses = Vec::new();
        node.args.iter().for_each(|arg| arg.collect_uses(&mut uses));
        node.kwargs
            .iter()
            .for_each(|(_, arg)| arg.collect_uses(&mut uses));
        uses.sort_unstable();
        uses.dedup();
        for used in uses {
            *users.entry(used).or_default() += 1;
        }
    }
    let mut output_uses = Vec::new();
    outputs
        .iter()
        .for_each(|value| value.collect_uses(&mut output_uses));
    output_uses.sort_unstable();
    output_uses.dedup();
    for used in output_uses {
        *users.entry(used).or_default() += 1;
    }
    let mut text = String::from("graph():");
    for node in &nodes {
        let count = users.get(node.name.as_str()).copied().unwrap_or(0);
        text.push_str(&format!(
            "\n    %{} : [num_users={count}] = {}[target={}]",
            node.name, node.op, node.target
        ));
        if node.op == "call_function" {
            let args = node.args.iter().map(FxValue::render).collect::<Vec<_>>();
            let comma = if args.len() == 1 { "," } else { "" };
            let kwargs = node
                .kwargs
                .iter()
                .map(|(key, arg)| format!("{key}: {}", arg.render()))
                .collect::<Vec<_>>();
            text.push_str(&format!(
                "(args = ({}{comma}), kwargs = {{{}}})",
                args.join(", "),
                kwargs.join(", ")
            ));
        }
    }
    let rendered = outputs
        .iter()
        .map(FxValue::render_output)
        .collect::<Vec<_>>();
    let comma = if rendered.len() == 1 { "," } else { "" };
    text.push_str(&format!("\n    return ({}{comma})", rendered.join(", ")));
    text
}

/// Names FX will not use for a variable, because Python's builtins own them.
const PYTHON_BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "bool",
    "bytes",
    "callable",
    "chr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "filter",
    "float",
    "format",
    "getattr",
    "hash",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "object",
    "open",
    "ord",
    "pow",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
];

/// Python's operator for an `operator.*` function FX writes inline (`a + b`, `-a`).
fn inline_operator(target: &str) -> Option<&'static str> {
    Some(match target.strip_prefix("operator.")? {
        "add" => "+",
        "sub" => "-",
        "mul" => "*",
        "truediv" => "/",
        "floordiv" => "//",
        "mod" => "%",
        "pow" => "**",
        "eq" => "==",
        "ne" => "!=",
        "lt" => "<",
        "le" => "<=",
        "gt" => ">",
        "ge" => ">=",
        "and_" => "&",
        "or_" => "|",
        "xor" => "^",
        "lshift" => "<<",
        "rshift" => ">>",
        "neg" => "-",
        "pos" => "+",
        "invert" => "~",
        "not_" => "not ",
        _ => return None,
    })
}

/// What `torch.export.load(path).graph_module.code` holds: FX's Python code for the graph,
/// each value set to None after its last use.
pub fn print_code(program: &ExportedProgram) -> String {
    let module = &program.graph_module;
    let (nodes, outputs) = fx_nodes(&module.graph, &module.signature.input_specs);
    // The node after which each value is last used (the output node frees nothing).
    let mut last_use: HashMap<&str, usize> = HashMap::new();
    let mut freed_after: Vec<Vec<&str>> = vec![Vec::new(); nodes.len()];
    let mut output_uses = Vec::new();
    outputs
        .iter()
        .for_each(|value| value.collect_uses(&mut output_uses));
    for used in &output_uses {
        last_use.insert(used, usize::MAX);
    }
    for (position, node) in nodes.iter().enumerate().rev() {
        let mut uses = Vec::new();
        node.args.iter().for_each(|arg| arg.collect_uses(&mut uses));
        node.kwargs
            .iter()
            .for_each(|(_, arg)| arg.collect_uses(&mut uses));
        for used in uses {
            if !last_use.contains_key(used) {
                last_use.insert(used, position);
                freed_after[position].push(used);
            }
        }
    }
    let placeholders: Vec<&str> = nodes
        .iter()
        .filter(|node| node.op == "placeholder")
        .map(|node| node.name.as_str())
        .collect();
    let mut text = format!("\n\n\ndef forward(self, {}):\n", placeholders.join(", "));
    // A placeholder named like a Python builtin keeps its parameter name, but FX gives its
    // variable a fresh one (`input_1 = input`).
    let mut rename: HashMap<String, String> = HashMap::new();
    for name in &placeholders {
        if PYTHON_BUILTINS.contains(name) {
            let variable = format!("{name}_1");
            text.push_str(&format!("    {variable} = {name}\n"));
            rename.insert(name.to_string(), variable);
        }
    }
    for (position, node) in nodes.iter().enumerate() {
        let expression = match node.op {
            "placeholder" => continue,
            "get_attr" => format!("self.{}", node.target),
            _ => {
                let args: Vec<String> = node
                    .args
                    .iter()
                    .map(|arg| arg.render_code(&rename))
                    .collect();
                if node.target == "operator.getitem" && args.len() == 2 {
                    format!("{}[{}]", args[0], args[1])
                } else if let (Some(symbol), [operand]) =
                    (inline_operator(&node.target), args.as_slice())
                {
                    format!("{symbol}{operand}")
                } else if let (Some(symbol), [left, right]) =
                    (inline_operator(&node.target), args.as_slice())
                {
                    format!("{left} {symbol} {right}")
                } else {
                    let mut all = args;
                    all.extend(
                        node.kwargs
                            .iter()
                            .map(|(key, value)| format!("{key} = {}", value.render_code(&rename))),
                    );
                    format!("{}({})", node.target, all.join(", "))
                }
            }
        };
        let mut freed: Vec<&str> = freed_after[position].clone();
        if !last_use.contains_key(node.name.as_str()) {
            freed.push(&node.name);
        }
        text.push_str(&format!("    {} = {expression}", node.name));
        if !freed.is_empty() {
            text.push_str(&format!(
                ";  {} = None",
                freed
                    .iter()
                    .map(|name| rename.get(*name).map(String::as_str).unwrap_or(name))
                    .collect::<Vec<_>>()
                    .join(" = ")
            ));
        }
        text.push('\n');
    }
    let rendered: Vec<String> = outputs
        .iter()
        .map(|value| value.render_code(&rename))
        .collect();
    let comma = if rendered.len() == 1 { "," } else { "" };
    text.push_str(&format!(
        "    return ({}{comma})\n    ",
        rendered.join(", ")
    ));
    text
}
