//! AliasDb against PyTorch: every graph in tests/fixtures/alias is parsed, given the
//! registry's schemas, analysed, and each answer PyTorch's `graph.alias_db()` gave
//! (`may_contain_alias` for every pair of values, `has_writers` for every value, and node
//! moves with the node order they leave) must be ferrojit's answer too. Answers known to
//! differ are listed with a reason in `known_differences.txt`; a listed answer that starts
//! agreeing fails the test, so the list only shrinks.
//!
//! Also: building an AliasDb never panics on any graph of the IR corpus.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use ferrojit_ir::{
    parse_graph, parse_graph_with_classes, parse_type, AttributeKind, ClassType, Graph, NodeId,
    Type, ValueId,
};
use ferrojit_opt::alias_analysis::{attach_registry_schemas, AliasDb};
use ferrojit_runtime::OperatorRegistry;
use serde_json::Value;

/// The fixture must hold at least this much, so that an emptied fixture fails.
const MIN_GRAPHS: usize = 50;
const MIN_ANSWERS: usize = 5000;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/alias")
}

/// `GRAPH KIND DETAIL` lines: answers where ferrojit is known to disagree.
fn known_differences() -> BTreeSet<String> {
    let text =
        std::fs::read_to_string(fixtures().join("known_differences.txt")).unwrap_or_default();
    text.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// The class types the graph names, with the attribute types PyTorch recorded.
fn class_types(classes: &Value) -> HashMap<String, Type> {
    let mut types = HashMap::new();
    let Some(classes) = classes.as_object() else {
        return types;
    };
    let mut shells = HashMap::new();
    for name in classes.keys() {
        shells.insert(name.clone(), ClassType::new(name.clone(), false));
    }
    let resolve = |name: &str| shells.get(name).map(|class| Type::Class(class.clone()));
    for (name, attributes) in classes {
        for attribute in attributes.as_array().into_iter().flatten() {
            let attribute_name = attribute[0].as_str().expect("attribute name");
            let type_text = attribute[1].as_str().expect("attribute type");
            let ty = match resolve(type_text) {
                Some(ty) => ty,
                None => parse_type(type_text)
                    .unwrap_or_else(|error| panic!("{name}: attribute type {type_text}: {error}")),
            };
            shells[name].add_attribute(attribute_name, ty, AttributeKind::Regular);
        }
    }
    for (name, class) in shells {
        types.insert(name, Type::Class(class));
    }
    types
}

fn parse_fixture(name: &str, classes: &Value) -> Graph {
    let text = std::fs::read_to_string(fixtures().join(format!("{name}.ir"))).expect("graph text");
    let types = class_types(classes);
    let mut graph = parse_graph_with_classes(&text, &|name| types.get(name).cloned())
        .unwrap_or_else(|error| panic!("{name}.ir does not parse: {error}"));
    attach_registry_schemas(&mut graph, registry());
    graph
}

fn registry() -> &'static OperatorRegistry {
    OperatorRegistry::global()
}

/// Nodes in depth-first print order, as the generator numbers them.
fn numbered_nodes(graph: &Graph) -> Vec<NodeId> {
    graph.all_nodes()
}

/// Every value of the graph (inputs, node outputs, block parameters) by its printed name.
fn values_by_name(graph: &Graph) -> HashMap<String, ValueId> {
    let mut values: Vec<ValueId> = graph.inputs().to_vec();
    for node in graph.all_nodes() {
        values.extend(graph.node_outputs(node));
        for &block in graph.node_blocks(node) {
            values.extend(graph.block_parameters(block));
        }
    }
    values
        .into_iter()
        .map(|value| (graph.value_display_name(value), value))
        .collect()
}

