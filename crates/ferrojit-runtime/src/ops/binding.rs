//! Typed argument binding: kernels written as plain Rust functions over typed arguments
//! (`fn(Arc<Tensor>, Arc<Tensor>, Scalar) -> Result<Tensor>`), bound to a schema by one generic
//! adapter that converts each argument per its type and pushes the results, instead of a
//! hand-written `pop_array`/`to_tensor`/`push` adapter per operator.
//!
//! From one functional kernel it also makes the `out=` form (compute, then write into `out`,
//! resizing it as ATen's `resize_output` does) and, where the kernel family computes in place
//! by writing its functional result into `self`, the in-place form. The registry checks that
//! each schema has as many arguments as its kernel takes.

use std::sync::Arc;

use ferrojit_ir::Type;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

/// A kernel parameter type: how one argument value converts to it.
pub trait FromArgument: Sized {
    fn from_argument(value: &IValue) -> Result<Self>;
}

impl FromArgument for Arc<Tensor> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_tensor()
    }
}

/// A `Scalar` argument used as a tensor operand: PyTorch's wrapped number, which promotes
/// with the lowest priority (`add.Scalar`'s `other`).
pub struct WrappedNumber(pub Tensor);

impl FromArgument for WrappedNumber {
    fn from_argument(value: &IValue) -> Result<Self> {
        Ok(WrappedNumber(Tensor::wrapped_scalar(value.to_scalar()?)))
    }
}

impl std::ops::Deref for WrappedNumber {
    type Target = Tensor;
    fn deref(&self) -> &Tensor {
        &self.0
    }
}

impl FromArgument for Scalar {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_scalar()
    }
}

impl FromArgument for i64 {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_int()
    }
}

impl FromArgument for f64 {
    fn from_argument(value: &IValue) -> Result<Self> {
        Ok(value.to_scalar()?.to_f64())
    }
}

impl FromArgument for bool {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_bool()
    }
}

impl FromArgument for String {
    fn from_argument(value: &IValue) -> Result<Self> {
        Ok(value.to_str()?.to_string())
    }
}

/// `int[]`.
impl FromArgument for Vec<i64> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_int_vec()
    }
}

/// A reduction's `int[1]? dim` or `int[1] dim`: a list, a single int (PyTorch accepts one
/// for `int[1]`), or None; None or an empty list means every dimension.
pub struct DimList(pub Vec<i64>);

impl FromArgument for DimList {
    fn from_argument(value: &IValue) -> Result<Self> {
        match value {
            IValue::None => Ok(DimList(Vec::new())),
            IValue::Int(dim) => Ok(DimList(vec![*dim])),
            other => other.to_int_vec().map(DimList),
        }
    }
}

/// A `ScalarType` argument (a c10::ScalarType index).
impl FromArgument for DType {
    fn from_argument(value: &IValue) -> Result<Self> {
        Ok(DType::from_scalar_type_index(value.to_int()?)?)
    }
}

/// `complex`: only a complex value (schemas name int and float operands separately).
impl FromArgument for ferrojit_tensor::Complex128 {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_complex()
    }
}

/// The value itself, for arguments a kernel inspects on its own.
impl FromArgument for IValue {
    fn from_argument(value: &IValue) -> Result<Self> {
        Ok(value.clone())
    }
}

/// `Tensor[]`.
impl FromArgument for Vec<Tensor> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_tensor_vec()
    }
}

/// `Tensor?[]` (`index`'s indices): each element None or a tensor.
impl FromArgument for Vec<Option<Arc<Tensor>>> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value
            .to_list()?
            .to_vec()
            .iter()
            .map(Option::<Arc<Tensor>>::from_argument)
            .collect()
    }
}

/// `float[]`.
impl FromArgument for Vec<f64> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_double_vec()
    }
}

/// `bool[]`.
impl FromArgument for Vec<bool> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value
            .to_list()?
            .to_vec()
            .iter()
            .map(IValue::to_bool)
            .collect()
    }
}

