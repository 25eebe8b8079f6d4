//! The kernel cache and launcher: picks the shape class of the actual inputs, compiles or
//! reuses the group's kernel, allocates the outputs and runs the kernel over element ranges.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ferrojit_ir::Graph;
use ferrojit_tensor::ops::parallel::{num_threads, split_ranges, PARALLEL_THRESHOLD};
use ferrojit_tensor::{broadcast_shapes, DType, Element, Tensor};

use crate::compile::{compile, CompiledKernel, InputLayout};
use crate::program::{lower, Program, Step};
use crate::row_reduction::RowReductionKind;
use crate::CodegenError;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct KernelKey {
    group_key: u64,
    dtypes: Vec<DType>,
    layouts: Vec<InputLayout>,
    /// The group's trailing reduction (kind and dim), read from the subgraph: a row kernel
    /// and an elementwise kernel are never confused, whatever key a caller reuses.
    reduction: Option<(RowReductionKind, i64)>,
}

enum CacheEntry {
    Compiled(Arc<CompiledKernel>, Arc<Program>),
    Unsupported(String),
}

/// Counters for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Kernels compiled so far.
    pub compiled: usize,
    /// Groups found uncompilable (each remembered, never lowered again).
    pub unsupported: usize,
    /// Calls that ran the strided class (inputs copied to contiguous first).
    pub strided_runs: usize,
}

/// Compiled kernels by (group key, input dtypes, input layouts). Send + Sync: one cache
/// serves every thread of the runtime.
#[derive(Default)]
pub struct GroupCache {
    entries: Mutex<HashMap<KernelKey, CacheEntry>>,
    /// Groups declined whatever the layout (an operator or dtype): by (group key, dtypes).
    declined: Mutex<HashMap<(u64, Vec<DType>), String>>,
    stats: Mutex<CacheStats>,
}

/// Input pointers and output pointers handed to the kernel, as addresses so that the
/// per-thread closures are Send; the buffers they point into outlive every call.
#[derive(Clone, Copy)]
struct KernelArguments {
    inputs: usize,
    outputs: usize,
}

impl GroupCache {
    pub fn new() -> GroupCache {
        GroupCache::default()
    }

    pub fn stats(&self) -> CacheStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why the group keyed `group_key` with these inputs was found uncompilable, if it was.
    pub fn unsupported_reason(&self, group_key: u64, inputs: &[Tensor]) -> Option<String> {
        let dtypes: Vec<DType> = inputs.iter().map(Tensor::dtype).collect();
        let declined = self.declined.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(reason) = declined.get(&(group_key, dtypes.clone())) {
            return Some(reason.clone());
        }
        drop(declined);
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.iter().find_map(|(key, entry)| match entry {
            CacheEntry::Unsupported(reason)
                if key.group_key == group_key && key.dtypes == dtypes =>
            {
                Some(reason.clone())
            }
            _ => None,
        })
    }

