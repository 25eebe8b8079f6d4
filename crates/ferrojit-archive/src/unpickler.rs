//! A safe pickle VM for the protocol 2-5 subset that PyTorch writes.
//!
//! Safety properties (the input is untrusted):
//! - nothing is imported or called: GLOBAL only produces a [`PickleValue::Global`],
//!   and only for names the [`UnpicklerOptions::allowed_global`] allowlist accepts;
//! - every length is checked against the remaining input before anything is
//!   allocated, and the memo is a sparse `HashMap` (LONG_BINPUT 0xffffffff costs one entry);
//! - stack, mark and memo underflow, and APPEND/SETITEM/BUILD aimed at the wrong
//!   kind of value, are typed errors carrying the byte offset and opcode;
//! - the VM is a flat loop (no recursion); MARK nesting is capped at `max_depth`, and
//!   so is the nesting of containers as they are built (tracked per container, so a
//!   million nested TUPLE1s fail at level `max_depth`, not once they all exist); after STOP the
//!   value graph is checked (iteratively) for cycles and, exactly, for nesting deeper
//!   than `max_depth`. On any error, everything built so far is dismantled so
//!   reference cycles cannot leak;
//! - the memory the values take is estimated as they are built and capped
//!   ([`UnpicklerOptions::max_value_bytes`]): one-byte opcodes such as EMPTY_LIST or
//!   BINGET would otherwise turn a small (or DEFLATE-compressed) pickle into gigabytes.
//!
//! Special cases the later converters rely on:
//! - `collections.OrderedDict()` (REDUCE with empty args) becomes a plain `Dict`, so
//!   SETITEMS on it works; a BUILD on such a dict (e.g. a `state_dict`'s `_metadata`)
//!   is accepted and its state discarded, as ferrojit has no use for it;
//! - `_codecs.encode(text, "latin1")` (how Python protocol 2 writes `bytes`) becomes `Bytes`;
//! - GLOBAL module `__builtin__` is read as `builtins` (Python's `fix_imports`);
//! - everything else (`torch._utils._rebuild_tensor_v2`, `torch.device`, `__torch__.*`
//!   classes, `torch.jit._pickle.*` ...) stays a `Reduce` / `Object` for the consumer.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::rc::Rc;

use crate::error::PickleError;
use crate::pickle_value::{
    check_graph, dismantle, GraphProblem, ObjectData, PickleValue, ReduceData,
};
use std::cell::RefCell;

/// Decides whether `GLOBAL module name` may appear; called with the module and name.
pub type GlobalFilter = Box<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// Limits and the global allowlist for [`unpickle`].
pub struct UnpicklerOptions {
    /// Decides whether `GLOBAL module name` may appear. Called with the module and name.
    pub allowed_global: GlobalFilter,
    /// Maximum MARK nesting, and maximum nesting of containers in the result.
    pub max_depth: usize,
    /// Maximum number of distinct memo entries.
    pub max_memo_entries: usize,
    /// Cap on the estimated memory of the values built (containers, strings, stack and
    /// memo slots), in bytes. `None`: [`default_value_budget`] of the pickle's length.
    pub max_value_bytes: Option<usize>,
}

impl fmt::Debug for UnpicklerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnpicklerOptions")
            .field("max_depth", &self.max_depth)
            .field("max_memo_entries", &self.max_memo_entries)
            .field("max_value_bytes", &self.max_value_bytes)
            .finish_non_exhaustive()
    }
}

/// Default for [`UnpicklerOptions::max_depth`].
pub const DEFAULT_MAX_DEPTH: usize = 1000;
/// Default for [`UnpicklerOptions::max_memo_entries`].
pub const DEFAULT_MAX_MEMO_ENTRIES: usize = 1 << 24;
/// Fixed part of [`default_value_budget`].
pub const DEFAULT_VALUE_BUDGET_BASE: usize = 16 << 20;
/// Estimated bytes of values allowed per pickle byte in [`default_value_budget`].
pub const DEFAULT_VALUE_BYTES_PER_PICKLE_BYTE: usize = 32;

/// The default cap on the memory of the values a pickle of `pickle_len` bytes builds:
/// 16 MiB plus 32 bytes per pickle byte. Real pickles need up to about 22 bytes per
/// byte (a `torch.save` of many small tensors: memo entries, persistent-id tuples), so
/// they load with room to spare; a pickle of one-byte container opcodes (`]]]]…`)
/// needs about 120 bytes per byte and is refused early.
pub fn default_value_budget(pickle_len: usize) -> usize {
    DEFAULT_VALUE_BUDGET_BASE
        .saturating_add(pickle_len.saturating_mul(DEFAULT_VALUE_BYTES_PER_PICKLE_BYTE))
}

/// Longest accepted GLOBAL / INT text line (module or name), in bytes.
const MAX_LINE_LEN: usize = 64 * 1024;

/// Storage classes written inside persistent ids by `torch.save` and the TorchScript pickler.
const STORAGE_TYPES: &[&str] = &[
    "FloatStorage",
    "DoubleStorage",
    "HalfStorage",
    "BFloat16Storage",
    "LongStorage",
    "IntStorage",
    "ShortStorage",
    "CharStorage",
    "ByteStorage",
    "BoolStorage",
    "ComplexFloatStorage",
    "ComplexDoubleStorage",
];

/// dtype globals `torch.save` writes (e.g. as the dtype argument of `_rebuild_tensor_v3`).
const DTYPE_NAMES: &[&str] = &[
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
];

const TORCH_JIT_PICKLE_HELPERS: &[&str] = &[
    "restore_type_tag",
    "build_intlist",
    "build_tensorlist",
    "build_doublelist",
    "build_boollist",
    // Legacy (PyTorch ≤ 1.2) `attributes.pkl`: a tensor of `model.json`'s tensor table.
    "build_tensor_from_id",
];