/// `str[]`.
impl FromArgument for Vec<String> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value
            .to_list()?
            .to_vec()
            .iter()
            .map(String::from_argument)
            .collect()
    }
}

impl FromArgument for crate::ivalue::Device {
    fn from_argument(value: &IValue) -> Result<Self> {
        Ok(value.to_device()?.clone())
    }
}

/// A list argument of any element type (`t[]`), shared with the caller: in-place list
/// operators (`append`, `insert`) change the caller's list through it.
impl FromArgument for Arc<crate::ivalue::ListValue> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_list().cloned()
    }
}

/// A tuple argument.
impl FromArgument for Arc<crate::ivalue::TupleValue> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_tuple().cloned()
    }
}

/// A dict argument, shared with the caller (`Dict(k, v)` operators mutate it in place).
impl FromArgument for Arc<crate::ivalue::DictValue> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_dict().cloned()
    }
}

/// An object argument.
impl FromArgument for Arc<crate::object::Object> {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_object().cloned()
    }
}

/// A factory's `Device?` (or `Device`) argument, accepted only when it is None or the CPU,
/// the only device ferrojit runs on. Checked while the arguments are read, so a kernel that
/// takes one never starts on another device.
pub struct CpuDevice;

impl FromArgument for CpuDevice {
    fn from_argument(value: &IValue) -> Result<Self> {
        match value {
            IValue::None => Ok(CpuDevice),
            IValue::Device(device) if device.device_type == "cpu" => Ok(CpuDevice),
            IValue::Device(device) => Err(RuntimeError::Other(format!(
                "device '{device}' is not available: ferrojit runs on the CPU only"
            ))),
            other => Err(RuntimeError::type_mismatch(
                "Device",
                other.type_of().to_string(),
                "device argument",
            )),
        }
    }
}

/// An optional argument: None, or the value converted.
impl<T: FromArgument> FromArgument for Option<T> {
    fn from_argument(value: &IValue) -> Result<Self> {
        match value {
            IValue::None => Ok(None),
            other => T::from_argument(other).map(Some),
        }
    }
}

/// A kernel result type: how it becomes the operator's returned values.
pub trait IntoResults {
    fn into_results(self) -> Vec<IValue>;
}

impl IntoResults for Tensor {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::from(self)]
    }
}

impl IntoResults for (Tensor, Tensor) {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::from(self.0), IValue::from(self.1)]
    }
}

/// `Tensor[]`.
impl IntoResults for Vec<Tensor> {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::list(
            Type::Tensor,
            self.into_iter().map(IValue::from).collect(),
        )]
    }
}

/// `(Tensor, Tensor[])` (histogramdd's hist and bin edges).
impl IntoResults for (Tensor, Vec<Tensor>) {
    fn into_results(self) -> Vec<IValue> {
        let mut results = self.0.into_results();
        results.extend(self.1.into_results());
        results
    }
}

impl IntoResults for IValue {
    fn into_results(self) -> Vec<IValue> {
        vec![self]
    }
}

/// An operator that returns nothing (`-> ()`).
impl IntoResults for () {
    fn into_results(self) -> Vec<IValue> {
        Vec::new()
    }
}

impl IntoResults for Arc<Tensor> {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::from(self)]
    }
}

impl IntoResults for i64 {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::Int(self)]
    }
}

impl IntoResults for f64 {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::Double(self)]
    }
}

impl IntoResults for ferrojit_tensor::Complex128 {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::Complex(self)]
    }
}

impl IntoResults for bool {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::Bool(self)]
    }
}

impl IntoResults for String {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::from(self)]
    }
}

/// A `Scalar` result: the Python number of its kind.
impl IntoResults for Scalar {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::from(self)]
    }
}

/// `int[]`.
impl IntoResults for Vec<i64> {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::list(
            Type::Int,
            self.into_iter().map(IValue::Int).collect(),
        )]
    }
}