    /// Runs the fusion group `subgraph` on `inputs`; `Ok(None)` means "not compilable, run
    /// it in the interpreter". See the crate docs for what compiles.
    pub fn run_group(
        &self,
        group_key: u64,
        subgraph: &Graph,
        inputs: &[Tensor],
    ) -> Result<Option<Vec<Tensor>>, CodegenError> {
        let input_error = |message: String| CodegenError::Input { group_key, message };
        if inputs.len() != subgraph.inputs().len() {
            return Err(input_error(format!(
                "the group takes {} inputs, {} were given",
                subgraph.inputs().len(),
                inputs.len()
            )));
        }
        let dtypes: Vec<DType> = inputs.iter().map(Tensor::dtype).collect();
        if let Some(reason) = dtypes
            .iter()
            .enumerate()
            .find(|(_, d)| !matches!(d, DType::Float32 | DType::Bool))
            .map(|(index, dtype)| format!("input {index} has dtype {dtype:?}"))
        {
            self.remember_unsupported(group_key, &dtypes, reason);
            return Ok(None);
        }
        if self.known_unsupported(group_key, &dtypes) {
            return Ok(None);
        }

        let mut shape: Vec<usize> = Vec::new();
        for (index, input) in inputs.iter().enumerate() {
            shape = broadcast_shapes(&shape, input.sizes()).map_err(|error| {
                input_error(format!("input {index} does not broadcast: {error}"))
            })?;
        }
        let numel: usize = shape.iter().product();

        // Bool conditions become 0.0/1.0 lanes; inputs not laid out flat are copied.
        let mut prepared = Vec::with_capacity(inputs.len());
        let mut layouts = Vec::with_capacity(inputs.len());
        let mut strided = false;
        for input in inputs {
            let mut tensor = if input.dtype() == DType::Bool {
                input.to_dtype(DType::Float32)
            } else {
                input.clone()
            };
            let layout = if tensor.sizes() == shape.as_slice() && tensor.is_contiguous() {
                InputLayout::Full
            } else if tensor.numel() == 1 {
                InputLayout::Scalar
            } else {
                strided = true;
                let sizes: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
                tensor = tensor.expand(&sizes)?.contiguous();
                InputLayout::Full
            };
            prepared.push(tensor);
            layouts.push(layout);
        }

        let key = KernelKey {
            group_key,
            dtypes: dtypes.clone(),
            layouts: layouts.clone(),
            reduction: trailing_reduction(subgraph),
        };
        let Some((kernel, program)) = self.kernel(&key, subgraph)? else {
            return Ok(None);
        };
        // Every output must have the full broadcast shape: a group output computed from a
        // subset of the inputs may be smaller, which the flat kernel cannot write.
        let step_shapes = step_shapes(&program, inputs)?;
        if program.outputs.iter().any(|&o| step_shapes[o] != shape) {
            return Ok(None);
        }
        // A row reduction must be over the last dimension of the actual shape; any other
        // dim runs in the interpreter. A 0-dim tensor is one row of one element.
        let row_length = match &program.row_reduction {
            Some(reduction) => {
                let rank = shape.len().max(1) as i64;
                let dim = if reduction.dim < 0 {
                    reduction.dim + rank
                } else {
                    reduction.dim
                };
                if dim != rank - 1 {
                    return Ok(None);
                }
                shape.last().copied().unwrap_or(1)
            }
            None => 1,
        };
        if strided {
            self.stats
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .strided_runs += 1;
        }

        let mut outputs: Vec<Vec<f32>> = (0..program.outputs.len())
            .map(|_| vec![0.0f32; numel])
            .collect();
        if numel > 0 {
            run_kernel(
                &kernel,
                &prepared,
                &layouts,
                &mut outputs,
                numel,
                row_length,
            )
            .map_err(input_error)?;
        }
        let tensors = outputs
            .into_iter()
            .map(|values| Tensor::from_vec(values, &shape))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(tensors))
    }

    fn known_unsupported(&self, group_key: u64, dtypes: &[DType]) -> bool {
        let declined = self.declined.lock().unwrap_or_else(|e| e.into_inner());
        declined.contains_key(&(group_key, dtypes.to_vec()))
    }

    fn remember_unsupported(&self, group_key: u64, dtypes: &[DType], reason: String) {
        let mut declined = self.declined.lock().unwrap_or_else(|e| e.into_inner());
        if declined
            .insert((group_key, dtypes.to_vec()), reason)
            .is_none()
        {
            self.stats
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .unsupported += 1;
        }
    }

    /// The cached kernel for `key`, compiling it on first use; `None` if unsupported.
    #[allow(clippy::type_complexity)]
    fn kernel(
        &self,
        key: &KernelKey,
        subgraph: &Graph,
    ) -> Result<Option<(Arc<CompiledKernel>, Arc<Program>)>, CodegenError> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = entries.get(key) {
            return Ok(match entry {
                CacheEntry::Compiled(kernel, program) => {
                    Some((Arc::clone(kernel), Arc::clone(program)))
                }
                CacheEntry::Unsupported(_) => None,
            });
        }
        let program = match lower(subgraph, &key.dtypes) {
            Ok(program) => program,
            Err(reason) => {
                drop(entries);
                self.remember_unsupported(key.group_key, &key.dtypes, reason.0);
                return Ok(None);
            }
        };
        let kernel = match compile(&program, &key.layouts) {
            Ok(kernel) => kernel,
            // A program the emitter refuses (a math function of a broadcast scalar) is
            // unsupported for this layout only.
            Err(CodegenError::Compile(reason)) if reason.starts_with("a math function") => {
                entries.insert(key.clone(), CacheEntry::Unsupported(reason));
                self.stats
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .unsupported += 1;
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        let kernel = Arc::new(kernel);
        let program = Arc::new(program);
        entries.insert(
            key.clone(),
            CacheEntry::Compiled(Arc::clone(&kernel), Arc::clone(&program)),
        );
        self.stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .compiled += 1;
        Ok(Some((kernel, program)))
    }
}

/// The trailing softmax or log_softmax of a group's subgraph and its dim (a constant int
/// in a group the fuser built), if it has one.
fn trailing_reduction(subgraph: &Graph) -> Option<(RowReductionKind, i64)> {
    let nodes = subgraph.block_nodes(subgraph.top_block());
    nodes.iter().rev().find_map(|&node| {
        let kind = RowReductionKind::from_operator(subgraph.kind(node).as_str())?;
        let dim = subgraph
            .node_inputs(node)
            .get(1)
            .and_then(|&value| subgraph.producer(value))
            .and_then(|producer| match subgraph.attribute(producer, "value") {
                Some(ferrojit_ir::AttributeValue::Int(dim)) => Some(*dim),
                _ => None,
            })
            .unwrap_or(i64::MIN);
        Some((kind, dim))
    })
}

