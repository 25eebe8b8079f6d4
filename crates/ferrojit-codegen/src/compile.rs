//! Turning a [`Program`] into native code with Cranelift: one function that walks an element
//! range block by block, with f32x4 loops and a scalar tail inside each block.
//!
//! The generated function has the C signature
//! `fn(inputs: *const *const f32, outputs: *const *mut f32, start: i64, end: i64,
//! row_length: i64)` and computes elements `start..end` of every output. A group that ends
//! with a row reduction (softmax over the last dimension) walks `start..end` a row of
//! `row_length` elements at a time (the launcher gives whole rows): it runs the pointwise
//! blocks over the row, then calls the row kernel of `row_reduction.rs` on the reduced
//! output's row while it is in L1. Other groups ignore `row_length`. Each input is either "full" (one f32 per
//! element, contiguous) or "scalar" (one f32 broadcast to every element, loaded once).
//!
//! Inside a block of [`BLOCK`] elements the steps are split into segments: runs of inline
//! arithmetic become one loop that keeps values in registers, and each transcendental step is
//! one call to a kernel of `math.rs` over the whole block. A value crossing segments lives in
//! a stack temporary of one block; outputs are stored straight to the output buffers.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, I64};
use cranelift_codegen::ir::{
    AbiParam, BlockArg, Endianness, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Type,
    Value,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module};
use std::collections::HashMap;
use std::sync::Mutex;

use crate::math::MathFunction;
use crate::program::{InlineBinary, InlineUnary, Program, Step};
use crate::row_reduction::RowReductionKind;
use crate::CodegenError;

/// Elements per block: small enough that a block's temporaries stay in L1, large enough that
/// a kernel call per block costs little.
pub const BLOCK: i64 = 256;

/// Lanes of the vector type used (Cranelift's x86-64 backend has 128-bit vectors only).
pub const LANES: i64 = 4;

/// The generated entry point: inputs, outputs, start, end, row length.
pub type KernelEntry = unsafe extern "C" fn(*const *const f32, *const *mut f32, i64, i64, i64);

/// A compiled group: the entry point and the module that owns its code.
pub struct CompiledKernel {
    entry: KernelEntry,
    /// Owns the executable memory `entry` points into; freed on drop.
    module: Mutex<Option<JITModule>>,
    pub input_count: usize,
    pub output_count: usize,
}

impl CompiledKernel {
    /// The generated function.
    pub fn entry(&self) -> KernelEntry {
        self.entry
    }
}

impl Drop for CompiledKernel {
    fn drop(&mut self) {
        let module = self.module.get_mut().ok().and_then(|module| module.take());
        if let Some(module) = module {
            // SAFETY: a kernel is only run through an `Arc<CompiledKernel>` borrowed for the
            // duration of the call, so when the last owner drops it no call is running and
            // `entry` is never called again.
            unsafe { module.free_memory() };
        }
    }
}

/// Whether each group input is one value per element or one value for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputLayout {
    Full,
    Scalar,
}

/// Where a value lives between segments.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Home {
    /// Not stored anywhere: a constant or a broadcast scalar input, materialized in entry.
    Free,
    /// Input buffer number.
    Input(usize),
    /// Output buffer number.
    Output(usize),
    /// Stack temporary number.
    Temporary(usize),
    /// Used only inside the segment that computes it.
    Register,
}

enum Segment {
    Inline(Vec<usize>),
    Call(usize),
}

fn codegen_error(what: impl std::fmt::Display) -> CodegenError {
    CodegenError::Compile(what.to_string())
}

fn new_module() -> Result<JITModule, CodegenError> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(codegen_error)?;
    flags.set("is_pic", "false").map_err(codegen_error)?;
    flags
        .set("use_colocated_libcalls", "false")
        .map_err(codegen_error)?;
    let isa = cranelift_native::builder()
        .map_err(codegen_error)?
        .finish(settings::Flags::new(flags))
        .map_err(codegen_error)?;
    let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
    for function in MathFunction::all() {
        builder.symbol(function.symbol(), function.kernel() as *const u8);
    }
    for reduction in RowReductionKind::all() {
        builder.symbol(reduction.symbol(), reduction.kernel() as *const u8);
    }
    Ok(JITModule::new(builder))
}