/// Splits `a, Dict(str, Tensor), b` at the commas outside brackets.
fn split_top_level(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 && chars.peek() == Some(&' ') => {
                chars.next();
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
        .into_iter()
        .map(|part| part.trim().trim_end_matches(',').to_string())
        .filter(|part| !part.is_empty())
        .collect()
}

/// The facts of a dump that do not depend on element order: each `X points to: ...` as a
/// set, and each writing node (by kind and inputs) with the set of locations it writes.
/// (`contains` lines are left out: PyTorch prints their separators misplaced.)
fn dump_facts(dump: &str) -> BTreeSet<String> {
    let mut facts = BTreeSet::new();
    let section = |title: &str| {
        dump.split(title)
            .nth(1)
            .map(|rest| rest.split("\n===").next().unwrap_or(""))
            .unwrap_or("")
            .to_string()
    };
    for line in section("===2. ALIAS DB===").lines() {
        if let Some((element, targets)) = line.split_once(" points to: ") {
            let targets: BTreeSet<String> = split_top_level(targets).into_iter().collect();
            facts.insert(format!("{element} points to {targets:?}"));
        }
    }
    let writes = section("===3. Writes===");
    let mut writer: Option<String> = None;
    for line in writes.lines() {
        if let Some(locations) = line.strip_prefix("  ") {
            let locations: BTreeSet<String> = split_top_level(locations).into_iter().collect();
            facts.insert(format!(
                "{} writes {locations:?}",
                writer.take().unwrap_or_default()
            ));
        } else if !line.trim().is_empty() {
            let line = line.split(" # ").next().unwrap_or(line);
            let after = line.split_once("= ").map(|(_, rest)| rest).unwrap_or(line);
            let kind_end = after.find(['(', '[']).unwrap_or(after.len());
            let inputs = after.rfind('(').map(|start| &after[start..]).unwrap_or("");
            writer = Some(format!("{}{inputs}", &after[..kind_end]));
        }
    }
    facts
}

#[test]
fn alias_db_answers_equal_pytorchs() {
    let answers: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("answers.json")).expect("answers.json"),
    )
    .expect("answers.json is JSON");
    let graphs = answers["graphs"].as_array().expect("graphs");
    let known = known_differences();
    let mut compared = 0usize;
    let mut agreed = 0usize;
    let mut pytorch_raised = 0usize;
    let mut dump_facts_compared = 0usize;
    let mut listed_differences_seen = BTreeSet::new();
    let mut failures = Vec::new();
    let mut check =
        |key: String, expected: bool, actual: bool, compared: &mut usize, agreed: &mut usize| {
            *compared += 1;
            let listed = known.contains(&key);
            if listed {
                listed_differences_seen.insert(key.clone());
            }
            match (expected == actual, listed) {
                (true, false) => *agreed += 1,
                (true, true) => failures.push(format!(
                    "{key}: listed as a known difference but agrees now"
                )),
                (false, true) => {}
                (false, false) => {
                    failures.push(format!("{key}: PyTorch {expected}, ferrojit {actual}"))
                }
            }
        };
    for entry in graphs {
        let name = entry["name"].as_str().expect("name");
        let graph = parse_fixture(name, &entry["classes"]);
        let db = AliasDb::new(&graph);
        let expected_facts = dump_facts(entry["dump"].as_str().expect("dump"));
        let actual_facts = dump_facts(&db.dump(&graph));
        dump_facts_compared += expected_facts.len();
        check(
            format!("{name} dump"),
            true,
            expected_facts == actual_facts,
            &mut compared,
            &mut agreed,
        );
        if expected_facts != actual_facts && std::env::var_os("ALIAS_DUMP_DIFF").is_some() {
            println!(
                "{name}: PyTorch only {:?}",
                expected_facts.difference(&actual_facts).collect::<Vec<_>>()
            );
            println!(
                "{name}: ferrojit only {:?}",
                actual_facts.difference(&expected_facts).collect::<Vec<_>>()
            );
        }
        let by_name = values_by_name(&graph);
        let values: Vec<_> = entry["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|v| {
                let debug_name = v.as_str().expect("value name");
                by_name
                    .get(debug_name)
                    .copied()
                    .unwrap_or_else(|| panic!("{name}: no value %{debug_name}"))
            })
            .collect();
        let rows = entry["may_contain_alias"].as_array().expect("rows");
        for (i, row) in rows.iter().enumerate() {
            let row = row.as_str().expect("row");
            for (j, answer) in row.chars().enumerate() {
                if answer == '?' {
                    pytorch_raised += 1;
                    continue;
                }
                let key = format!(
                    "{name} may_contain_alias {} {}",
                    entry["values"][i].as_str().unwrap_or("?"),
                    entry["values"][j].as_str().unwrap_or("?")
                );
                check(
                    key,
                    answer == '1',
                    db.may_contain_alias(values[i], values[j]),
                    &mut compared,
                    &mut agreed,
                );
            }
        }
        let writers = entry["has_writers"].as_str().expect("has_writers");
        for (i, answer) in writers.chars().enumerate() {
            if answer == '?' {
                pytorch_raised += 1;
                continue;
            }
            let key = format!(
                "{name} has_writers {}",
                entry["values"][i].as_str().unwrap_or("?")
            );
            check(
                key,
                answer == '1',
                db.has_writers(values[i]),
                &mut compared,
                &mut agreed,
            );
        }
        for the_move in entry["moves"].as_array().expect("moves") {
            let side = the_move[0].as_str().expect("side");
            let node_index = the_move[1].as_u64().expect("node") as usize;
            let point_index = the_move[2].as_u64().expect("point") as usize;
            let expected = the_move[3].as_bool().expect("answer");
            let expected_order: Vec<usize> = the_move[4]
                .as_array()
                .expect("order")
                .iter()
                .map(|i| i.as_u64().expect("index") as usize)
                .collect();
            let mut moved = graph.clone();
            let nodes = numbered_nodes(&moved);
            let (node, point) = (nodes[node_index], nodes[point_index]);
            let actual = if side == "after" {
                db.move_after_topologically_valid(&mut moved, node, point)
            } else {
                db.move_before_topologically_valid(&mut moved, node, point)
            };
            let key = format!("{name} move_{side} {node_index} {point_index}");
            check(key.clone(), expected, actual, &mut compared, &mut agreed);
            let index_of: HashMap<NodeId, usize> =
                nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
            let order: Vec<usize> = numbered_nodes(&moved).iter().map(|n| index_of[n]).collect();
            check(
                format!("{key} order"),
                true,
                order == expected_order,
                &mut compared,
                &mut agreed,
            );
            ferrojit_ir::verifier::verify(&moved)
                .unwrap_or_else(|error| panic!("{key} left an invalid graph: {error}"));
        }
    }
    for key in &known {
        if !listed_differences_seen.contains(key) {
            failures.push(format!(
                "{key}: listed as a known difference but no such answer"
            ));
        }
    }
    println!(
        "{} graphs, {compared} answers compared, {agreed} agree, {} listed differences, \
         {pytorch_raised} where PyTorch raised, {dump_facts_compared} dump facts",
        graphs.len(),
        known.len()
    );
    assert!(graphs.len() >= MIN_GRAPHS, "only {} graphs", graphs.len());
    assert!(compared >= MIN_ANSWERS, "only {compared} answers");
    assert!(
        dump_facts_compared >= 200,
        "only {dump_facts_compared} dump facts"
    );
    assert!(
        failures.is_empty(),
        "{} answers differ from PyTorch's:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Building an AliasDb, dumping it and asking it every question never panics on any graph
/// the IR parser accepts: the corpus PyTorch printed, and the verifier's broken graphs
/// (wrong block arities, values of the wrong type), which parse but break invariants.
#[test]
fn alias_db_never_panics_on_parsed_graphs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ir");
    let mut count = 0;
    for folder in ["corpus", "verifier"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join(folder))
            .expect("IR folder")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().and_then(|e| e.to_str()) == Some("ir"))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("readable");
            let Ok(graph) = parse_graph(&text) else {
                continue;
            };
            exercise(graph);
            count += 1;
        }
    }
    assert!(count >= 40, "only {count} IR graphs parsed");
}