/// The shape of every step's value (broadcast through the operands).
fn step_shapes(program: &Program, inputs: &[Tensor]) -> Result<Vec<Vec<usize>>, CodegenError> {
    let mut shapes: Vec<Vec<usize>> = Vec::with_capacity(program.steps.len());
    for step in &program.steps {
        let shape = match step {
            Step::Input(index) => inputs[*index].sizes().to_vec(),
            Step::Constant(_) => Vec::new(),
            Step::Unary(_, a) | Step::Call(_, a) => shapes[*a].clone(),
            Step::Binary(_, a, b) => broadcast_shapes(&shapes[*a], &shapes[*b])?,
            Step::Select(c, a, b) => {
                broadcast_shapes(&broadcast_shapes(&shapes[*c], &shapes[*a])?, &shapes[*b])?
            }
        };
        shapes.push(shape);
    }
    Ok(shapes)
}

/// Runs `kernel` over `0..numel`, split across the intra-op threads when large. A kernel
/// with a row reduction is given whole rows of `row_length` elements (each thread a range of
/// rows); `row_length` is 1 for the others.
fn run_kernel(
    kernel: &CompiledKernel,
    inputs: &[Tensor],
    layouts: &[InputLayout],
    outputs: &mut [Vec<f32>],
    numel: usize,
    row_length: usize,
) -> Result<(), String> {
    if row_length == 0 || !numel.is_multiple_of(row_length) {
        return Err(format!(
            "{numel} elements are not whole rows of {row_length}"
        ));
    }
    if inputs.len() != kernel.input_count || outputs.len() != kernel.output_count {
        return Err(format!(
            "kernel compiled for {} inputs and {} outputs got {} and {}",
            kernel.input_count,
            kernel.output_count,
            inputs.len(),
            outputs.len()
        ));
    }
    let guards: Vec<_> = inputs.iter().map(|t| t.storage().read()).collect();
    let mut input_pointers: Vec<*const f32> = Vec::with_capacity(inputs.len());
    for (index, ((tensor, guard), layout)) in inputs.iter().zip(&guards).zip(layouts).enumerate() {
        let values = f32::slice_of(guard)
            .ok_or_else(|| format!("input {index} is not stored as f32 values"))?;
        // The bounds the kernel relies on: a full input holds `numel` values from its
        // offset, a scalar input one.
        let needed = match layout {
            InputLayout::Full => numel,
            InputLayout::Scalar => 1,
        };
        let start = tensor.storage_offset();
        let slice = start
            .checked_add(needed)
            .and_then(|end| values.get(start..end))
            .ok_or_else(|| {
                format!(
                    "input {index} needs {needed} values from offset {start}, its storage holds {}",
                    values.len()
                )
            })?;
        input_pointers.push(slice.as_ptr());
    }
    for (index, output) in outputs.iter().enumerate() {
        if output.len() != numel {
            return Err(format!(
                "output {index} holds {} values, {numel} are written",
                output.len()
            ));
        }
    }
    let output_pointers: Vec<*mut f32> = outputs.iter_mut().map(|o| o.as_mut_ptr()).collect();
    let arguments = KernelArguments {
        inputs: input_pointers.as_ptr() as usize,
        outputs: output_pointers.as_ptr() as usize,
    };
    let entry = kernel.entry();
    let run_range = |range: std::ops::Range<usize>| {
        // SAFETY: `entry` was compiled for exactly these input and output counts (checked
        // above). Every full input pointer is valid for `numel` f32 reads and every scalar
        // one for 1 (checked above against the storage, whose read guards are held until
        // this function returns); every output pointer is valid for `numel` f32 writes.
        // `range` lies within 0..numel, so the kernel reads and writes elements
        // range.start..range.end only; the ranges given to different threads are disjoint,
        // so no two calls write the same output element. A row kernel reads and writes
        // whole rows of `row_length` inside the range: every range starts and ends on a row
        // boundary (rows are what is split, and numel is a whole number of rows, checked
        // above).
        unsafe {
            entry(
                arguments.inputs as *const *const f32,
                arguments.outputs as *const *mut f32,
                range.start as i64,
                range.end as i64,
                row_length as i64,
            )
        }
    };
    let threads = num_threads();
    let rows = numel / row_length;
    if numel >= PARALLEL_THRESHOLD && threads > 1 && rows > 1 {
        use rayon::prelude::*;
        split_ranges(rows, threads)
            .into_par_iter()
            .map(|range| range.start * row_length..range.end * row_length)
            .for_each(run_range);
    } else {
        run_range(0..numel);
    }
    drop(guards);
    Ok(())
}