/// `float[]`.
impl IntoResults for Vec<f64> {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::list(
            Type::Float,
            self.into_iter().map(IValue::Double).collect(),
        )]
    }
}

/// `bool[]`.
impl IntoResults for Vec<bool> {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::list(
            Type::Bool,
            self.into_iter().map(IValue::Bool).collect(),
        )]
    }
}

/// `str[]`.
impl IntoResults for Vec<String> {
    fn into_results(self) -> Vec<IValue> {
        vec![IValue::list(
            Type::Str,
            self.into_iter().map(IValue::from).collect(),
        )]
    }
}

impl IntoResults for (Tensor, Tensor, Tensor) {
    fn into_results(self) -> Vec<IValue> {
        vec![
            IValue::from(self.0),
            IValue::from(self.1),
            IValue::from(self.2),
        ]
    }
}

impl IntoResults for (Tensor, Tensor, Tensor, Tensor) {
    fn into_results(self) -> Vec<IValue> {
        vec![
            IValue::from(self.0),
            IValue::from(self.1),
            IValue::from(self.2),
            IValue::from(self.3),
        ]
    }
}

/// Several results of any kinds, already values (`-> (Tensor, int)`).
impl IntoResults for Vec<IValue> {
    fn into_results(self) -> Vec<IValue> {
        self
    }
}

/// A plain function or closure over typed parameters, callable on an argument slice.
/// Implemented for every `Fn(A, B, ...) -> Result<R>` whose parameters are [`FromArgument`]
/// (up to eight of them); `Parameters` is the tuple of their types.
pub trait TypedKernel<Parameters>: Send + Sync + 'static {
    type Output;
    /// How many arguments the kernel takes (the schema must declare as many).
    fn arity(&self) -> usize;
    fn call_with(&self, arguments: &[IValue]) -> Result<Self::Output>;
}

/// A kernel over the argument slice itself, reading `arity` arguments: for a family whose
/// members share one body and differ in how their parameters are read (the unary operators,
/// whose `UnaryOp` is built by a typed kernel of its own).
#[derive(Clone)]
pub struct SliceKernel<Body> {
    pub arity: usize,
    pub body: Body,
}

/// The `Parameters` marker of [`SliceKernel`].
pub struct ArgumentSlice;

impl<Body, Output> TypedKernel<ArgumentSlice> for SliceKernel<Body>
where
    Body: Fn(&[IValue]) -> Result<Output> + Send + Sync + 'static,
{
    type Output = Output;
    fn arity(&self) -> usize {
        self.arity
    }
    fn call_with(&self, arguments: &[IValue]) -> Result<Output> {
        (self.body)(arguments)
    }
}

fn argument(arguments: &[IValue], index: usize) -> Result<&IValue> {
    arguments.get(index).ok_or_else(|| {
        RuntimeError::InvalidGraph("operand stack underflow in an operator".to_string())
    })
}

macro_rules! typed_kernel_for_arity {
    ($arity:expr; $($parameter:ident => $index:tt),*) => {
        impl<Function, Output, $($parameter),*> TypedKernel<($($parameter,)*)> for Function
        where
            Function: Fn($($parameter),*) -> Result<Output> + Send + Sync + 'static,
            $($parameter: FromArgument,)*
        {
            type Output = Output;
            fn arity(&self) -> usize {
                $arity
            }
            #[allow(unused_variables)]
            fn call_with(&self, arguments: &[IValue]) -> Result<Output> {
                self($($parameter::from_argument(argument(arguments, $index)?)?),*)
            }
        }
    };
}

