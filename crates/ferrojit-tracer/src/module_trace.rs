//! Retracing a TorchScript module's `forward` (`ferrojit trace MODEL.pt --inputs ARGS.pt`),
//! as `torch.jit.trace` of an `nn.Module` records it: parameters and submodules stay
//! attributes, read with `prim::GetAttr` from `self`, and the calls of submodules' methods
//! are inlined (PyTorch keeps each submodule's trace as its own method; here the one
//! `forward` holds everything). Control flow in the scripted forward is frozen and
//! unrolled as for a traced function.

use std::collections::HashSet;

use ferrojit_ir::{Argument, FunctionSchema, Type};
use ferrojit_runtime::IValue;
use ferrojit_serialize::import::{CompiledMethods, LoadedModule};

use crate::error::{Result, TraceError};
use crate::evaluator::Evaluator;
use crate::traced_module::{
    bind_input, output_graph_value, traceable_type, Origin, TracedFunction,
};
use crate::tracing_state::{Trace, Traced, TracingState};

/// Traces `loaded`'s `forward` on `inputs` (positional, without `self`).
pub fn trace_module(loaded: LoadedModule, inputs: Vec<IValue>) -> Result<TracedFunction> {
    let object = loaded.module.object().clone();
    let class = object.class().clone();
    let compile_error = |message: String| TraceError::Compile {
        file: class.qualified_name().to_string(),
        message,
    };
    let forward = loaded
        .unit
        .method(&class, "forward")
        .map_err(|error| compile_error(error.to_string()))?;
    let graph = forward
        .graph(&loaded.unit)
        .map_err(|error| compile_error(error.to_string()))?;
    let schema = forward.schema().clone();
    let parameters: Vec<Argument> = schema.arguments.iter().skip(1).cloned().collect();
    if inputs.len() != parameters.len() {
        return Err(TraceError::ArgumentCount {
            entry: format!("{}.forward", class.qualified_name()),
            expected: parameters.len(),
            given: inputs.len(),
        });
    }
    let mut state = TracingState::new();
    let self_value = state
        .graph
        .add_input(Type::Class(class.clone()), Some("self"));
    let mut arguments = vec![Traced {
        value: IValue::Object(object.clone()),
        trace: Trace::Object(self_value),
    }];
    let receiver = schema
        .arguments
        .first()
        .cloned()
        .ok_or_else(|| compile_error("forward has no `self` parameter".to_string()))?;
    let mut schema_arguments = vec![receiver];
    for (index, (input, parameter)) in inputs.iter().zip(&parameters).enumerate() {
        let ty = traceable_type(input).ok_or_else(|| TraceError::UntraceableInput {
            index,
            name: parameter.name.clone(),
            type_name: input.type_of().annotation_str(),
        })?;
        let value = state.graph.add_input(ty.clone(), Some(&parameter.name));
        bind_input(&mut state, input, value);
        arguments.push(Traced::constant(input.clone()));
        let mut argument = parameter.clone();
        argument.ty = ty;
        argument.default = None;
        schema_arguments.push(argument);
    }
    let scripted = HashSet::new();
    let methods = CompiledMethods::new(loaded.unit.clone());
    let mut evaluator = Evaluator::new(&loaded.unit, methods, &scripted, state);
    let outputs = evaluator.run_function(&graph, arguments)?;
    let mut state = evaluator.state;
    let output = outputs
        .into_iter()
        .next()
        .ok_or_else(|| TraceError::Unsupported {
            what: "a forward returning nothing".to_string(),
            location: String::new(),
        })?;
    let output_value = output_graph_value(&mut state, &output)?;
    let return_type = state.graph.value_type(output_value).clone();
    state.graph.register_output(output_value);
    ferrojit_opt::dead_code_elimination::eliminate_dead_code_with_alias_db(&mut state.graph)
        .map_err(|error| TraceError::Unsupported {
            what: format!("the trace's dead code: {error}"),
            location: String::new(),
        })?;
    let mut returns = schema.returns.clone();
    if let Some(first) = returns.first_mut() {
        first.ty = return_type;
    }
    Ok(TracedFunction {
        graph: state.graph,
        warnings: state.warnings,
        example_output: output.value,
        schema: FunctionSchema {
            name: "forward".to_string(),
            overload_name: String::new(),
            arguments: schema_arguments,
            returns,
            is_vararg: false,
            is_varret: false,
        },
        loaded,
        origin: Origin::Module,
    })
}
