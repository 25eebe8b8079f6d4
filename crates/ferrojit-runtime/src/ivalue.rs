//! `IValue`: the dynamically typed value the interpreter moves around (numbers, strings,
//! tensors, shared mutable lists and dicts, tuples, objects), with PyTorch's printing rules.

use std::fmt;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ferrojit_ir::attributes::format_g;
use ferrojit_ir::Type;
use ferrojit_tensor::{Complex128, Scalar, Tensor};

use crate::autograd::AutogradMeta;
use crate::error::{Result, RuntimeError};
use crate::object::Object;

/// A device value. Only the CPU exists at run time, but devices are still values that can be
/// printed, compared and passed to `to()`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Device {
    /// `cpu`, `cuda`, ...
    pub device_type: String,
    pub index: Option<i64>,
}

impl Device {
    pub fn cpu() -> Device {
        Device {
            device_type: "cpu".to_string(),
            index: None,
        }
    }

    /// Parses `cpu`, `cuda`, `cuda:1` the way `torch.device(str)` does.
    pub fn parse(text: &str) -> Result<Device> {
        let (kind, index) = match text.split_once(':') {
            Some((kind, index)) => {
                let index: i64 = index
                    .parse()
                    .map_err(|_| RuntimeError::Other(format!("Invalid device string: '{text}'")))?;
                if index < 0 {
                    return Err(RuntimeError::Other(format!(
                        "Device index must not be negative, got {index}"
                    )));
                }
                (kind, Some(index))
            }
            None => (text, None),
        };
        // c10's device types, in the order its parser's message lists them.
        let known = [
            "cpu",
            "cuda",
            "ipu",
            "xpu",
            "mkldnn",
            "opengl",
            "opencl",
            "ideep",
            "hip",
            "ve",
            "fpga",
            "maia",
            "xla",
            "lazy",
            "vulkan",
            "mps",
            "meta",
            "hpu",
            "mtia",
            "privateuseone",
        ];
        if !known.contains(&kind) {
            return Err(RuntimeError::Other(format!(
                "Expected one of {} device type at start of device string: {text}",
                known.join(", ")
            )));
        }
        Ok(Device {
            device_type: kind.to_string(),
            index,
        })
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(index) => write!(f, "{}:{index}", self.device_type),
            None => write!(f, "{}", self.device_type),
        }
    }
}

fn read_lock<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data is a plain vector and still usable.
    lock.read().unwrap_or_else(|poison| poison.into_inner())
}

fn write_lock<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poison| poison.into_inner())
}

/// A TorchScript list: mutable and shared by reference (appending through one alias is
/// visible through all), with a fixed element type.
#[derive(Debug)]
pub struct ListValue {
    element_type: Type,
    items: RwLock<Vec<IValue>>,
}

impl ListValue {
    pub fn new(element_type: Type, items: Vec<IValue>) -> Arc<ListValue> {
        Arc::new(ListValue {
            element_type,
            items: RwLock::new(items),
        })
    }

    pub fn element_type(&self) -> &Type {
        &self.element_type
    }

    pub fn read(&self) -> RwLockReadGuard<'_, Vec<IValue>> {
        read_lock(&self.items)
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, Vec<IValue>> {
        write_lock(&self.items)
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// A snapshot of the elements.
    pub fn to_vec(&self) -> Vec<IValue> {
        self.read().clone()
    }

    pub fn get(&self, index: usize) -> Option<IValue> {
        self.read().get(index).cloned()
    }

    pub fn push(&self, value: IValue) {
        self.write().push(value);
    }
}

/// Field names of a NamedTuple value.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedTupleInfo {
    pub type_name: String,
    pub field_names: Vec<String>,
}

/// An immutable tuple, optionally a NamedTuple.
#[derive(Debug)]
pub struct TupleValue {
    pub items: Vec<IValue>,
    pub named: Option<NamedTupleInfo>,
}

impl TupleValue {
    pub fn new(items: Vec<IValue>) -> Arc<TupleValue> {
        Arc::new(TupleValue { items, named: None })
    }

    pub fn named(items: Vec<IValue>, info: NamedTupleInfo) -> Arc<TupleValue> {
        Arc::new(TupleValue {
            items,
            named: Some(info),
        })
    }
}

/// A TorchScript dict: insertion ordered, mutable and shared by reference. Keys are str, int,
/// float, bool or Tensor (compared by identity). Lookup is a linear scan: TorchScript dicts
/// are small in practice, and it keeps Tensor-identity keys simple.
#[derive(Debug)]
pub struct DictValue {
    key_type: Type,
    value_type: Type,
    entries: RwLock<Vec<(IValue, IValue)>>,
}