typed_kernel_for_arity!(0;);
typed_kernel_for_arity!(1; A => 0);
typed_kernel_for_arity!(2; A => 0, B => 1);
typed_kernel_for_arity!(3; A => 0, B => 1, C => 2);
typed_kernel_for_arity!(4; A => 0, B => 1, C => 2, D => 3);
typed_kernel_for_arity!(5; A => 0, B => 1, C => 2, D => 3, E => 4);
typed_kernel_for_arity!(6; A => 0, B => 1, C => 2, D => 3, E => 4, F => 5);
typed_kernel_for_arity!(7; A => 0, B => 1, C => 2, D => 3, E => 4, F => 5, G => 6);
typed_kernel_for_arity!(8; A => 0, B => 1, C => 2, D => 3, E => 4, F => 5, G => 6, H => 7);
typed_kernel_for_arity!(9; A => 0, B => 1, C => 2, D => 3, E => 4, F => 5, G => 6, H => 7, I => 8);

/// `schema` bound to a typed kernel: its results are the kernel's return value.
pub fn typed<Parameters, Kernel>(schema: &str, kernel: Kernel) -> OperatorDeclaration
where
    Kernel: TypedKernel<Parameters>,
    Kernel::Output: IntoResults,
{
    let arity = kernel.arity();
    OperatorDeclaration::arguments(schema.to_string(), move |arguments: &[IValue]| {
        Ok(kernel.call_with(arguments)?.into_results())
    })
    .with_arity(arity)
}

/// An in-place form whose kernel writes `self` (argument 0) itself and keeps its geometry
/// (`add_`, `exp_`): the operator returns the `self` argument, the very value it was given.
pub fn typed_in_place<Parameters, Kernel>(schema: &str, kernel: Kernel) -> OperatorDeclaration
where
    Kernel: TypedKernel<Parameters, Output = Tensor>,
{
    let arity = kernel.arity();
    OperatorDeclaration::arguments(schema.to_string(), move |arguments: &[IValue]| {
        kernel.call_with(arguments)?;
        Ok(vec![argument(arguments, 0)?.clone()])
    })
    .with_arity(arity)
}

/// The in-place form made from the functional kernel (as ATen's structured kernels make
/// `clamp_` from `clamp`): the result must have `self`'s sizes and a dtype castable to
/// `self`'s; it is written into `self`, and the operator returns the `self` argument.
pub fn in_place_from_functional<Parameters, Kernel>(
    schema: &str,
    kernel: Kernel,
) -> OperatorDeclaration
where
    Kernel: TypedKernel<Parameters, Output = Tensor>,
{
    let arity = kernel.arity();
    OperatorDeclaration::arguments(schema.to_string(), move |arguments: &[IValue]| {
        let target = argument(arguments, 0)?.to_tensor()?;
        let result = kernel.call_with(arguments)?;
        if result.sizes() != target.sizes() {
            return Err(TensorError::OutputShapeMismatch {
                output: target.sizes().to_vec(),
                broadcast: result.sizes().to_vec(),
            }
            .into());
        }
        result.write_into_out(&target)?;
        Ok(vec![argument(arguments, 0)?.clone()])
    })
    .with_arity(arity)
}

/// The `out=` form made from the functional kernel: the functional result of every argument
/// but the last is written into the last (`out`), which is resized to it when its shape
/// differs; the registry's alias write-back makes every handle to `out` see the new geometry.
pub fn out_from_functional<Parameters, Kernel>(schema: &str, kernel: Kernel) -> OperatorDeclaration
where
    Kernel: TypedKernel<Parameters, Output = Tensor>,
{
    let arity = kernel.arity() + 1;
    OperatorDeclaration::arguments(schema.to_string(), move |arguments: &[IValue]| {
        let (out, functional_arguments) = arguments.split_last().ok_or_else(|| {
            RuntimeError::InvalidGraph("an out= operator got no arguments".to_string())
        })?;
        let result = kernel.call_with(functional_arguments)?;
        Ok(vec![IValue::from(
            result.write_into_out(&*out.to_tensor()?)?,
        )])
    })
    .with_arity(arity)
}