/// Compiles `program` for inputs laid out as `layouts`.
pub fn compile(program: &Program, layouts: &[InputLayout]) -> Result<CompiledKernel, CodegenError> {
    let mut module = new_module()?;
    let pointer = module.target_config().pointer_type();
    if pointer != I64 {
        return Err(codegen_error("only 64-bit targets are supported"));
    }
    let mut signature = module.make_signature();
    for _ in 0..5 {
        signature.params.push(AbiParam::new(I64));
    }
    let function_id = module
        .declare_function("fusion_group", Linkage::Local, &signature)
        .map_err(codegen_error)?;

    let mut kernel_signature = module.make_signature();
    kernel_signature.params.extend([
        AbiParam::new(I64),
        AbiParam::new(I64),
        AbiParam::new(I64),
        AbiParam::new(F32),
    ]);
    let mut kernel_ids: HashMap<&'static str, FuncId> = HashMap::new();
    for step in &program.steps {
        if let Step::Call(function, _) = step {
            if !kernel_ids.contains_key(function.symbol()) {
                let id = module
                    .declare_function(function.symbol(), Linkage::Import, &kernel_signature)
                    .map_err(codegen_error)?;
                kernel_ids.insert(function.symbol(), id);
            }
        }
    }

    let row_kernel_id = match &program.row_reduction {
        Some(reduction) => {
            let mut row_signature = module.make_signature();
            row_signature
                .params
                .extend([AbiParam::new(I64), AbiParam::new(I64)]);
            Some(
                module
                    .declare_function(reduction.kind.symbol(), Linkage::Import, &row_signature)
                    .map_err(codegen_error)?,
            )
        }
        None => None,
    };

    let mut context = module.make_context();
    context.func.signature = signature;
    let mut builder_context = FunctionBuilderContext::new();
    {
        let mut kernel_refs = HashMap::new();
        for (&symbol, &id) in &kernel_ids {
            kernel_refs.insert(symbol, module.declare_func_in_func(id, &mut context.func));
        }
        let row_kernel_ref =
            row_kernel_id.map(|id| module.declare_func_in_func(id, &mut context.func));
        let builder = FunctionBuilder::new(&mut context.func, &mut builder_context);
        let mut emitter = Emitter::new(builder, program, layouts, kernel_refs)?;
        emitter.row_kernel = row_kernel_ref;
        emitter.emit();
        let mut builder = emitter.builder;
        builder.seal_all_blocks();
        builder.finalize(module.target_config());
    }
    module
        .define_function(function_id, &mut context)
        .map_err(codegen_error)?;
    module.clear_context(&mut context);
    module.finalize_definitions().map_err(codegen_error)?;
    let address = module.get_finalized_function(function_id);
    // SAFETY: `address` is the start of the function just defined with the signature built
    // above (five i64 parameters, no results, the platform's C calling convention), which is
    // `KernelEntry`'s ABI; pointers are i64 on this target (checked above).
    let entry = unsafe { std::mem::transmute::<*const u8, KernelEntry>(address) };
    Ok(CompiledKernel {
        entry,
        module: Mutex::new(Some(module)),
        input_count: layouts.len(),
        output_count: program.outputs.len(),
    })
}

/// Splits the steps into segments (inputs and constants belong to none).
fn segments(program: &Program) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut run = Vec::new();
    for (index, step) in program.steps.iter().enumerate() {
        match step {
            Step::Input(_) | Step::Constant(_) => {}
            Step::Call(..) => {
                if !run.is_empty() {
                    segments.push(Segment::Inline(std::mem::take(&mut run)));
                }
                segments.push(Segment::Call(index));
            }
            _ => run.push(index),
        }
    }
    if !run.is_empty() {
        segments.push(Segment::Inline(run));
    }
    segments
}

fn operands(step: &Step) -> Vec<usize> {
    match step {
        Step::Input(_) | Step::Constant(_) => Vec::new(),
        Step::Unary(_, a) | Step::Call(_, a) => vec![*a],
        Step::Binary(_, a, b) => vec![*a, *b],
        Step::Select(c, a, b) => vec![*c, *a, *b],
    }
}

struct Emitter<'a> {
    builder: FunctionBuilder<'a>,
    program: &'a Program,
    segments: Vec<Segment>,
    homes: Vec<Home>,
    temporaries: usize,
    kernel_refs: HashMap<&'static str, cranelift_codegen::ir::FuncRef>,
    /// Free values (constants, scalar inputs) as (scalar, vector) pairs.
    free_values: HashMap<usize, (Value, Value)>,
    input_pointers: Vec<Value>,
    output_pointers: Vec<Value>,
    scratch: Option<cranelift_codegen::ir::StackSlot>,
    /// The row kernel a group with a trailing reduction calls after each row.
    row_kernel: Option<cranelift_codegen::ir::FuncRef>,
}