fn is_storage_global(module: &str, name: &str) -> bool {
    (module == "torch" && STORAGE_TYPES.contains(&name))
        || (module == "torch.storage" && name == "UntypedStorage")
}

impl UnpicklerOptions {
    /// Options with the given allowlist and default limits.
    pub fn new(allowed_global: impl Fn(&str, &str) -> bool + Send + Sync + 'static) -> Self {
        UnpicklerOptions {
            allowed_global: Box::new(allowed_global),
            max_depth: DEFAULT_MAX_DEPTH,
            max_memo_entries: DEFAULT_MAX_MEMO_ENTRIES,
            max_value_bytes: None,
        }
    }

    /// For TorchScript archives (`data.pkl`, `constants.pkl` of `torch.jit.save`):
    /// `__torch__.*` classes, `torch._utils._rebuild_tensor_v2`, `torch._utils._rebuild_parameter`,
    /// `torch.jit._pickle.{restore_type_tag, build_intlist, build_tensorlist,
    /// build_doublelist, build_boollist, build_tensor_from_id}`, `collections.OrderedDict`, `torch.device`,
    /// `builtins.complex`, and the storage classes (`torch.FloatStorage` ...,
    /// `torch.storage.UntypedStorage`).
    pub fn torchscript_data() -> Self {
        UnpicklerOptions::new(|module, name| {
            module == "__torch__"
                || module.starts_with("__torch__.")
                || (module == "torch._utils"
                    && matches!(name, "_rebuild_tensor_v2" | "_rebuild_parameter"))
                || (module == "torch.jit._pickle" && TORCH_JIT_PICKLE_HELPERS.contains(&name))
                || (module == "collections" && name == "OrderedDict")
                || (module == "torch" && name == "device")
                || (module == "builtins" && name == "complex")
                || is_storage_global(module, name)
        })
    }

    /// For `torch.save` checkpoints, in the spirit of `torch.load(weights_only=True)`:
    /// `torch._utils.{_rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
    /// _rebuild_parameter_with_state}`, `collections.OrderedDict`, `torch.device`,
    /// `torch.Size`, dtype globals (`torch.float32` ...), storage classes, and
    /// `_codecs.encode` (Python's protocol-2 spelling of `bytes`), and `builtins.complex`
    /// (which `weights_only` allows too). No `__torch__`.
    pub fn torch_save() -> Self {
        UnpicklerOptions::new(|module, name| {
            (module == "torch._utils"
                && matches!(
                    name,
                    "_rebuild_tensor_v2"
                        | "_rebuild_tensor_v3"
                        | "_rebuild_parameter"
                        | "_rebuild_parameter_with_state"
                ))
                || (module == "collections" && name == "OrderedDict")
                || (module == "torch" && matches!(name, "device" | "Size"))
                || (module == "torch" && DTYPE_NAMES.contains(&name))
                || (module == "_codecs" && name == "encode")
                || (module == "builtins" && name == "complex")
                || is_storage_global(module, name)
        })
    }
}

impl Default for UnpicklerOptions {
    /// Default limits and an allowlist that rejects every global.
    fn default() -> Self {
        UnpicklerOptions::new(|_, _| false)
    }
}

/// Loads one pickle that must fill `bytes` exactly (trailing bytes after STOP are an error).
pub fn unpickle(bytes: &[u8], options: &UnpicklerOptions) -> Result<PickleValue, PickleError> {
    let (value, consumed) = unpickle_prefix(bytes, options)?;
    if consumed != bytes.len() {
        return Err(PickleError::TrailingBytes {
            offset: consumed,
            count: bytes.len() - consumed,
        });
    }
    Ok(value)
}

/// Loads the pickle at the start of `bytes`; returns it and the number of bytes up to
/// and including its STOP (for formats that concatenate pickles).
pub fn unpickle_prefix(
    bytes: &[u8],
    options: &UnpicklerOptions,
) -> Result<(PickleValue, usize), PickleError> {
    let mut machine = Machine {
        data: bytes,
        pos: 0,
        op_start: 0,
        op_name: "",
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        ordered_dicts: HashSet::new(),
        heights: HashMap::new(),
        value_bytes: 0,
        stack_high_water: 0,
        mutated: Vec::new(),
        mutated_ids: HashSet::new(),
        value_budget: options
            .max_value_bytes
            .unwrap_or_else(|| default_value_budget(bytes.len())),
        options,
    };
    let outcome = machine.run();
    let mut leftovers: Vec<PickleValue> = std::mem::take(&mut machine.stack);
    leftovers.extend(machine.memo.drain().map(|(_, value)| value));
    leftovers.append(&mut machine.mutated);
    match outcome {
        Ok(result) => {
            let mut roots = leftovers;
            roots.push(result);
            match check_graph(&roots, options.max_depth) {
                Ok(()) => {
                    let result = roots.pop().unwrap_or(PickleValue::None);
                    Ok((result, machine.pos))
                }
                Err(problem) => {
                    dismantle(roots);
                    Err(match problem {
                        GraphProblem::Cycle => PickleError::Cycle,
                        GraphProblem::TooDeep => PickleError::LimitExceeded {
                            offset: machine.pos.saturating_sub(1),
                            opcode: "STOP",
                            message: format!("containers nested deeper than {}", options.max_depth),
                        },
                    })
                }
            }
        }
        Err(error) => {
            dismantle(leftovers);
            Err(error)
        }
    }
}

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    /// Offset and name of the opcode being executed, for error messages.
    op_start: usize,
    op_name: &'static str,
    stack: Vec<PickleValue>,
    /// Stack lengths at each open MARK.
    marks: Vec<usize>,
    memo: HashMap<u32, PickleValue>,
    /// Dicts made by `collections.OrderedDict()`: BUILD on them is tolerated.
    ordered_dicts: HashSet<usize>,
    /// Nesting height of the containers built so far that hold other containers (absent:
    /// 1 for a container, 0 for anything else), keyed by `ptr_id`. A lower bound: a
    /// container mutated after it was nested does not raise its holders' heights, which
    /// the exact check after STOP covers. Every container the VM makes sets or clears its
    /// entry, so an address reused after a drop never inherits a stale height.
    heights: HashMap<usize, usize>,
    /// Estimated bytes of the values built so far (never decreased), and its cap.
    value_bytes: usize,
    /// Largest stack length so far (its slots are charged once).
    stack_high_water: usize,
    /// Every container APPEND, SETITEM(S) or BUILD changed, once each. A reference cycle
    /// can only be made by such a change, so these reach every cycle, including one in a
    /// value dropped from the stack (an error right after a pop, a POP, an overwritten
    /// memo entry): after the run they are dismantled on error, and checked on success.
    mutated: Vec<PickleValue>,
    mutated_ids: HashSet<usize>,
    value_budget: usize,
    options: &'a UnpicklerOptions,
}