/// Every query on every value and node, with and without the registry's schemas.
fn exercise(mut graph: Graph) {
    for with_schemas in [false, true] {
        if with_schemas {
            attach_registry_schemas(&mut graph, registry());
        }
        let db = AliasDb::new(&graph);
        let _ = db.dump(&graph);
        let values: Vec<ValueId> = values_by_name(&graph).into_values().collect();
        for &a in &values {
            let _ = db.has_writers(a);
            let _ = db.may_alias_wildcard(&graph, a);
            for &b in &values {
                let _ = db.may_contain_alias(a, b);
                let _ = db.may_alias(a, b);
            }
        }
        let _ = db.escapes_scope(&graph, &values);
        let nodes = graph.all_nodes();
        for &n in &nodes {
            let _ = db.writes_to_alias(&graph, n, graph.node_inputs(n));
            let _ = db.is_mutable_node(&graph, n);
            for &m in nodes.iter().take(8) {
                let mut copy = graph.clone();
                let _ = db.move_after_topologically_valid(&mut copy, n, m);
                let mut copy = graph.clone();
                let _ = db.move_before_topologically_valid(&mut copy, n, m);
            }
        }
    }
}

/// The registry is the one the interpreter uses, so schemas attach as they resolve at run
/// time; a node the registry has no overload for stays unschematized.
#[test]
fn schemas_attach_from_the_registry() {
    let mut graph = parse_graph(
        "graph(%x : Tensor):\n  %1 : int = prim::Constant[value=-1]()\n  %2 : int[] = prim::ListConstruct(%1)\n  %3 : Tensor = aten::view(%x, %2)\n  %4 : Tensor = my::unknown(%3)\n  return (%4)\n",
    )
    .expect("parses");
    attach_registry_schemas(&mut graph, registry());
    let nodes = graph.all_nodes();
    let view = graph.node(nodes[2]).schema.clone();
    assert_eq!(view.map(|s| s.full_name()), Some("aten::view".to_string()));
    assert!(graph.node(nodes[3]).schema.is_none());
    let db = AliasDb::new(&graph);
    let x = graph.inputs()[0];
    let view_output = graph.node_outputs(nodes[2])[0];
    let unknown_output = graph.node_outputs(nodes[3])[0];
    assert!(db.may_alias(x, view_output));
    // The unknown operator may write to what it was given and return anything.
    assert!(db.has_writers(x));
    assert!(db.may_alias(unknown_output, x));
}