impl DictValue {
    pub fn new(key_type: Type, value_type: Type) -> Arc<DictValue> {
        Arc::new(DictValue {
            key_type,
            value_type,
            entries: RwLock::new(Vec::new()),
        })
    }

    pub fn key_type(&self) -> &Type {
        &self.key_type
    }

    pub fn value_type(&self) -> &Type {
        &self.value_type
    }

    pub fn len(&self) -> usize {
        read_lock(&self.entries).len()
    }

    pub fn is_empty(&self) -> bool {
        read_lock(&self.entries).is_empty()
    }

    /// A snapshot of the entries in insertion order.
    pub fn entries(&self) -> Vec<(IValue, IValue)> {
        read_lock(&self.entries).clone()
    }

    pub fn get(&self, key: &IValue) -> Option<IValue> {
        read_lock(&self.entries)
            .iter()
            .find(|(k, _)| k.key_equals(key))
            .map(|(_, v)| v.clone())
    }

    pub fn contains(&self, key: &IValue) -> bool {
        read_lock(&self.entries)
            .iter()
            .any(|(k, _)| k.key_equals(key))
    }

    /// Inserts or replaces; a replaced key keeps its original position (as in Python).
    pub fn insert(&self, key: IValue, value: IValue) {
        let mut entries = write_lock(&self.entries);
        if let Some(slot) = entries.iter_mut().find(|(k, _)| k.key_equals(&key)) {
            slot.1 = value;
        } else {
            entries.push((key, value));
        }
    }

    pub fn remove(&self, key: &IValue) -> Option<IValue> {
        let mut entries = write_lock(&self.entries);
        let position = entries.iter().position(|(k, _)| k.key_equals(key))?;
        Some(entries.remove(position).1)
    }

    pub fn clear(&self) {
        write_lock(&self.entries).clear();
    }
}

/// One tensor as TorchScript code sees it, PyTorch's `TensorImpl`: every handle to it (a
/// variable, a list element, an attribute, a caller's argument) sees a change of its geometry
/// or storage made through any other, as `out=` resizing and in-place view ops such as
/// `unsqueeze_` make them. Readers take a snapshot ([`TensorCell::get`]) and never hold the lock
/// while an operator runs, so a kernel cannot deadlock against a write to a tensor it reads.
///
/// The cell also holds the tensor's autograd metadata ([`AutogradMeta`]: `requires_grad` now,
/// room for `grad_fn` and `grad`), so replacing the tensor ([`TensorCell::set`]) keeps it.
pub struct TensorCell {
    current: Mutex<Arc<Tensor>>,
    autograd: AutogradMeta,
}

impl TensorCell {
    pub fn new(tensor: Arc<Tensor>) -> TensorCell {
        TensorCell::with_autograd(tensor, AutogradMeta::default())
    }

    /// A cell for `tensor` with the given autograd metadata (a loaded parameter's
    /// `requires_grad`).
    pub fn with_autograd(tensor: Arc<Tensor>, autograd: AutogradMeta) -> TensorCell {
        TensorCell {
            current: Mutex::new(tensor),
            autograd,
        }
    }

    /// The tensor's autograd metadata, shared by every handle to it.
    pub fn autograd(&self) -> &AutogradMeta {
        &self.autograd
    }

    /// `tensor.requires_grad`.
    pub fn requires_grad(&self) -> bool {
        self.autograd.requires_grad()
    }