/// Estimated heap bytes of one allocation besides its payload (allocator bookkeeping).
const ALLOCATION_OVERHEAD: usize = 16;
/// Bytes of one value slot (on the stack or in a container).
const SLOT: usize = std::mem::size_of::<PickleValue>();
/// Reference counts in front of every `Rc` allocation.
const RC_HEADER: usize = 2 * std::mem::size_of::<usize>();
/// Estimated bytes of one memo or height-table entry (slot, control byte, load factor).
const TABLE_ENTRY: usize = 48;

/// Estimated heap bytes a freshly built `value` owns itself (not counting values it
/// shares with others, which were charged when they were built).
fn own_bytes(value: &PickleValue) -> usize {
    let rc = RC_HEADER + ALLOCATION_OVERHEAD;
    match value {
        PickleValue::None | PickleValue::Bool(_) | PickleValue::Int(_) | PickleValue::Float(_) => 0,
        PickleValue::Str(text) => rc + text.len(),
        PickleValue::Bytes(bytes) => rc + bytes.len(),
        PickleValue::Tuple(items) => {
            2 * rc + std::mem::size_of::<Vec<PickleValue>>() + SLOT * items.len()
        }
        PickleValue::List(items) => {
            2 * rc + std::mem::size_of::<RefCell<Vec<PickleValue>>>() + SLOT * items.borrow().len()
        }
        PickleValue::Dict(items) => {
            2 * rc
                + std::mem::size_of::<RefCell<Vec<(PickleValue, PickleValue)>>>()
                + 2 * SLOT * items.borrow().len()
        }
        PickleValue::Global(global) => 3 * rc + global.module.len() + global.name.len(),
        PickleValue::Reduce(_) => rc + std::mem::size_of::<RefCell<ReduceData>>(),
        PickleValue::Object(_) => rc + std::mem::size_of::<RefCell<ObjectData>>(),
        PickleValue::PersistentId(_) => rc + SLOT,
    }
}

fn opcode_name(byte: u8) -> &'static str {
    match byte {
        0x80 => "PROTO",
        0x95 => "FRAME",
        b'.' => "STOP",
        b'(' => "MARK",
        b'0' => "POP",
        b'1' => "POP_MARK",
        b'2' => "DUP",
        b'N' => "NONE",
        0x88 => "NEWTRUE",
        0x89 => "NEWFALSE",
        b'I' => "INT",
        b'J' => "BININT",
        b'K' => "BININT1",
        b'M' => "BININT2",
        0x8a => "LONG1",
        0x8b => "LONG4",
        b'G' => "BINFLOAT",
        b'X' => "BINUNICODE",
        0x8c => "SHORT_BINUNICODE",
        0x8d => "BINUNICODE8",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'B' => "BINBYTES",
        b'C' => "SHORT_BINBYTES",
        0x8e => "BINBYTES8",
        b')' => "EMPTY_TUPLE",
        b't' => "TUPLE",
        0x85 => "TUPLE1",
        0x86 => "TUPLE2",
        0x87 => "TUPLE3",
        b']' => "EMPTY_LIST",
        b'l' => "LIST",
        b'a' => "APPEND",
        b'e' => "APPENDS",
        b'}' => "EMPTY_DICT",
        b'd' => "DICT",
        b's' => "SETITEM",
        b'u' => "SETITEMS",
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        0x81 => "NEWOBJ",
        b'b' => "BUILD",
        b'q' => "BINPUT",
        b'r' => "LONG_BINPUT",
        b'h' => "BINGET",
        b'j' => "LONG_BINGET",
        0x94 => "MEMOIZE",
        b'Q' => "BINPERSID",
        _ => "?",
    }
}

impl<'a> Machine<'a> {
    fn invalid(&self, message: impl Into<String>) -> PickleError {
        PickleError::Invalid {
            offset: self.op_start,
            opcode: self.op_name,
            message: message.into(),
        }
    }

    fn limit(&self, message: impl Into<String>) -> PickleError {
        PickleError::LimitExceeded {
            offset: self.op_start,
            opcode: self.op_name,
            message: message.into(),
        }
    }