impl<'a> Emitter<'a> {
    fn new(
        builder: FunctionBuilder<'a>,
        program: &'a Program,
        layouts: &[InputLayout],
        kernel_refs: HashMap<&'static str, cranelift_codegen::ir::FuncRef>,
    ) -> Result<Emitter<'a>, CodegenError> {
        let segments = segments(program);
        let mut defining_segment = vec![usize::MAX; program.steps.len()];
        for (number, segment) in segments.iter().enumerate() {
            match segment {
                Segment::Inline(steps) => {
                    for &step in steps {
                        defining_segment[step] = number;
                    }
                }
                Segment::Call(step) => defining_segment[*step] = number,
            }
        }
        let mut used_elsewhere = vec![false; program.steps.len()];
        for (number, segment) in segments.iter().enumerate() {
            let steps = match segment {
                Segment::Inline(steps) => steps.clone(),
                Segment::Call(step) => vec![*step],
            };
            for step in steps {
                for operand in operands(&program.steps[step]) {
                    if defining_segment[operand] != number {
                        used_elsewhere[operand] = true;
                    }
                }
            }
        }
        let mut homes = Vec::with_capacity(program.steps.len());
        let mut temporaries = 0;
        for (index, step) in program.steps.iter().enumerate() {
            let home = match step {
                Step::Input(input) => match layouts.get(*input) {
                    Some(InputLayout::Full) => Home::Input(*input),
                    Some(InputLayout::Scalar) => Home::Free,
                    None => return Err(codegen_error(format!("no layout for input {input}"))),
                },
                Step::Constant(_) => Home::Free,
                _ => {
                    if let Some(output) = program.outputs.iter().position(|&o| o == index) {
                        Home::Output(output)
                    } else if used_elsewhere[index] || matches!(step, Step::Call(..)) {
                        temporaries += 1;
                        Home::Temporary(temporaries - 1)
                    } else {
                        Home::Register
                    }
                }
            };
            homes.push(home);
        }
        // A kernel call reads its argument from memory, so it cannot take a free value.
        for step in &program.steps {
            if let Step::Call(_, argument) = step {
                if homes[*argument] == Home::Free {
                    return Err(CodegenError::Compile(
                        "a math function of a constant or broadcast scalar".to_string(),
                    ));
                }
            }
        }
        Ok(Emitter {
            builder,
            program,
            segments,
            homes,
            temporaries,
            kernel_refs,
            free_values: HashMap::new(),
            input_pointers: Vec::new(),
            output_pointers: Vec::new(),
            scratch: None,
            row_kernel: None,
        })
    }

    fn memory() -> MemFlagsData {
        MemFlagsData::new().with_notrap()
    }

    fn emit(&mut self) {
        let entry = self.builder.create_block();
        self.builder.append_block_params_for_function_params(entry);
        self.builder.switch_to_block(entry);
        let params = self.builder.block_params(entry).to_vec();
        let (inputs, outputs, start, end) = (params[0], params[1], params[2], params[3]);
        let input_count = self.program.condition_inputs.len();
        for input in 0..input_count {
            let pointer = self
                .builder
                .ins()
                .load(I64, Self::memory(), inputs, (input * 8) as i32);
            self.input_pointers.push(pointer);
        }
        for output in 0..self.program.outputs.len() {
            let pointer =
                self.builder
                    .ins()
                    .load(I64, Self::memory(), outputs, (output * 8) as i32);
            self.output_pointers.push(pointer);
        }
        for (index, step) in self.program.steps.iter().enumerate() {
            if self.homes[index] != Home::Free {
                continue;
            }
            let scalar = match step {
                Step::Constant(value) => self.builder.ins().f32const(*value),
                Step::Input(input) => {
                    self.builder
                        .ins()
                        .load(F32, Self::memory(), self.input_pointers[*input], 0)
                }
                _ => unreachable!("only constants and inputs are free"),
            };
            let vector = self.builder.ins().splat(F32X4, scalar);
            self.free_values.insert(index, (scalar, vector));
        }
        if self.temporaries > 0 {
            let bytes = (self.temporaries as i64 * BLOCK * 4) as u32;
            self.scratch = Some(self.builder.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                bytes,
                4,
            )));
        }

        match (self.program.row_reduction, self.row_kernel) {
            (Some(reduction), Some(row_kernel)) => {
                // for row_start in (start..end).step_by(row_length): the pointwise blocks
                // over the row, then the row kernel on the reduced output's row.
                let row_length = params[4];
                let row_head = self.builder.create_block();
                let row_body = self.builder.create_block();
                let exit = self.builder.create_block();
                let row_start = self.builder.append_block_param(row_head, I64);
                self.builder.ins().jump(row_head, &[BlockArg::Value(start)]);

                self.builder.switch_to_block(row_head);
                let more = self
                    .builder
                    .ins()
                    .icmp(IntCC::SignedLessThan, row_start, end);
                self.builder.ins().brif(more, row_body, &[], exit, &[]);

                self.builder.switch_to_block(row_body);
                let row_end = self.builder.ins().iadd(row_start, row_length);
                self.emit_block_loop(row_start, row_end);
                let pointer = self.output_pointers[reduction.output];
                let zero = self.builder.ins().iconst(I64, 0);
                let row_address = self.element_address(pointer, row_start, zero);
                self.builder
                    .ins()
                    .call(row_kernel, &[row_address, row_length]);
                self.builder
                    .ins()
                    .jump(row_head, &[BlockArg::Value(row_end)]);

                self.builder.switch_to_block(exit);
            }
            _ => self.emit_block_loop(start, end),
        }
        self.builder.ins().return_(&[]);
    }

    /// The loop over `start..end` in blocks of [`BLOCK`] elements, running every segment
    /// on each block; leaves the builder after the loop.
    fn emit_block_loop(&mut self, start: Value, end: Value) {
        let block_head = self.builder.create_block();
        let block_body = self.builder.create_block();
        let exit = self.builder.create_block();
        let base = self.builder.append_block_param(block_head, I64);
        self.builder
            .ins()
            .jump(block_head, &[BlockArg::Value(start)]);

        self.builder.switch_to_block(block_head);
        let more = self.builder.ins().icmp(IntCC::SignedLessThan, base, end);
        self.builder.ins().brif(more, block_body, &[], exit, &[]);

        self.builder.switch_to_block(block_body);
        let remaining = self.builder.ins().isub(end, base);
        let block = self.builder.ins().iconst(I64, BLOCK);
        let count = self.builder.ins().smin(remaining, block);
        let vector_count = self.builder.ins().band_imm_s(count, !(LANES - 1));
        let zero = self.builder.ins().iconst(I64, 0);
        let segments = std::mem::take(&mut self.segments);
        for segment in &segments {
            match segment {
                Segment::Call(step) => self.emit_call(*step, base, count),
                Segment::Inline(steps) => {
                    self.emit_loop(steps, base, zero, vector_count, F32X4);
                    self.emit_loop(steps, base, vector_count, count, F32);
                }
            }
        }
        self.segments = segments;
        let next = self.builder.ins().iadd(base, count);
        self.builder
            .ins()
            .jump(block_head, &[BlockArg::Value(next)]);

        self.builder.switch_to_block(exit);
    }

    /// The address of element `base + offset` of `step`'s home.
    fn address(&mut self, step: usize, base: Value, offset: Value) -> Value {
        match self.homes[step] {
            Home::Input(input) => {
                let pointer = self.input_pointers[input];
                self.element_address(pointer, base, offset)
            }
            Home::Output(output) => {
                let pointer = self.output_pointers[output];
                self.element_address(pointer, base, offset)
            }
            Home::Temporary(number) => {
                let scratch = self.scratch.expect("temporaries have a stack slot");
                let start =
                    self.builder
                        .ins()
                        .stack_addr(I64, scratch, (number as i64 * BLOCK * 4) as i32);
                let bytes = self.builder.ins().ishl_imm_s(offset, 2);
                self.builder.ins().iadd(start, bytes)
            }
            Home::Free | Home::Register => unreachable!("value {step} has no memory home"),
        }
    }

    fn element_address(&mut self, pointer: Value, base: Value, offset: Value) -> Value {
        let element = self.builder.ins().iadd(base, offset);
        let bytes = self.builder.ins().ishl_imm_s(element, 2);
        self.builder.ins().iadd(pointer, bytes)
    }

    fn emit_call(&mut self, step: usize, base: Value, count: Value) {
        let Step::Call(function, argument) = self.program.steps[step] else {
            unreachable!("call segments hold call steps")
        };
        let zero = self.builder.ins().iconst(I64, 0);
        let source = self.address(argument, base, zero);
        let destination = self.address(step, base, zero);
        let parameter = self.builder.ins().f32const(function.parameter());
        let callee = self.kernel_refs[function.symbol()];
        self.builder
            .ins()
            .call(callee, &[source, destination, count, parameter]);
    }

    /// One loop over `from..to` (in elements of the block) running `steps` on `ty` lanes.
    fn emit_loop(&mut self, steps: &[usize], base: Value, from: Value, to: Value, ty: Type) {
        let lanes = if ty == F32X4 { LANES } else { 1 };
        let head = self.builder.create_block();
        let body = self.builder.create_block();
        let after = self.builder.create_block();
        let offset = self.builder.append_block_param(head, I64);
        self.builder.ins().jump(head, &[BlockArg::Value(from)]);

        self.builder.switch_to_block(head);
        let more = self.builder.ins().icmp(IntCC::SignedLessThan, offset, to);
        self.builder.ins().brif(more, body, &[], after, &[]);

        self.builder.switch_to_block(body);
        let mut values: HashMap<usize, Value> = HashMap::new();
        for &step in steps {
            let value = self.emit_step(step, base, offset, ty, &mut values);
            values.insert(step, value);
            if !matches!(self.homes[step], Home::Register) {
                let address = self.address(step, base, offset);
                self.builder.ins().store(Self::memory(), value, address, 0);
            }
        }
        let next = self.builder.ins().iadd_imm_s(offset, lanes);
        self.builder.ins().jump(head, &[BlockArg::Value(next)]);

        self.builder.switch_to_block(after);
    }

    fn operand(
        &mut self,
        step: usize,
        base: Value,
        offset: Value,
        ty: Type,
        values: &mut HashMap<usize, Value>,
    ) -> Value {
        if let Some(&value) = values.get(&step) {
            return value;
        }
        if let Some(&(scalar, vector)) = self.free_values.get(&step) {
            return if ty == F32X4 { vector } else { scalar };
        }
        let address = self.address(step, base, offset);
        let value = self.builder.ins().load(ty, Self::memory(), address, 0);
        values.insert(step, value);
        value
    }

    fn constant(&mut self, value: f32, ty: Type) -> Value {
        let scalar = self.builder.ins().f32const(value);
        if ty == F32X4 {
            self.builder.ins().splat(F32X4, scalar)
        } else {
            scalar
        }
    }

    fn emit_step(
        &mut self,
        step: usize,
        base: Value,
        offset: Value,
        ty: Type,
        values: &mut HashMap<usize, Value>,
    ) -> Value {
        match self.program.steps[step].clone() {
            Step::Unary(op, a) => {
                let a = self.operand(a, base, offset, ty, values);
                match op {
                    InlineUnary::Neg => self.builder.ins().fneg(a),
                    InlineUnary::Abs => self.builder.ins().fabs(a),
                    InlineUnary::Relu => {
                        let zero = self.constant(0.0, ty);
                        self.builder.ins().fmax(a, zero)
                    }
                    InlineUnary::Sqrt => self.builder.ins().sqrt(a),
                    InlineUnary::Rsqrt => {
                        let one = self.constant(1.0, ty);
                        let root = self.builder.ins().sqrt(a);
                        self.builder.ins().fdiv(one, root)
                    }
                    InlineUnary::Reciprocal => {
                        let one = self.constant(1.0, ty);
                        self.builder.ins().fdiv(one, a)
                    }
                    InlineUnary::Square => self.builder.ins().fmul(a, a),
                }
            }
            Step::Binary(op, a, b) => {
                let a = self.operand(a, base, offset, ty, values);
                let b = self.operand(b, base, offset, ty, values);
                let ins = self.builder.ins();
                match op {
                    InlineBinary::Add => ins.fadd(a, b),
                    InlineBinary::Sub => ins.fsub(a, b),
                    InlineBinary::Mul => ins.fmul(a, b),
                    InlineBinary::Div => ins.fdiv(a, b),
                    InlineBinary::Minimum => ins.fmin(a, b),
                    InlineBinary::Maximum => ins.fmax(a, b),
                }
            }
            Step::Select(condition, a, b) => {
                let condition = self.operand(condition, base, offset, ty, values);
                let a = self.operand(a, base, offset, ty, values);
                let b = self.operand(b, base, offset, ty, values);
                let zero = self.constant(0.0, ty);
                let mask = self.builder.ins().fcmp(FloatCC::NotEqual, condition, zero);
                if ty == F32X4 {
                    let flags = MemFlagsData::new().with_endianness(Endianness::Little);
                    let mask = self.builder.ins().bitcast(F32X4, flags, mask);
                    self.builder.ins().bitselect(mask, a, b)
                } else {
                    self.builder.ins().select(mask, a, b)
                }
            }
            // Calls run in their own segment; inputs and constants are never steps of a loop.
            Step::Call(..) | Step::Input(_) | Step::Constant(_) => {
                unreachable!("step {step} is not inline")
            }
        }
    }
}