    /// `tensor.requires_grad_(value)`: every handle sees it, and it outlives a replacement of
    /// the tensor by an in-place operator.
    pub fn set_requires_grad(&self, value: bool) {
        self.autograd.set_requires_grad(value);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Arc<Tensor>> {
        // A poisoned lock only means a panic elsewhere; the snapshot is still a whole value.
        self.current
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The tensor as it is now.
    pub fn get(&self) -> Arc<Tensor> {
        Arc::clone(&self.lock())
    }

    /// Makes every handle see `tensor` from now on (PyTorch's `set_`/resize of this `TensorImpl`).
    pub fn set(&self, tensor: Arc<Tensor>) {
        *self.lock() = tensor;
    }

    /// The tensor, owned: moved out when nothing else holds this cell or its snapshot. The
    /// autograd metadata stays with the cell (a new cell made from the tensor starts without).
    fn into_tensor(self) -> Tensor {
        let current = self
            .current
            .into_inner()
            .unwrap_or_else(|poison| poison.into_inner());
        Arc::unwrap_or_clone(current)
    }
}

impl fmt::Debug for TensorCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

/// A TorchScript runtime value. Tensors and devices sit behind pointers so the enum stays
/// small: the interpreter copies values between its stack and registers on every
/// instruction, and a tensor inline (storage, sizes, strides) made each copy 80 bytes.
#[derive(Debug, Clone, Default)]
pub enum IValue {
    #[default]
    None,
    Bool(bool),
    Int(i64),
    Double(f64),
    /// Python's `complex` (TorchScript's `complex` type): two f64 parts, as c10::complex<double>.
    Complex(Complex128),
    Str(Arc<str>),
    /// Shared: copying a tensor value bumps a count, and every copy is the same tensor
    /// (see [`TensorCell`]).
    Tensor(Arc<TensorCell>),
    Device(Box<Device>),
    List(Arc<ListValue>),
    Tuple(Arc<TupleValue>),
    Dict(Arc<DictValue>),
    Object(Arc<Object>),
    /// A `Future[T]` from `torch.jit.fork`.
    Future(Arc<crate::future_value::FutureValue>),
    /// A `torch.Generator` (CPU): every handle draws from the same state.
    Generator(ferrojit_tensor::ops::random::SharedGenerator),
    /// The value of `prim::Uninitialized`: only ever on paths that raise or return early.
    Uninitialized,
}

// Keeps the interpreter's value copies cheap (see the enum's comment).
const _: () = assert!(std::mem::size_of::<IValue>() <= 24);

impl From<bool> for IValue {
    fn from(value: bool) -> IValue {
        IValue::Bool(value)
    }
}

impl From<i64> for IValue {
    fn from(value: i64) -> IValue {
        IValue::Int(value)
    }
}

impl From<f64> for IValue {
    fn from(value: f64) -> IValue {
        IValue::Double(value)
    }
}

impl From<&str> for IValue {
    fn from(value: &str) -> IValue {
        IValue::Str(Arc::from(value))
    }
}

impl From<String> for IValue {
    fn from(value: String) -> IValue {
        IValue::Str(Arc::from(value))
    }
}

impl From<Tensor> for IValue {
    fn from(value: Tensor) -> IValue {
        IValue::Tensor(Arc::new(TensorCell::new(Arc::new(value))))
    }
}

impl From<Arc<Tensor>> for IValue {
    fn from(value: Arc<Tensor>) -> IValue {
        IValue::Tensor(Arc::new(TensorCell::new(value)))
    }
}

impl From<Scalar> for IValue {
    fn from(value: Scalar) -> IValue {
        match value {
            Scalar::Bool(b) => IValue::Bool(b),
            Scalar::Int(i) => IValue::Int(i),
            Scalar::Float(f) => IValue::Double(f),
        }
    }
}

impl From<Device> for IValue {
    fn from(value: Device) -> IValue {
        IValue::Device(Box::new(value))
    }
}

impl IValue {
    /// A new list value with the given element type.
    pub fn list(element_type: Type, items: Vec<IValue>) -> IValue {
        IValue::List(ListValue::new(element_type, items))
    }

    pub fn int_list(items: &[i64]) -> IValue {
        IValue::list(Type::Int, items.iter().map(|&i| IValue::Int(i)).collect())
    }

    /// A new tensor handle whose `requires_grad` is as given (a parameter read from an
    /// archive).
    pub fn tensor_with_requires_grad(tensor: Tensor, requires_grad: bool) -> IValue {
        IValue::Tensor(Arc::new(TensorCell::with_autograd(
            Arc::new(tensor),
            AutogradMeta::new(requires_grad),
        )))
    }

    pub fn tuple(items: Vec<IValue>) -> IValue {
        IValue::Tuple(TupleValue::new(items))
    }

    pub fn string(text: &str) -> IValue {
        IValue::Str(Arc::from(text))
    }

    /// PyTorch's tag names (`Int`, `Double`, `GenericList`...), used in some error messages.
    pub fn tag_name(&self) -> &'static str {
        match self {
            IValue::None => "None",
            IValue::Bool(_) => "Bool",
            IValue::Int(_) => "Int",
            IValue::Double(_) => "Double",
            IValue::Complex(_) => "ComplexDouble",
            IValue::Str(_) => "String",
            IValue::Tensor(_) => "Tensor",
            IValue::Device(_) => "Device",
            IValue::List(_) => "GenericList",
            IValue::Tuple(_) => "Tuple",
            IValue::Dict(_) => "GenericDict",
            IValue::Object(_) => "Object",
            IValue::Future(_) => "Future",
            IValue::Generator(_) => "Generator",
            IValue::Uninitialized => "Uninitialized",
        }
    }

    /// The static type of this value (lists and dicts report their declared element types).
    pub fn type_of(&self) -> Type {
        match self {
            IValue::None => Type::NoneType,
            IValue::Bool(_) => Type::Bool,
            IValue::Int(_) => Type::Int,
            IValue::Double(_) => Type::Float,
            IValue::Complex(_) => Type::Complex,
            IValue::Str(_) => Type::Str,
            IValue::Tensor(_) => Type::Tensor,
            IValue::Device(_) => Type::Device,
            IValue::List(list) => Type::list(list.element_type().clone()),
            IValue::Tuple(tuple) => Type::Tuple(tuple.items.iter().map(IValue::type_of).collect()),
            IValue::Dict(dict) => Type::dict(dict.key_type().clone(), dict.value_type().clone()),
            IValue::Object(object) => Type::Class(object.class().clone()),
            IValue::Future(_) => Type::Future(Box::new(Type::Any)),
            IValue::Generator(_) => Type::Generator,
            IValue::Uninitialized => Type::Any,
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self, IValue::None)
    }

    fn mismatch(&self, expected: &str) -> RuntimeError {
        if matches!(self, IValue::Uninitialized) {
            return RuntimeError::Uninitialized(format!("expected {expected}"));
        }
        RuntimeError::type_mismatch(expected, self.type_of().to_string(), "")
    }

    pub fn to_int(&self) -> Result<i64> {
        match self {
            IValue::Int(value) => Ok(*value),
            other => Err(other.mismatch("int")),
        }
    }

    pub fn to_double(&self) -> Result<f64> {
        match self {
            IValue::Double(value) => Ok(*value),
            other => Err(other.mismatch("float")),
        }
    }

    /// A `complex` value (only a complex: ints and floats are converted by the operators
    /// that accept them, as PyTorch's `toComplexDouble` does for tagged complex only).
    pub fn to_complex(&self) -> Result<Complex128> {
        match self {
            IValue::Complex(value) => Ok(*value),
            other => Err(other.mismatch("complex")),
        }
    }

    pub fn to_bool(&self) -> Result<bool> {
        match self {
            IValue::Bool(value) => Ok(*value),
            other => Err(other.mismatch("bool")),
        }
    }

    pub fn to_str(&self) -> Result<&str> {
        match self {
            IValue::Str(value) => Ok(value),
            other => Err(other.mismatch("str")),
        }
    }

    /// The tensor as it is now (a snapshot: a later resize through another handle does not
    /// change it).
    pub fn to_tensor(&self) -> Result<Arc<Tensor>> {
        match self {
            IValue::Tensor(cell) => Ok(cell.get()),
            other => Err(other.mismatch("Tensor")),
        }
    }

    /// The tensor handle itself (the cell every copy of this value shares), for what belongs
    /// to the handle rather than to the tensor value: its autograd metadata.
    pub fn to_tensor_cell(&self) -> Result<&Arc<TensorCell>> {
        match self {
            IValue::Tensor(cell) => Ok(cell),
            other => Err(other.mismatch("Tensor")),
        }
    }

    /// The tensor, owned: moved out when this value held the only reference, else a copy
    /// of the handle (sharing the storage).
    pub fn into_tensor(self) -> Result<Tensor> {
        match self {
            IValue::Tensor(cell) => Ok(match Arc::try_unwrap(cell) {
                Ok(cell) => cell.into_tensor(),
                Err(shared) => Tensor::clone(&shared.get()),
            }),
            other => Err(other.mismatch("Tensor")),
        }
    }

    /// int, float or bool as a `Scalar` (TorchScript's `Scalar`/`number`).
    pub fn to_scalar(&self) -> Result<Scalar> {
        match self {
            IValue::Int(value) => Ok(Scalar::Int(*value)),
            IValue::Double(value) => Ok(Scalar::Float(*value)),
            IValue::Bool(value) => Ok(Scalar::Bool(*value)),
            other => Err(other.mismatch("Scalar")),
        }
    }

    pub fn to_device(&self) -> Result<&Device> {
        match self {
            IValue::Device(device) => Ok(device),
            other => Err(other.mismatch("Device")),
        }
    }

    pub fn to_list(&self) -> Result<&Arc<ListValue>> {
        match self {
            IValue::List(list) => Ok(list),
            other => Err(other.mismatch("List")),
        }
    }

    pub fn to_tuple(&self) -> Result<&Arc<TupleValue>> {
        match self {
            IValue::Tuple(tuple) => Ok(tuple),
            other => Err(other.mismatch("Tuple")),
        }
    }

    pub fn to_dict(&self) -> Result<&Arc<DictValue>> {
        match self {
            IValue::Dict(dict) => Ok(dict),
            other => Err(other.mismatch("Dict")),
        }
    }

    pub fn to_object(&self) -> Result<&Arc<Object>> {
        match self {
            IValue::Object(object) => Ok(object),
            other => Err(other.mismatch("Object")),
        }
    }

    /// `int[]` as a vector.
    pub fn to_int_vec(&self) -> Result<Vec<i64>> {
        self.to_list()?.read().iter().map(IValue::to_int).collect()
    }

    /// `float[]` as a vector.
    pub fn to_double_vec(&self) -> Result<Vec<f64>> {
        self.to_list()?
            .read()
            .iter()
            .map(IValue::to_double)
            .collect()
    }

    /// `Tensor[]` as a vector of handles.
    pub fn to_tensor_vec(&self) -> Result<Vec<Tensor>> {
        self.to_list()?
            .read()
            .iter()
            .map(|v| v.to_tensor().map(Arc::unwrap_or_clone))
            .collect()
    }

    /// `int?`: None or an int.
    pub fn to_optional_int(&self) -> Result<Option<i64>> {
        match self {
            IValue::None => Ok(None),
            other => other.to_int().map(Some),
        }
    }

    /// Python's `is`: identity for reference types (lists, dicts, objects, tuples, tensors),
    /// value equality for None, numbers, strings and devices.
    pub fn is_same_identity(&self, other: &IValue) -> bool {
        match (self, other) {
            (IValue::None, IValue::None) => true,
            (IValue::Tensor(a), IValue::Tensor(b)) => same_tensor(a, b),
            (IValue::List(a), IValue::List(b)) => Arc::ptr_eq(a, b),
            (IValue::Dict(a), IValue::Dict(b)) => Arc::ptr_eq(a, b),
            (IValue::Tuple(a), IValue::Tuple(b)) => Arc::ptr_eq(a, b),
            (IValue::Object(a), IValue::Object(b)) => Arc::ptr_eq(a, b),
            (IValue::Future(a), IValue::Future(b)) => Arc::ptr_eq(a, b),
            (IValue::Generator(a), IValue::Generator(b)) => Arc::ptr_eq(a, b),
            (IValue::Bool(a), IValue::Bool(b)) => a == b,
            (IValue::Int(a), IValue::Int(b)) => a == b,
            (IValue::Double(a), IValue::Double(b)) => a.to_bits() == b.to_bits(),
            (IValue::Complex(a), IValue::Complex(b)) => {
                a.re.to_bits() == b.re.to_bits() && a.im.to_bits() == b.im.to_bits()
            }
            (IValue::Str(a), IValue::Str(b)) => a == b,
            (IValue::Device(a), IValue::Device(b)) => a == b,
            (IValue::Uninitialized, IValue::Uninitialized) => true,
            _ => false,
        }
    }

    /// Equality of dict keys: str/int/float/bool by value (same kind only), tensors by identity.
    pub fn key_equals(&self, other: &IValue) -> bool {
        match (self, other) {
            (IValue::Tensor(a), IValue::Tensor(b)) => same_tensor(a, b),
            (IValue::Double(a), IValue::Double(b)) => a == b,
            (IValue::Complex(a), IValue::Complex(b)) => a == b,
            _ => self.is_same_identity(other),
        }
    }

    /// Python `==` on values, as PyTorch's IValue equality used by list/tuple/dict comparison
    /// and `in`: numbers of the same kind by value, containers element by element, tensors
    /// by identity first and otherwise by value (single-element tensors only, as
    /// `bool(tensor)` would require).
    pub fn equals(&self, other: &IValue) -> Result<bool> {
        Ok(match (self, other) {
            (IValue::None, IValue::None) => true,
            (IValue::Bool(a), IValue::Bool(b)) => a == b,
            (IValue::Int(a), IValue::Int(b)) => a == b,
            (IValue::Double(a), IValue::Double(b)) => a == b,
            (IValue::Complex(a), IValue::Complex(b)) => a == b,
            (IValue::Str(a), IValue::Str(b)) => a == b,
            (IValue::Device(a), IValue::Device(b)) => a == b,
            (IValue::Tensor(a), IValue::Tensor(b)) => {
                if same_tensor(a, b) {
                    true
                } else {
                    tensor_bool_equals(&a.get(), &b.get())?
                }
            }
            (IValue::List(a), IValue::List(b)) => {
                if Arc::ptr_eq(a, b) {
                    return Ok(true);
                }
                let left = a.to_vec();
                let right = b.to_vec();
                sequences_equal(&left, &right)?
            }
            (IValue::Tuple(a), IValue::Tuple(b)) => sequences_equal(&a.items, &b.items)?,
            (IValue::Dict(a), IValue::Dict(b)) => {
                if Arc::ptr_eq(a, b) {
                    return Ok(true);
                }
                let left = a.entries();
                if left.len() != b.len() {
                    return Ok(false);
                }
                for (key, value) in &left {
                    match b.get(key) {
                        Some(other_value) => {
                            if !value.equals(&other_value)? {
                                return Ok(false);
                            }
                        }
                        None => return Ok(false),
                    }
                }
                true
            }
            (IValue::Object(a), IValue::Object(b)) => Arc::ptr_eq(a, b),
            _ => false,
        })
    }

    /// Python-style `repr`: strings quoted with single quotes and floats as Python prints
    /// them (`1.0`, `2.5`, `1e+20`). TorchScript's own `print`/`str` use `Display` instead.
    pub fn python_repr(&self) -> String {
        let mut out = String::new();
        self.write_python_repr(&mut out);
        out
    }

    fn write_python_repr(&self, out: &mut String) {
        match self {
            IValue::Str(text) => out.push_str(&python_quote(text)),
            IValue::Double(value) => out.push_str(&python_float_repr(*value)),
            IValue::Complex(value) => out.push_str(&python_complex_repr(*value)),
            IValue::List(list) => {
                out.push('[');
                for (index, item) in list.read().iter().enumerate() {
                    if index > 0 {
                        out.push_str(", ");
                    }
                    item.write_python_repr(out);
                }
                out.push(']');
            }
            IValue::Tuple(tuple) => {
                out.push('(');
                for (index, item) in tuple.items.iter().enumerate() {
                    if index > 0 {
                        out.push_str(", ");
                    }
                    item.write_python_repr(out);
                }
                if tuple.items.len() == 1 {
                    out.push(',');
                }
                out.push(')');
            }
            IValue::Dict(dict) => {
                out.push('{');
                for (index, (key, value)) in dict.entries().iter().enumerate() {
                    if index > 0 {
                        out.push_str(", ");
                    }
                    key.write_python_repr(out);
                    out.push_str(": ");
                    value.write_python_repr(out);
                }
                out.push('}');
            }
            IValue::Device(device) => out.push_str(&format!("device(type='{}')", device)),
            other => out.push_str(&other.to_string()),
        }
    }
}

fn sequences_equal(left: &[IValue], right: &[IValue]) -> Result<bool> {
    if left.len() != right.len() {
        return Ok(false);
    }
    for (a, b) in left.iter().zip(right) {
        if !a.equals(b)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Tensor identity: one cell, or (for tensors an operator handed back unchanged, which PyTorch
/// returns as the same object) the same view of the same storage.
fn same_tensor(a: &Arc<TensorCell>, b: &Arc<TensorCell>) -> bool {
    Arc::ptr_eq(a, b) || a.get().is_same(&b.get())
}

fn tensor_bool_equals(a: &Tensor, b: &Tensor) -> Result<bool> {
    if a.numel() != 1 || b.numel() != 1 {
        return Err(RuntimeError::Other(
            "Boolean value of Tensor with more than one value is ambiguous".to_string(),
        ));
    }
    let left = a.item()?;
    let right = b.item()?;
    Ok(match (left, right) {
        (Scalar::Float(_), _) | (_, Scalar::Float(_)) => left.to_f64() == right.to_f64(),
        _ => left.to_i64() == right.to_i64(),
    })
}

/// Formats a float as TorchScript's `print`/`str` do (C++ `operator<<(IValue)`): integral
/// values as `1.`, others with 17 significant digits (`0.10000000000000001`).
pub fn format_torchscript_float(value: f64) -> String {
    if value.is_finite() && value == value.trunc() && value.abs() < 9.0e18 {
        return format!("{}.", value as i64);
    }
    format_g(value, 17)
}

/// A complex as TorchScript's `print`/`str` and the IR printer write it (c10's
/// `printComplex`): the real part as a float, then the sign of the imaginary part, its
/// magnitude and `j` (`1.+2.j`, `0.5-0.25j`). A NaN imaginary part is not `>= 0`, so it
/// prints with `-`, as c10 does.
pub fn format_torchscript_complex(value: Complex128) -> String {
    let sign = if value.im >= 0.0 { '+' } else { '-' };
    format!(
        "{}{sign}{}j",
        format_torchscript_float(value.re),
        format_torchscript_float(value.im.abs())
    )
}

/// Python's `repr(complex)`: `(1+2j)`, `2j` when the real part is +0, parts in `repr(float)`
/// form with a `.0` dropped (`(1.5-2j)`).
pub fn python_complex_repr(value: Complex128) -> String {
    fn part(value: f64) -> String {
        let text = python_float_repr(value);
        text.strip_suffix(".0").map(str::to_string).unwrap_or(text)
    }
    if value.re == 0.0 && value.re.is_sign_positive() {
        return format!("{}j", part(value.im));
    }
    let sign = if value.im.is_sign_negative() && !value.im.is_nan() {
        "-"
    } else {
        "+"
    };
    format!("({}{sign}{}j)", part(value.re), part(value.im.abs()))
}

/// Python's `repr(float)`: shortest round-trip digits, scientific outside [1e-4, 1e16).
pub fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "2.5e0", "-1e20".
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exponent) {
        let point = exponent + 1; // position of the decimal point within the digits
        if point <= 0 {
            let zeros = "0".repeat((-point) as usize);
            format!("{sign}0.{zeros}{digits}")
        } else if point as usize >= digits.len() {
            let zeros = "0".repeat(point as usize - digits.len());
            format!("{sign}{digits}{zeros}.0")
        } else {
            let (whole, fraction) = digits.split_at(point as usize);
            format!("{sign}{whole}.{fraction}")
        }
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exponent_sign}{:02}", exponent.abs())
    }
}

/// Python's `repr(str)`: single quotes unless the text contains a single quote and no double.
pub fn python_quote(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// TorchScript's `print`/`str` rendering (PyTorch's C++ `operator<<` on IValue): floats as
/// `1.`/`2.5`, strings unquoted even inside containers, `(1,)` for one-element tuples.
impl fmt::Display for IValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IValue::None => write!(f, "None"),
            IValue::Bool(value) => write!(f, "{}", if *value { "True" } else { "False" }),
            IValue::Int(value) => write!(f, "{value}"),
            IValue::Double(value) => write!(f, "{}", format_torchscript_float(*value)),
            IValue::Complex(value) => write!(f, "{}", format_torchscript_complex(*value)),
            IValue::Str(text) => write!(f, "{text}"),
            IValue::Tensor(cell) => write!(
                f,
                "{}",
                cell.get().display_with_requires_grad(cell.requires_grad())
            ),
            IValue::Device(device) => write!(f, "{device}"),
            IValue::List(list) => {
                write!(f, "[")?;
                for (index, item) in list.read().iter().enumerate() {
                    if index > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{item}")?;
                }
                write!(f, "]")
            }
            IValue::Tuple(tuple) => {
                write!(f, "(")?;
                for (index, item) in tuple.items.iter().enumerate() {
                    if index > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{item}")?;
                }
                if tuple.items.len() == 1 {
                    write!(f, ",")?;
                }
                write!(f, ")")
            }
            IValue::Dict(dict) => {
                write!(f, "{{")?;
                for (index, (key, value)) in dict.entries().iter().enumerate() {
                    if index > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{key}: {value}")?;
                }
                write!(f, "}}")
            }
            IValue::Object(object) => write!(
                f,
                "<{} object at {:p}>",
                object.class().qualified_name(),
                Arc::as_ptr(object)
            ),
            IValue::Future(future) => write!(f, "<Future at {:p}>", Arc::as_ptr(future)),
            IValue::Generator(generator) => {
                write!(
                    f,
                    "<torch._C.Generator object at {:p}>",
                    Arc::as_ptr(generator)
                )
            }
            IValue::Uninitialized => write!(f, "Uninitialized"),
        }
    }
}