    fn take(&mut self, count: u64) -> Result<&'a [u8], PickleError> {
        let available = self.data.len() - self.pos;
        if count > available as u64 {
            return Err(PickleError::Truncated {
                offset: self.op_start,
                opcode: self.op_name,
                needed: count,
                available,
            });
        }
        let start = self.pos;
        // `count <= available` so this fits in usize and stays in bounds.
        self.pos += count as usize;
        Ok(&self.data[start..self.pos])
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], PickleError> {
        let slice = self.take(N as u64)?;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    fn read_u8(&mut self) -> Result<u8, PickleError> {
        Ok(self.take_array::<1>()?[0])
    }

    fn read_u32(&mut self) -> Result<u32, PickleError> {
        Ok(u32::from_le_bytes(self.take_array()?))
    }

    fn read_u64(&mut self) -> Result<u64, PickleError> {
        Ok(u64::from_le_bytes(self.take_array()?))
    }

    /// Reads a `\n`-terminated line (without the newline) of at most `MAX_LINE_LEN` bytes.
    fn read_line(&mut self) -> Result<&'a str, PickleError> {
        let rest = &self.data[self.pos..];
        let search = &rest[..rest.len().min(MAX_LINE_LEN + 1)];
        let Some(length) = search.iter().position(|&byte| byte == b'\n') else {
            if rest.len() > MAX_LINE_LEN {
                return Err(self.limit(format!("text line longer than {MAX_LINE_LEN} bytes")));
            }
            return Err(PickleError::Truncated {
                offset: self.op_start,
                opcode: self.op_name,
                needed: rest.len() as u64 + 1,
                available: rest.len(),
            });
        };
        let line = &rest[..length];
        self.pos += length + 1;
        std::str::from_utf8(line).map_err(|_| self.invalid("text line is not valid UTF-8"))
    }

    fn read_text(&mut self, length: u64) -> Result<PickleValue, PickleError> {
        let raw = self.take(length)?;
        match std::str::from_utf8(raw) {
            Ok(text) => Ok(PickleValue::Str(Rc::from(text))),
            Err(_) => Err(self.invalid("string is not valid UTF-8")),
        }
    }

    fn read_bytes(&mut self, length: u64) -> Result<PickleValue, PickleError> {
        let raw = self.take(length)?;
        Ok(PickleValue::Bytes(Rc::from(raw)))
    }

    /// Adds `bytes` to the estimated memory of the values built; fails past the budget.
    fn charge(&mut self, bytes: usize) -> Result<(), PickleError> {
        self.value_bytes = self.value_bytes.saturating_add(bytes);
        if self.value_bytes > self.value_budget {
            return Err(self.limit(format!(
                "the values built need more than {} bytes of memory (the limit is \
                 max_pickle_value_bytes, `ferrojit run --max-pickle-memory`)",
                self.value_budget
            )));
        }
        Ok(())
    }

    /// Nesting height of a value: 0 for scalars, 1 for a container of scalars.
    fn height_of(&self, value: &PickleValue) -> usize {
        match value.ptr_id() {
            Some(id) => self.heights.get(&id).copied().unwrap_or(1),
            None => 0,
        }
    }

    /// The largest height among `items` (0 when there are none).
    fn max_height<'v>(&self, items: impl IntoIterator<Item = &'v PickleValue>) -> usize {
        items
            .into_iter()
            .map(|item| self.height_of(item))
            .max()
            .unwrap_or(0)
    }

    /// The largest height among the values `value` holds directly (0 when none).
    fn max_child_height(&self, value: &PickleValue) -> usize {
        match value {
            PickleValue::Tuple(items) => self.max_height(items.iter()),
            PickleValue::List(items) => self.max_height(items.borrow().iter()),
            PickleValue::Dict(items) => {
                self.max_height(items.borrow().iter().flat_map(|(key, item)| [key, item]))
            }
            PickleValue::Reduce(data) => {
                let data = data.borrow();
                self.max_height([&data.callable, &data.args].into_iter().chain(&data.state))
            }
            PickleValue::Object(data) => {
                let data = data.borrow();
                self.max_height(
                    std::iter::once(&data.args)
                        .chain(&data.state)
                        .chain(data.dict_items.iter().flat_map(|(key, item)| [key, item])),
                )
            }
            PickleValue::PersistentId(pid) => self.height_of(pid),
            _ => 0,
        }
    }

    /// Records a container's height, refusing nesting deeper than `max_depth`.
    fn set_height(&mut self, value: &PickleValue, height: usize) -> Result<(), PickleError> {
        if height > self.options.max_depth {
            return Err(self.limit(format!(
                "containers nested deeper than {}",
                self.options.max_depth
            )));
        }
        let Some(id) = value.ptr_id() else {
            return Ok(());
        };
        if height > 1 {
            if self.heights.insert(id, height).is_none() {
                self.charge(TABLE_ENTRY)?;
            }
        } else {
            self.heights.remove(&id);
        }
        Ok(())
    }

    /// After `items` were added to `target`: raises its height to hold them.
    fn raise_height<'v>(
        &mut self,
        target: &PickleValue,
        items: impl IntoIterator<Item = &'v PickleValue>,
    ) -> Result<(), PickleError> {
        let highest = self.max_height(items);
        let height = self.height_of(target).max(highest.saturating_add(1));
        self.set_height(target, height)
    }

    /// Remembers a container about to be changed (see `Machine::mutated`).
    fn note_mutation(&mut self, target: &PickleValue) -> Result<(), PickleError> {
        if let Some(id) = target.ptr_id() {
            if !self.mutated_ids.contains(&id) {
                self.charge(TABLE_ENTRY + SLOT)?;
                self.mutated_ids.insert(id);
                self.mutated.push(target.clone());
            }
        }
        Ok(())
    }

    /// Pushes a value the VM just built: records its height and charges its memory.
    fn push_new(&mut self, value: PickleValue) -> Result<(), PickleError> {
        if value.ptr_id().is_some() {
            let height = self.max_child_height(&value).saturating_add(1);
            self.set_height(&value, height)?;
        }
        self.charge(own_bytes(&value))?;
        self.push_shared(value)
    }

    /// Pushes a value, charging the stack's growth past its largest size so far.
    fn push_shared(&mut self, value: PickleValue) -> Result<(), PickleError> {
        if self.stack.len() >= self.stack_high_water {
            self.stack_high_water = self.stack.len() + 1;
            self.charge(SLOT)?;
        }
        self.stack.push(value);
        Ok(())
    }

    /// Lowest stack index the current MARK frame may touch.
    fn frame_floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self) -> Result<PickleValue, PickleError> {
        if self.stack.len() <= self.frame_floor() {
            return Err(self.invalid("stack underflow"));
        }
        self.stack
            .pop()
            .ok_or_else(|| self.invalid("stack underflow"))
    }

    fn top(&self) -> Result<&PickleValue, PickleError> {
        if self.stack.len() <= self.frame_floor() {
            return Err(self.invalid("stack underflow"));
        }
        self.stack
            .last()
            .ok_or_else(|| self.invalid("stack underflow"))
    }

    fn pop_mark(&mut self) -> Result<Vec<PickleValue>, PickleError> {
        let Some(mark) = self.marks.pop() else {
            return Err(self.invalid("no MARK to pop"));
        };
        if mark > self.stack.len() {
            return Err(self.invalid("MARK below the stack bottom"));
        }
        Ok(self.stack.split_off(mark))
    }

    fn memo_put(&mut self, index: u32) -> Result<(), PickleError> {
        let value = self.top()?.clone();
        if !self.memo.contains_key(&index) {
            if self.memo.len() >= self.options.max_memo_entries {
                return Err(self.limit(format!(
                    "more than {} memo entries",
                    self.options.max_memo_entries
                )));
            }
            self.charge(TABLE_ENTRY)?;
        }
        self.memo.insert(index, value);
        Ok(())
    }

    fn memo_get(&mut self, index: u32) -> Result<(), PickleError> {
        match self.memo.get(&index) {
            Some(value) => {
                let value = value.clone();
                self.push_shared(value)
            }
            None => Err(self.invalid(format!("memo has no entry {index}"))),
        }
    }

    fn make_global(&self, module: &str, name: &str) -> Result<PickleValue, PickleError> {
        let module = if module == "__builtin__" {
            "builtins"
        } else {
            module
        };
        if !(self.options.allowed_global)(module, name) {
            return Err(PickleError::DisallowedGlobal {
                module: module.to_string(),
                name: name.to_string(),
                offset: self.op_start,
            });
        }
        Ok(PickleValue::global(module, name))
    }

    fn tuple_args(&self, args: &PickleValue, what: &str) -> Result<(), PickleError> {
        if matches!(args, PickleValue::Tuple(_)) {
            Ok(())
        } else {
            Err(self.invalid(format!(
                "{what} arguments must be a tuple, got {}",
                args.kind_name()
            )))
        }
    }

    fn decode_long(&self, raw: &[u8]) -> Result<i64, PickleError> {
        // Little-endian two's complement; accept more than 8 bytes only when the
        // extra bytes are pure sign extension.
        let Some(&last) = raw.last() else {
            return Ok(0);
        };
        let negative = last & 0x80 != 0;
        let fill = if negative { 0xff } else { 0x00 };
        if raw.len() > 8 {
            let (low, high) = raw.split_at(8);
            let low_negative = low[7] & 0x80 != 0;
            if high.iter().any(|&byte| byte != fill) || low_negative != negative {
                return Err(self.invalid("integer does not fit in 64 bits"));
            }
        }
        let mut buffer = [fill; 8];
        let used = raw.len().min(8);
        buffer[..used].copy_from_slice(&raw[..used]);
        Ok(i64::from_le_bytes(buffer))
    }

    fn set_items(
        &mut self,
        target: &PickleValue,
        pairs: Vec<PickleValue>,
    ) -> Result<(), PickleError> {
        if !pairs.len().is_multiple_of(2) {
            return Err(self.invalid("odd number of items for SETITEMS"));
        }
        // The target's buffer grows by the pairs (allowing for doubling).
        self.charge(pairs.len().saturating_mul(SLOT + SLOT / 2))?;
        self.note_mutation(target)?;
        self.raise_height(target, &pairs)?;
        let mut iter = pairs.into_iter();
        let mut collected = Vec::new();
        while let (Some(key), Some(value)) = (iter.next(), iter.next()) {
            collected.push((key, value));
        }
        match target {
            PickleValue::Dict(items) => {
                items.borrow_mut().extend(collected);
                Ok(())
            }
            PickleValue::Object(data) => {
                data.borrow_mut().dict_items.extend(collected);
                Ok(())
            }
            other => Err(self.invalid(format!("cannot set items on {}", other.kind_name()))),
        }
    }

    fn append_items(
        &mut self,
        target: &PickleValue,
        items: Vec<PickleValue>,
    ) -> Result<(), PickleError> {
        match target {
            PickleValue::List(list) => {
                // Slots in the list, allowing for its buffer doubling as it grows.
                self.charge(items.len().saturating_mul(SLOT + SLOT / 2))?;
                self.note_mutation(target)?;
                self.raise_height(target, &items)?;
                list.borrow_mut().extend(items);
                Ok(())
            }
            other => Err(self.invalid(format!("cannot append to {}", other.kind_name()))),
        }
    }

    fn reduce(
        &mut self,
        callable: PickleValue,
        args: PickleValue,
    ) -> Result<PickleValue, PickleError> {
        if crate::pickle_value::is_enum_class_call(&callable, &args) {
            // An enum member (`__torch__.Color` applied to its value); the loader resolves it.
            return Ok(PickleValue::Reduce(Rc::new(RefCell::new(ReduceData {
                callable,
                args,
                state: None,
            }))));
        }
        self.tuple_args(&args, "REDUCE")?;
        let arg_items = args.as_tuple().unwrap_or(&[]);
        if callable.is_global("collections", "OrderedDict") && arg_items.is_empty() {
            let dict = PickleValue::dict(Vec::new());
            if let Some(id) = dict.ptr_id() {
                self.ordered_dicts.insert(id);
            }
            return Ok(dict);
        }
        if callable.is_global("_codecs", "encode") {
            if let [PickleValue::Str(text), PickleValue::Str(encoding)] = arg_items {
                if matches!(&**encoding, "latin1" | "latin-1") {
                    let mut bytes = Vec::with_capacity(text.len());
                    for character in text.chars() {
                        let code = u32::from(character);
                        let byte = u8::try_from(code).map_err(|_| {
                            self.invalid("latin1 text has a character above U+00FF")
                        })?;
                        bytes.push(byte);
                    }
                    return Ok(PickleValue::Bytes(Rc::from(bytes)));
                }
            }
        }
        Ok(PickleValue::Reduce(Rc::new(RefCell::new(ReduceData {
            callable,
            args,
            state: None,
        }))))
    }

    fn build(&mut self, state: PickleValue) -> Result<(), PickleError> {
        let target = self.top()?.clone();
        if matches!(target, PickleValue::Object(_) | PickleValue::Reduce(_)) {
            self.raise_height(&target, [&state])?;
            self.note_mutation(&target)?;
        }
        match &target {
            PickleValue::Object(data) => {
                let mut data = data.borrow_mut();
                if data.state.is_some() {
                    return Err(self.invalid("BUILD applied twice to one object"));
                }
                data.state = Some(state);
                Ok(())
            }
            PickleValue::Reduce(data) => {
                let mut data = data.borrow_mut();
                if data.state.is_some() {
                    return Err(self.invalid("BUILD applied twice to one object"));
                }
                data.state = Some(state);
                Ok(())
            }
            PickleValue::Dict(_)
                if target
                    .ptr_id()
                    .is_some_and(|id| self.ordered_dicts.contains(&id)) =>
            {
                // OrderedDict instance attributes (state_dict `_metadata`): not needed.
                Ok(())
            }
            other => Err(self.invalid(format!("cannot BUILD {}", other.kind_name()))),
        }
    }

    fn run(&mut self) -> Result<PickleValue, PickleError> {
        loop {
            self.op_start = self.pos;
            let Some(&opcode) = self.data.get(self.pos) else {
                return Err(PickleError::MissingStop { offset: self.pos });
            };
            self.pos += 1;
            self.op_name = opcode_name(opcode);
            match opcode {
                0x80 => {
                    let version = self.read_u8()?;
                    if version > 5 {
                        return Err(self.invalid(format!("unsupported protocol {version}")));
                    }
                }
                0x95 => {
                    let length = self.read_u64()?;
                    let available = self.data.len() - self.pos;
                    if length > available as u64 {
                        return Err(PickleError::Truncated {
                            offset: self.op_start,
                            opcode: self.op_name,
                            needed: length,
                            available,
                        });
                    }
                }
                b'.' => return self.pop(),
                b'(' => {
                    if self.marks.len() >= self.options.max_depth {
                        return Err(self.limit(format!(
                            "MARKs nested deeper than {}",
                            self.options.max_depth
                        )));
                    }
                    self.marks.push(self.stack.len());
                }
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let value = self.top()?.clone();
                    self.push_shared(value)?;
                }
                b'N' => self.push_new(PickleValue::None)?,
                0x88 => self.push_new(PickleValue::Bool(true))?,
                0x89 => self.push_new(PickleValue::Bool(false))?,
                b'I' => {
                    let line = self.read_line()?;
                    let value = match line {
                        "01" => PickleValue::Bool(true),
                        "00" => PickleValue::Bool(false),
                        text => PickleValue::Int(
                            text.parse::<i64>()
                                .map_err(|_| self.invalid(format!("bad INT text {text:?}")))?,
                        ),
                    };
                    self.push_new(value)?;
                }
                b'J' => {
                    let value = i32::from_le_bytes(self.take_array()?);
                    self.push_new(PickleValue::Int(i64::from(value)))?;
                }
                b'K' => {
                    let value = self.read_u8()?;
                    self.push_new(PickleValue::Int(i64::from(value)))?;
                }
                b'M' => {
                    let value = u16::from_le_bytes(self.take_array()?);
                    self.push_new(PickleValue::Int(i64::from(value)))?;
                }
                0x8a => {
                    let length = self.read_u8()?;
                    let raw = self.take(u64::from(length))?;
                    let value = self.decode_long(raw)?;
                    self.push_new(PickleValue::Int(value))?;
                }
                0x8b => {
                    let length = i32::from_le_bytes(self.take_array()?);
                    let length =
                        u64::try_from(length).map_err(|_| self.invalid("negative LONG4 length"))?;
                    let raw = self.take(length)?;
                    let value = self.decode_long(raw)?;
                    self.push_new(PickleValue::Int(value))?;
                }
                b'G' => {
                    let value = f64::from_be_bytes(self.take_array()?);
                    self.push_new(PickleValue::Float(value))?;
                }
                b'X' => {
                    let length = self.read_u32()?;
                    let value = self.read_text(u64::from(length))?;
                    self.push_new(value)?;
                }
                0x8c => {
                    let length = self.read_u8()?;
                    let value = self.read_text(u64::from(length))?;
                    self.push_new(value)?;
                }
                0x8d => {
                    let length = self.read_u64()?;
                    let value = self.read_text(length)?;
                    self.push_new(value)?;
                }
                b'T' | b'U' => {
                    let length = if opcode == b'T' {
                        let length = i32::from_le_bytes(self.take_array()?);
                        u64::try_from(length)
                            .map_err(|_| self.invalid("negative BINSTRING length"))?
                    } else {
                        u64::from(self.read_u8()?)
                    };
                    // Python 2 `str`: text when it is UTF-8, raw bytes otherwise.
                    let raw = self.take(length)?;
                    let value = match std::str::from_utf8(raw) {
                        Ok(text) => PickleValue::Str(Rc::from(text)),
                        Err(_) => PickleValue::Bytes(Rc::from(raw)),
                    };
                    self.push_new(value)?;
                }
                b'B' => {
                    let length = self.read_u32()?;
                    let value = self.read_bytes(u64::from(length))?;
                    self.push_new(value)?;
                }
                b'C' => {
                    let length = self.read_u8()?;
                    let value = self.read_bytes(u64::from(length))?;
                    self.push_new(value)?;
                }
                0x8e => {
                    let length = self.read_u64()?;
                    let value = self.read_bytes(length)?;
                    self.push_new(value)?;
                }
                b')' => self.push_new(PickleValue::tuple(Vec::new()))?,
                b't' => {
                    let items = self.pop_mark()?;
                    self.push_new(PickleValue::tuple(items))?;
                }
                0x85..=0x87 => {
                    let count = usize::from(opcode - 0x84);
                    let floor = self.frame_floor();
                    if self.stack.len() < floor + count {
                        return Err(self.invalid("stack underflow"));
                    }
                    let items = self.stack.split_off(self.stack.len() - count);
                    self.push_new(PickleValue::tuple(items))?;
                }
                b']' => self.push_new(PickleValue::list(Vec::new()))?,
                b'l' => {
                    let items = self.pop_mark()?;
                    self.push_new(PickleValue::list(items))?;
                }
                b'a' => {
                    let item = self.pop()?;
                    let target = self.top()?.clone();
                    self.append_items(&target, vec![item])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    let target = self.top()?.clone();
                    self.append_items(&target, items)?;
                }
                b'}' => self.push_new(PickleValue::dict(Vec::new()))?,
                b'd' => {
                    let items = self.pop_mark()?;
                    let dict = PickleValue::dict(Vec::new());
                    self.set_items(&dict, items)?;
                    self.push_new(dict)?;
                }
                b's' => {
                    let value = self.pop()?;
                    let key = self.pop()?;
                    let target = self.top()?.clone();
                    self.set_items(&target, vec![key, value])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    let target = self.top()?.clone();
                    self.set_items(&target, items)?;
                }
                b'c' => {
                    let module = self.read_line()?;
                    let name = self.read_line()?;
                    let global = self.make_global(module, name)?;
                    self.push_new(global)?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (Some(module), Some(name)) = (module.as_str(), name.as_str()) else {
                        return Err(self.invalid("STACK_GLOBAL needs two strings"));
                    };
                    let global = self.make_global(module, name)?;
                    self.push_new(global)?;
                }
                b'R' => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    let value = self.reduce(callable, args)?;
                    self.push_new(value)?;
                }
                0x81 => {
                    let args = self.pop()?;
                    let class = self.pop()?;
                    self.tuple_args(&args, "NEWOBJ")?;
                    let PickleValue::Global(global) = &class else {
                        return Err(self.invalid(format!(
                            "NEWOBJ class must be a global, got {}",
                            class.kind_name()
                        )));
                    };
                    let object = ObjectData {
                        module: global.module.clone(),
                        name: global.name.clone(),
                        args,
                        state: None,
                        dict_items: Vec::new(),
                    };
                    self.push_new(PickleValue::Object(Rc::new(RefCell::new(object))))?;
                }
                b'b' => {
                    let state = self.pop()?;
                    self.build(state)?;
                }
                b'q' => {
                    let index = self.read_u8()?;
                    self.memo_put(u32::from(index))?;
                }
                b'r' => {
                    let index = self.read_u32()?;
                    self.memo_put(index)?;
                }
                0x94 => {
                    let index = u32::try_from(self.memo.len())
                        .map_err(|_| self.limit("memo index overflow"))?;
                    self.memo_put(index)?;
                }
                b'h' => {
                    let index = self.read_u8()?;
                    self.memo_get(u32::from(index))?;
                }
                b'j' => {
                    let index = self.read_u32()?;
                    self.memo_get(index)?;
                }
                b'Q' => {
                    let pid = self.pop()?;
                    self.push_new(PickleValue::persistent_id(pid))?;
                }
                other => {
                    return Err(PickleError::UnknownOpcode {
                        byte: other,
                        offset: self.op_start,
                    })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.pkl` record of the committed fixtures (the adversarial ones excepted).
    fn fixture_pickles() -> Vec<(String, Vec<u8>)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut pending = vec![root];
        let mut out = Vec::new();
        while let Some(dir) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for path in entries.flatten().map(|entry| entry.path()) {
                if path.is_dir() {
                    if !path.ends_with("adversarial") {
                        pending.push(path);
                    }
                    continue;
                }
                if path.extension().is_none_or(|extension| extension != "pt") {
                    continue;
                }
                let Ok(archive) = crate::zip_archive::ArchiveReader::open(&path) else {
                    continue;
                };
                for name in archive.record_names() {
                    if name.ends_with(".pkl") {
                        let bytes = archive.read_record(name).unwrap();
                        out.push((format!("{}: {name}", path.display()), bytes));
                    }
                }
            }
        }
        out
    }

    /// The value budget leaves real pickles a wide margin: each fixture pickle that loads
    /// at all also loads with half its default budget.
    #[test]
    fn fixture_pickles_load_within_half_the_default_value_budget() {
        let pickles = fixture_pickles();
        assert!(pickles.len() > 100, "{} pickles", pickles.len());
        for (name, bytes) in &pickles {
            let options = UnpicklerOptions::new(|_, _| true);
            if unpickle(bytes, &options).is_err() {
                continue;
            }
            let half = UnpicklerOptions {
                max_value_bytes: Some(default_value_budget(bytes.len()) / 2),
                ..UnpicklerOptions::new(|_, _| true)
            };
            if let Err(error) = unpickle(bytes, &half) {
                panic!("{name}: {error}");
            }
        }
    }

    /// A million EMPTY_LISTs in 1 MB are refused by the budget, long before they exist.
    #[test]
    fn one_byte_containers_are_refused_by_the_value_budget() {
        let mut pickle = b"\x80\x02".to_vec();
        pickle.extend(std::iter::repeat_n(b']', 1_000_000));
        pickle.push(b'.');
        let error = unpickle(&pickle, &UnpicklerOptions::default()).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("bytes of memory"), "{message}");
        // Refused after about (16 MiB + 32 MB) / 120 bytes per list, not at the end.
        let PickleError::LimitExceeded { offset, .. } = error else {
            panic!("{message}");
        };
        assert!((300_000..600_000).contains(&offset), "{offset}");
    }

    /// BINGET of one list, repeated: each costs a stack slot, counted once per slot.
    #[test]
    fn repeated_memo_references_are_charged() {
        let mut pickle = b"\x80\x02]q\x00(".to_vec();
        for _ in 0..2_000_000 {
            pickle.extend_from_slice(b"h\x00");
        }
        pickle.extend_from_slice(b"t.");
        let options = UnpicklerOptions {
            max_value_bytes: Some(8 << 20),
            ..UnpicklerOptions::default()
        };
        let message = unpickle(&pickle, &options).unwrap_err().to_string();
        assert!(
            message.contains("more than 8388608 bytes of memory"),
            "{message}"
        );
    }

    /// Nesting is refused at the opcode that goes one level too deep, not after STOP.
    #[test]
    fn nesting_is_refused_as_it_is_built() {
        let mut pickle = b"\x80\x02)".to_vec();
        pickle.extend(std::iter::repeat_n(0x85u8, 100_000)); // TUPLE1, wrapping the last
        pickle.push(b'.');
        let options = UnpicklerOptions {
            max_depth: 50,
            ..UnpicklerOptions::default()
        };
        let error = unpickle(&pickle, &options).unwrap_err();
        // `)` makes a height-1 tuple at byte 2; the 50th TUPLE1 (byte 52) reaches 51.
        match &error {
            PickleError::LimitExceeded {
                offset,
                opcode,
                message,
            } => {
                assert_eq!((*offset, *opcode), (52, "TUPLE1"));
                assert_eq!(message, "containers nested deeper than 50");
            }
            other => panic!("{other}"),
        }
        // Exactly max_depth levels load.
        let mut pickle = b"\x80\x02)".to_vec();
        pickle.extend(std::iter::repeat_n(0x85u8, 49));
        pickle.push(b'.');
        assert!(unpickle(&pickle, &options).is_ok());
    }

    /// A list made to contain itself, then dropped from both the stack and the memo, is
    /// still found (through the record of mutated containers): refused as a cycle, and
    /// dismantled rather than leaked.
    #[test]
    fn cycles_dropped_from_stack_and_memo_are_still_found() {
        // EMPTY_LIST, BINPUT 0, BINGET 0, APPEND (the list holds itself), POP,
        // NONE, BINPUT 0 (the memo forgets it), STOP.
        let pickle = b"\x80\x02]q\x00h\x00a0Nq\x00.";
        let error = unpickle(pickle, &UnpicklerOptions::default()).unwrap_err();
        assert!(matches!(error, PickleError::Cycle), "{error}");
        // The same list dropped by an error right after it was popped (NEWOBJ's arguments
        // must be a tuple): the error is the NEWOBJ one.
        let pickle = b"\x80\x02cm\nn\n]q\x00h\x00a0h\x00Nq\x00\x81.";
        let options = UnpicklerOptions::new(|_, _| true);
        let message = unpickle(pickle, &options).unwrap_err().to_string();
        assert!(
            message.contains("NEWOBJ arguments must be a tuple"),
            "{message}"
        );
    }

    /// A list nested after it was memoized (the early estimate misses it) is still caught
    /// by the exact check after STOP.
    #[test]
    fn nesting_through_the_memo_is_caught_after_stop() {
        // Lists L0..L3 memoized, then L1 appended into L0, L2 into L1, L3 into L2: each
        // append sees an empty list, yet L0 ends 4 deep.
        let mut pickle = b"\x80\x02".to_vec();
        for index in 0..4u8 {
            pickle.extend_from_slice(&[b']', b'q', index, b'0']);
        }
        for index in 0..3u8 {
            pickle.extend_from_slice(&[b'h', index, b'h', index + 1, b'a', b'0']);
        }
        pickle.extend_from_slice(b"h\x00.");
        let options = UnpicklerOptions {
            max_depth: 3,
            ..UnpicklerOptions::default()
        };
        let message = unpickle(&pickle, &options).unwrap_err().to_string();
        assert!(message.contains("(STOP)"), "{message}");
        assert!(message.contains("nested deeper than 3"), "{message}");
        let options = UnpicklerOptions {
            max_depth: 4,
            ..UnpicklerOptions::default()
        };
        assert!(unpickle(&pickle, &options).is_ok());
    }
}
