//! `torch.jit.fork(fn, args...)` and `torch.jit.wait(future)`. A fork becomes a `prim::fork`
//! node whose `Subgraph` attribute holds the forked code (a call of `fn`, or the body of a
//! closure with the variables it can see passed in as inputs); its output is a
//! `Future[T]`. `aten::wait` yields the value, or raises the error the forked code raised.

use ferrojit_ir::Prim;
use std::collections::BTreeMap;
use std::sync::Arc;

use ferrojit_ir::{AttributeValue, Graph, Type, ValueId};

use super::{compile_function_with_names, CompileContext, Emitter, Parameter, Sugared};
use crate::ast::{Def, Expr, Keyword};
use crate::error::FrontendError;
use crate::source::SourceRange;

impl<'a> Emitter<'a> {
    pub(crate) fn emit_fork(
        &mut self,
        args: &[Expr],
        keywords: &[Keyword],
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let Some(callee) = args.first() else {
            return Err(self.error("fork() expects a function to run", range));
        };
        let (subgraph, inputs) = match self.resolve_sugared(callee)? {
            Some(Sugared::Closure(def)) => {
                if args.len() > 1 || !keywords.is_empty() {
                    return Err(self.error("fork() of a closure takes no further arguments", range));
                }
                self.compile_closure(&def)?
            }
            Some(Sugared::Function(name)) => {
                let (positional, named) = self.emit_arguments(&args[1..], keywords)?;
                self.forked_call(&name, &positional, &named, range)?
            }
            _ => {
                return Err(self.error(
                    "fork() expects a TorchScript function as its first argument",
                    &callee.range,
                ))
            }
        };
        let result_type = subgraph
            .outputs()
            .first()
            .map(|&v| subgraph.value_type(v).clone())
            .unwrap_or(Type::NoneType);
        self.location = Some(range.clone());
        let node = self.insert(
            Prim::Fork.name(),
            &inputs,
            &[Type::Future(Box::new(result_type))],
        );
        self.graph
            .set_attribute(node, "Subgraph", AttributeValue::Graph(Box::new(subgraph)));
        Ok(self.graph.node_output(node, 0))
    }

    /// The subgraph of `fork(f, args)`: the arguments are matched against `f`'s schema here,
    /// and the subgraph calls `f` with them.
    fn forked_call(
        &mut self,
        name: &str,
        positional: &[super::calls::PositionalArgument],
        named: &[super::calls::KeywordArgument],
        range: &SourceRange,
    ) -> Result<(Graph, Vec<ValueId>), FrontendError> {
        let function = self.context.unit.function(name)?;
        let schema = Arc::new(function.schema().clone());
        let matched = self
            .match_schemas(std::slice::from_ref(&schema), positional, named, range)?
            .1;
        let mut graph = Graph::new();
        let parameters: Vec<ValueId> = matched
            .inputs
            .iter()
            .map(|&value| graph.add_input(self.graph.value_type(value).clone(), None))
            .collect();
        let call = graph.insert(
            Prim::CallFunction.name(),
            &parameters,
            &matched.return_types,
        );
        graph.set_attribute(call, "name", AttributeValue::Str(name.to_string()));
        let outputs = graph.node_outputs(call).to_vec();
        let output = match outputs.as_slice() {
            [single] => *single,
            [] => graph.insert_constant(None, Type::NoneType),
            many => {
                let types = many.iter().map(|v| graph.value_type(*v).clone()).collect();
                let tuple = graph.insert(Prim::TupleConstruct.name(), many, &[Type::Tuple(types)]);
                graph.node_output(tuple, 0)
            }
        };
        graph.register_output(output);
        Ok((graph, matched.inputs))
    }

    /// Compiles a closure into its own graph. Every variable visible here becomes an input
    /// (unused ones cost nothing), and the closure sees the sugared names bound here.
    fn compile_closure(&mut self, def: &Def) -> Result<(Graph, Vec<ValueId>), FrontendError> {
        if !def.params.is_empty() {
            return Err(self.error(
                "closures passed to fork() take no parameters",
                &def.name.range,
            ));
        }
        let mut visible: BTreeMap<String, ValueId> = BTreeMap::new();
        let mut sugared: BTreeMap<String, Sugared> = BTreeMap::new();
        for frame in &self.frames {
            for (name, value) in &frame.vars {
                if !name.starts_with('$') {
                    visible.insert(name.clone(), *value);
                }
            }
            for (name, value) in &frame.sugared {
                sugared.insert(name.clone(), value.clone());
            }
        }
        let parameters: Vec<Parameter> = visible
            .iter()
            .map(|(name, value)| Parameter {
                name: name.clone(),
                ty: self.graph.value_type(*value).clone(),
            })
            .collect();
        let inputs: Vec<ValueId> = visible.values().copied().collect();
        let context = CompileContext {
            unit: self.context.unit,
            qualifier: self.context.qualifier,
            owner: self.context.owner.clone(),
            function_name: &def.name.name,
        };
        let graph = compile_function_with_names(context, def, &parameters, None, sugared)?;
        Ok((graph, inputs))
    }

    pub(crate) fn emit_wait(
        &mut self,
        args: &[Expr],
        keywords: &[Keyword],
        range: &SourceRange,
    ) -> Result<ValueId, FrontendError> {
        let ([future_expr], true) = (args, keywords.is_empty()) else {
            return Err(self.error("wait() expects one future", range));
        };
        let future = self.emit_expr(future_expr, None)?;
        let Type::Future(result_type) = self.graph.value_type(future).clone() else {
            return Err(self.error(
                format!(
                    "wait() expects a Future but got a value of type {}",
                    self.graph.value_type(future).annotation_str()
                ),
                &future_expr.range,
            ));
        };
        let schema = self
            .context
            .unit
            .operators()
            .overloads("aten::wait")
            .into_iter()
            .next();
        self.location = Some(range.clone());
        let node = self.insert("aten::wait", &[future], &[*result_type]);
        self.graph.set_node_schema(node, schema);
        Ok(self.graph.node_output(node, 0))
    }
}