/// Whether a value can be passed where `ty` is declared. Containers are checked by their
/// declared element types, or element by element when those differ.
pub fn value_matches_type(value: &IValue, ty: &Type) -> bool {
    match (ty, value) {
        (Type::Any | Type::Var(_), _) => true,
        (Type::Optional(_), IValue::None) => true,
        (Type::Optional(inner), other) => value_matches_type(other, inner),
        (Type::NoneType, IValue::None) => true,
        (Type::Tensor, IValue::Tensor(_)) => true,
        (Type::Int, IValue::Int(_)) => true,
        (Type::Float, IValue::Double(_)) => true,
        (Type::Bool, IValue::Bool(_)) => true,
        (Type::Str, IValue::Str(_)) => true,
        (Type::Device, IValue::Device(_)) => true,
        (Type::Complex, IValue::Complex(_)) => true,
        (
            Type::Number,
            IValue::Int(_) | IValue::Double(_) | IValue::Bool(_) | IValue::Complex(_),
        ) => true,
        (Type::List(element), IValue::List(list)) => {
            list.element_type() == element.as_ref()
                || list
                    .read()
                    .iter()
                    .all(|item| value_matches_type(item, element))
        }
        (Type::Tuple(elements), IValue::Tuple(tuple)) => {
            elements.len() == tuple.items.len()
                && elements
                    .iter()
                    .zip(&tuple.items)
                    .all(|(ty, item)| value_matches_type(item, ty))
        }
        (Type::Dict(key, value_type), IValue::Dict(dict)) => {
            (dict.key_type() == key.as_ref() && dict.value_type() == value_type.as_ref())
                || dict
                    .entries()
                    .iter()
                    .all(|(k, v)| value_matches_type(k, key) && value_matches_type(v, value_type))
        }
        (Type::Class(class), IValue::Object(object)) => {
            class.qualified_name() == object.class().qualified_name()
        }
        (Type::Enum(name), IValue::Object(object)) => name == object.class().qualified_name(),
        (Type::Union(members), _) => members.iter().any(|m| value_matches_type(value, m)),
        (Type::RefinedTensor(_), IValue::Tensor(_)) => true,
        (Type::AnyList, IValue::List(_)) => true,
        (Type::AnyTuple, IValue::Tuple(_)) => true,
        (Type::AnyClass, IValue::Object(_)) => true,
        // The element type is checked statically; the value may not exist yet.
        (Type::Future(_), IValue::Future(_)) => true,
        (Type::Generator, IValue::Generator(_)) => true,
        (Type::NamedTuple(named), IValue::Tuple(tuple)) => {
            named.fields.len() == tuple.items.len()
                && named
                    .fields
                    .iter()
                    .zip(&tuple.items)
                    .all(|((_, ty), item)| value_matches_type(item, ty))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_repr_matches_python() {
        assert_eq!(python_float_repr(1.0), "1.0");
        assert_eq!(python_float_repr(2.5), "2.5");
        assert_eq!(python_float_repr(0.1), "0.1");
        assert_eq!(python_float_repr(-3.0), "-3.0");
        assert_eq!(python_float_repr(1e16), "1e+16");
        assert_eq!(python_float_repr(1e15), "1000000000000000.0");
        assert_eq!(python_float_repr(0.0001), "0.0001");
        assert_eq!(python_float_repr(0.00001), "1e-05");
        assert_eq!(python_float_repr(123.456), "123.456");
        assert_eq!(python_float_repr(1.5e-7), "1.5e-07");
    }

    #[test]
    fn torchscript_float_printing() {
        assert_eq!(format_torchscript_float(1.0), "1.");
        assert_eq!(format_torchscript_float(-2.0), "-2.");
        assert_eq!(format_torchscript_float(2.5), "2.5");
        assert_eq!(format_torchscript_float(0.1), "0.10000000000000001");
    }

    #[test]
    fn containers_print_like_torchscript_and_python() {
        let list = IValue::list(Type::Str, vec![IValue::from("a"), IValue::from("b")]);
        assert_eq!(list.to_string(), "[a, b]");
        assert_eq!(list.python_repr(), "['a', 'b']");
        let tuple = IValue::tuple(vec![IValue::Int(1)]);
        assert_eq!(tuple.to_string(), "(1,)");
        let tuple = IValue::tuple(vec![IValue::Int(1), IValue::Double(2.0)]);
        assert_eq!(tuple.to_string(), "(1, 2.)");
        assert_eq!(tuple.python_repr(), "(1, 2.0)");
        assert_eq!(python_quote("it's"), "\"it's\"");
    }

    #[test]
    fn lists_are_shared_and_dicts_keep_order() {
        let list = IValue::int_list(&[1, 2]);
        let alias = list.clone();
        alias.to_list().unwrap().push(IValue::Int(3));
        assert_eq!(list.to_int_vec().unwrap(), vec![1, 2, 3]);
        assert!(list.is_same_identity(&alias));
        assert!(!list.is_same_identity(&IValue::int_list(&[1, 2, 3])));
        assert!(list.equals(&IValue::int_list(&[1, 2, 3])).unwrap());

        let dict = DictValue::new(Type::Str, Type::Int);
        dict.insert(IValue::from("b"), IValue::Int(1));
        dict.insert(IValue::from("a"), IValue::Int(2));
        dict.insert(IValue::from("b"), IValue::Int(3));
        let value = IValue::Dict(dict);
        assert_eq!(value.to_string(), "{b: 3, a: 2}");
        assert_eq!(value.python_repr(), "{'b': 3, 'a': 2}");
    }

    #[test]
    fn conversions_give_typed_errors() {
        let error = IValue::Int(3).to_tensor().unwrap_err();
        assert_eq!(error.to_string(), "expected Tensor but got int");
        assert!(matches!(
            IValue::Uninitialized.to_int(),
            Err(RuntimeError::Uninitialized(_))
        ));
    }
}