/// The functional form, and the `out=` form made from it, of one kernel.
pub fn functional_and_out<Parameters, Kernel>(
    functional_schema: &str,
    out_schema: &str,
    kernel: Kernel,
) -> [OperatorDeclaration; 2]
where
    Kernel: TypedKernel<Parameters, Output = Tensor> + Clone,
{
    [
        typed(functional_schema, kernel.clone()),
        out_from_functional(out_schema, kernel),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opdef::OverloadRank;
    use crate::registry::{OperatorRegistry, Stack};

    fn scaled_sum(x: Arc<Tensor>, y: WrappedNumber, alpha: Scalar) -> Result<Tensor> {
        Ok(x.add(&y, &alpha)?)
    }

    fn registry_with(declarations: Vec<OperatorDeclaration>) -> Result<OperatorRegistry> {
        let mut registry = OperatorRegistry::new();
        registry.register_family(OverloadRank::NativeFunction, declarations)?;
        Ok(registry)
    }

    #[test]
    fn a_typed_kernel_converts_its_arguments_per_their_types() {
        let registry = registry_with(vec![typed(
            "test::scaled_sum(Tensor self, Scalar other, Scalar alpha) -> Tensor",
            scaled_sum,
        )])
        .unwrap();
        let x = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
        let mut stack: Stack = vec![IValue::from(x), IValue::Double(0.5), IValue::Int(2)];
        (registry.lookup("test::scaled_sum").unwrap().kernel)(&mut stack).unwrap();
        let result = stack.pop().unwrap().to_tensor().unwrap();
        // The Python float is a wrapped number: int64 + float → the default float dtype.
        assert_eq!(result.dtype(), DType::Float32);
        assert!(stack.is_empty());
        // A value of the wrong type is a typed error, not a panic.
        let mut stack: Stack = vec![IValue::from("text"), IValue::Int(1), IValue::Int(1)];
        assert!((registry.lookup("test::scaled_sum").unwrap().kernel)(&mut stack).is_err());
    }

    #[test]
    fn a_schema_whose_arity_differs_from_its_kernel_is_refused() {
        let error = registry_with(vec![typed(
            "test::scaled_sum(Tensor self, Scalar other) -> Tensor",
            scaled_sum,
        )])
        .unwrap_err();
        assert!(error.to_string().contains("takes 3"), "{error}");
    }

    #[test]
    fn the_out_form_resizes_out_for_every_handle() {
        let [functional, out] = functional_and_out(
            "test::scaled_sum(Tensor self, Scalar other, Scalar alpha) -> Tensor",
            "test::scaled_sum.out(Tensor self, Scalar other, Scalar alpha, *, Tensor(a!) out) -> Tensor(a!)",
            scaled_sum,
        );
        let registry = registry_with(vec![functional, out]).unwrap();
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        let out = IValue::from(Tensor::zeros(&[0], DType::Float64).unwrap());
        let other_handle = out.clone();
        let mut stack: Stack = vec![IValue::from(x), IValue::Int(1), IValue::Int(1), out];
        (registry.lookup("test::scaled_sum.out").unwrap().kernel)(&mut stack).unwrap();
        let seen = other_handle.to_tensor().unwrap();
        assert_eq!(seen.sizes(), &[3]);
        assert_eq!(seen.dtype(), DType::Float64);
        assert_eq!(seen.to_f64_vec(), vec![2.0, 3.0, 4.0]);
    }

    #[test]
    fn the_in_place_form_from_the_functional_kernel_writes_self() {
        let registry = registry_with(vec![in_place_from_functional(
            "test::scaled_sum_(Tensor(a!) self, Scalar other, Scalar alpha) -> Tensor(a!)",
            scaled_sum,
        )])
        .unwrap();
        let x = IValue::from(Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap());
        let mut stack: Stack = vec![x.clone(), IValue::Int(2), IValue::Int(1)];
        (registry.lookup("test::scaled_sum_").unwrap().kernel)(&mut stack).unwrap();
        assert_eq!(x.to_tensor().unwrap().to_f64_vec(), vec![3.0, 4.0]);
    }
}
