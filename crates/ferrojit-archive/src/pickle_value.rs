//! `PickleValue`: the pure-data tree the unpickler builds and the pickler writes.
//!
//! Sharing is preserved: every container variant holds an `Rc`, and two memo
//! references to one container in the pickle give two `PickleValue`s holding the
//! *same* allocation (compare with [`PickleValue::ptr_id`]). Strings, bytes and
//! global names are `Rc` too, so cloning any `PickleValue` is O(1); that keeps a
//! pickle that BINGETs one huge string a million times from using a million copies.
//!
//! Nothing here recurses in proportion to the data's nesting: `Drop`, `Debug`,
//! [`PickleValue::structurally_equal`] and the graph checks all use explicit work
//! lists (or, for `Debug`, a fixed depth cut-off), so a value nested 10^6 deep can
//! be dropped and printed. Reference cycles (a list containing itself) would leak
//! under `Rc`; the unpickler rejects them and dismantles whatever it built, so
//! values it returns are always acyclic. Values built by hand with cycles leak.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

/// The result of a REDUCE that is not turned into a plain list/dict, e.g.
/// `torch._utils._rebuild_tensor_v2(...)` or `torch.device("cpu")`.
#[derive(Clone, Debug)]
pub struct ReduceData {
    /// The callable; for data the allowlist accepts this is always a `Global`.
    pub callable: PickleValue,
    /// The argument tuple; or, for a `__torch__` enum class applied to a member's value
    /// (see [`is_enum_class_call`]), that bare value.
    pub args: PickleValue,
    /// Set by a following BUILD.
    pub state: Option<PickleValue>,
}

/// The result of NEWOBJ (`cls.__new__(cls, *args)`), e.g. a TorchScript `__torch__.M` object.
#[derive(Clone, Debug)]
pub struct ObjectData {
    /// Module of the class, e.g. `__torch__.torch.nn.modules.linear`.
    pub module: Rc<str>,
    /// Class name, e.g. `Linear`.
    pub name: Rc<str>,
    /// The NEWOBJ argument tuple (always a `Tuple` when produced by the unpickler).
    pub args: PickleValue,
    /// Set by a following BUILD (TorchScript objects get their attribute dict here).
    pub state: Option<PickleValue>,
    /// Key/value pairs added by SETITEM(S) aimed at the object itself (dict subclasses).
    pub dict_items: Vec<(PickleValue, PickleValue)>,
}

/// A value in a pickle. See the module documentation for sharing and drop behaviour.
#[derive(Clone)]
pub enum PickleValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    Tuple(Rc<Vec<PickleValue>>),
    List(Rc<RefCell<Vec<PickleValue>>>),
    /// Insertion order kept; keys are not hashed or deduplicated.
    Dict(Rc<RefCell<Vec<(PickleValue, PickleValue)>>>),
    /// A `GLOBAL module\nname` reference that the allowlist accepted.
    /// Boxed so that every value slot stays 24 bytes (two `Rc<str>` inline would make 40).
    Global(Rc<GlobalName>),
    Reduce(Rc<RefCell<ReduceData>>),
    Object(Rc<RefCell<ObjectData>>),
    /// The result of BINPERSID: the persistent id itself, resolved later by the consumer.
    PersistentId(Rc<PickleValue>),
}

/// The `module` and `name` of a `GLOBAL` opcode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalName {
    pub module: Rc<str>,
    pub name: Rc<str>,
}

impl PickleValue {
    /// Builds a `Str`.
    pub fn str(text: &str) -> PickleValue {
        PickleValue::Str(Rc::from(text))
    }

    /// Builds a `Bytes`.
    pub fn bytes(data: &[u8]) -> PickleValue {
        PickleValue::Bytes(Rc::from(data))
    }

    /// Builds a `Tuple` from its items.
    pub fn tuple(items: Vec<PickleValue>) -> PickleValue {
        PickleValue::Tuple(Rc::new(items))
    }

    /// Builds a fresh `List`.
    pub fn list(items: Vec<PickleValue>) -> PickleValue {
        PickleValue::List(Rc::new(RefCell::new(items)))
    }

    /// Builds a fresh `Dict`.
    pub fn dict(items: Vec<(PickleValue, PickleValue)>) -> PickleValue {
        PickleValue::Dict(Rc::new(RefCell::new(items)))
    }

    /// Builds a `Global`.
    pub fn global(module: &str, name: &str) -> PickleValue {
        PickleValue::Global(Rc::new(GlobalName {
            module: Rc::from(module),
            name: Rc::from(name),
        }))
    }

    /// Builds a fresh `Reduce` without state.
    /// `module.name` applied to one bare value (no argument tuple): how PyTorch pickles an
    /// enum member (`GLOBAL '__torch__ Color'`, the member's value, REDUCE).
    pub fn enum_member(module: &str, name: &str, value: PickleValue) -> PickleValue {
        PickleValue::Reduce(Rc::new(RefCell::new(ReduceData {
            callable: PickleValue::global(module, name),
            args: value,
            state: None,
        })))
    }

    pub fn reduce(callable: PickleValue, args: Vec<PickleValue>) -> PickleValue {
        PickleValue::Reduce(Rc::new(RefCell::new(ReduceData {
            callable,
            args: PickleValue::tuple(args),
            state: None,
        })))
    }

    /// Builds a fresh `Object` without state or items.
    pub fn object(module: &str, name: &str, args: Vec<PickleValue>) -> PickleValue {
        PickleValue::Object(Rc::new(RefCell::new(ObjectData {
            module: Rc::from(module),
            name: Rc::from(name),
            args: PickleValue::tuple(args),
            state: None,
            dict_items: Vec::new(),
        })))
    }

    /// Builds a `PersistentId` around `pid`.
    pub fn persistent_id(pid: PickleValue) -> PickleValue {
        PickleValue::PersistentId(Rc::new(pid))
    }

    /// The address of the shared allocation, for the variants that have one
    /// (tuple, list, dict, reduce, object, persistent id). Two values with the same
    /// `ptr_id` are the same object in the pickle's memo graph.
    pub fn ptr_id(&self) -> Option<usize> {
        match self {
            PickleValue::Tuple(rc) => Some(Rc::as_ptr(rc) as *const u8 as usize),
            PickleValue::List(rc) => Some(Rc::as_ptr(rc) as *const u8 as usize),
            PickleValue::Dict(rc) => Some(Rc::as_ptr(rc) as *const u8 as usize),
            PickleValue::Reduce(rc) => Some(Rc::as_ptr(rc) as *const u8 as usize),
            PickleValue::Object(rc) => Some(Rc::as_ptr(rc) as *const u8 as usize),
            PickleValue::PersistentId(rc) => Some(Rc::as_ptr(rc) as *const u8 as usize),
            _ => None,
        }
    }

    /// A short name of the variant, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            PickleValue::None => "None",
            PickleValue::Bool(_) => "bool",
            PickleValue::Int(_) => "int",
            PickleValue::Float(_) => "float",
            PickleValue::Str(_) => "str",
            PickleValue::Bytes(_) => "bytes",
            PickleValue::Tuple(_) => "tuple",
            PickleValue::List(_) => "list",
            PickleValue::Dict(_) => "dict",
            PickleValue::Global(_) => "global",
            PickleValue::Reduce(_) => "reduce result",
            PickleValue::Object(_) => "object",
            PickleValue::PersistentId(_) => "persistent id",
        }
    }

    /// The text of a `Str`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PickleValue::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The value of an `Int`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            PickleValue::Int(value) => Some(*value),
            _ => None,
        }
    }

    /// The items of a `Tuple`.
    pub fn as_tuple(&self) -> Option<&[PickleValue]> {
        match self {
            PickleValue::Tuple(items) => Some(items.as_slice()),
            _ => None,
        }
    }

    /// `(module, name)` of a `Global`.
    pub fn as_global(&self) -> Option<(&str, &str)> {
        match self {
            PickleValue::Global(global) => Some((&global.module, &global.name)),
            _ => None,
        }
    }

    /// True for a `Global` naming exactly `module.name`.
    pub fn is_global(&self, module: &str, name: &str) -> bool {
        self.as_global() == Some((module, name))
    }

    /// The children that are containers themselves (have a [`PickleValue::ptr_id`]): the
    /// only ones that can make a cycle or deepen nesting.
    fn container_children(&self) -> Vec<PickleValue> {
        let mut children = Vec::new();
        self.visit_children(|child| {
            if child.ptr_id().is_some() {
                children.push(child.clone());
            }
        });
        children
    }

    /// Clones (O(1) each) the direct children of this value, in pickle order.
    pub fn children(&self) -> Vec<PickleValue> {
        let mut children = Vec::new();
        self.visit_children(|child| children.push(child.clone()));
        children
    }

    /// Calls `visit` on each direct child, in [`PickleValue::children`]'s order.
    fn visit_children(&self, mut visit: impl FnMut(&PickleValue)) {
        match self {
            PickleValue::Tuple(items) => items.iter().for_each(visit),
            PickleValue::List(items) => items.borrow().iter().for_each(visit),
            PickleValue::Dict(items) => {
                for (key, value) in items.borrow().iter() {
                    visit(key);
                    visit(value);
                }
            }
            PickleValue::Reduce(data) => {
                let data = data.borrow();
                visit(&data.callable);
                visit(&data.args);
                data.state.iter().for_each(visit);
            }
            PickleValue::Object(data) => {
                let data = data.borrow();
                visit(&data.args);
                data.state.iter().for_each(&mut visit);
                for (key, value) in &data.dict_items {
                    visit(key);
                    visit(value);
                }
            }
            PickleValue::PersistentId(pid) => visit(pid),
            _ => {}
        }
    }

    /// Compares two trees by value (not by pointer), without recursion. Shared
    /// sub-objects are compared once per pair of allocations, so this is linear in
    /// the size of the two graphs and terminates on cycles. Floats compare bitwise
    /// equal or `==` (so NaN equals the same NaN bits).
    pub fn structurally_equal(&self, other: &PickleValue) -> bool {
        let mut seen_pairs: HashSet<(usize, usize)> = HashSet::new();
        let mut pending: Vec<(PickleValue, PickleValue)> = vec![(self.clone(), other.clone())];
        while let Some((left, right)) = pending.pop() {
            if let (Some(left_id), Some(right_id)) = (left.ptr_id(), right.ptr_id()) {
                if !seen_pairs.insert((left_id, right_id)) {
                    continue;
                }
            }
            let same_shell = match (&left, &right) {
                (PickleValue::None, PickleValue::None) => true,
                (PickleValue::Bool(a), PickleValue::Bool(b)) => a == b,
                (PickleValue::Int(a), PickleValue::Int(b)) => a == b,
                (PickleValue::Float(a), PickleValue::Float(b)) => {
                    a == b || a.to_bits() == b.to_bits()
                }
                (PickleValue::Str(a), PickleValue::Str(b)) => a == b,
                (PickleValue::Bytes(a), PickleValue::Bytes(b)) => a == b,
                (PickleValue::Global(a), PickleValue::Global(b)) => a == b,
                (PickleValue::Tuple(_), PickleValue::Tuple(_))
                | (PickleValue::List(_), PickleValue::List(_))
                | (PickleValue::Dict(_), PickleValue::Dict(_))
                | (PickleValue::PersistentId(_), PickleValue::PersistentId(_)) => true,
                (PickleValue::Reduce(a), PickleValue::Reduce(b)) => {
                    a.borrow().state.is_some() == b.borrow().state.is_some()
                }
                (PickleValue::Object(a), PickleValue::Object(b)) => {
                    let (a, b) = (a.borrow(), b.borrow());
                    a.module == b.module
                        && a.name == b.name
                        && a.state.is_some() == b.state.is_some()
                        && a.dict_items.len() == b.dict_items.len()
                }
                _ => false,
            };
            if !same_shell {
                return false;
            }
            let (left_children, right_children) = (left.children(), right.children());
            if left_children.len() != right_children.len() {
                return false;
            }
            pending.extend(left_children.into_iter().zip(right_children));
        }
        true
    }
}

/// Moves the children of `value` into `out` if `value` is the last owner of its
/// allocation, leaving the allocation empty. Used by the iterative `Drop`.
fn take_children_if_unique(value: &mut PickleValue, out: &mut Vec<PickleValue>) {
    match value {
        PickleValue::Tuple(rc) => {
            if let Some(items) = Rc::get_mut(rc) {
                out.append(items);
            }
        }
        PickleValue::List(rc) => {
            if let Some(cell) = Rc::get_mut(rc) {
                out.append(cell.get_mut());
            }
        }
        PickleValue::Dict(rc) => {
            if let Some(cell) = Rc::get_mut(rc) {
                for (key, item) in cell.get_mut().drain(..) {
                    out.push(key);
                    out.push(item);
                }
            }
        }
        PickleValue::Reduce(rc) => {
            if let Some(cell) = Rc::get_mut(rc) {
                let data = cell.get_mut();
                out.push(std::mem::replace(&mut data.callable, PickleValue::None));
                out.push(std::mem::replace(&mut data.args, PickleValue::None));
                out.extend(data.state.take());
            }
        }
        PickleValue::Object(rc) => {
            if let Some(cell) = Rc::get_mut(rc) {
                let data = cell.get_mut();
                out.push(std::mem::replace(&mut data.args, PickleValue::None));
                out.extend(data.state.take());
                for (key, item) in data.dict_items.drain(..) {
                    out.push(key);
                    out.push(item);
                }
            }
        }
        PickleValue::PersistentId(rc) => {
            if let Some(pid) = Rc::get_mut(rc) {
                out.push(std::mem::replace(pid, PickleValue::None));
            }
        }
        _ => {}
    }
}

impl Drop for PickleValue {
    // Iterative so that dropping a value nested 10^6 deep cannot overflow the stack:
    // children of uniquely owned containers are moved to a work list before the
    // (now empty) container itself is freed.
    fn drop(&mut self) {
        let mut pending = Vec::new();
        take_children_if_unique(self, &mut pending);
        while let Some(mut item) = pending.pop() {
            take_children_if_unique(&mut item, &mut pending);
        }
    }
}

/// Empties every container reachable from `roots`. Used on error paths so that
/// reference cycles built from a hostile pickle are broken and freed, not leaked.
pub(crate) fn dismantle(roots: Vec<PickleValue>) {
    let mut seen: HashSet<usize> = HashSet::new();
    let mut pending = roots;
    while let Some(value) = pending.pop() {
        let Some(id) = value.ptr_id() else { continue };
        if !seen.insert(id) {
            continue;
        }
        match &value {
            PickleValue::List(rc) => pending.append(&mut rc.borrow_mut()),
            PickleValue::Dict(rc) => {
                for (key, item) in rc.borrow_mut().drain(..) {
                    pending.push(key);
                    pending.push(item);
                }
            }
            PickleValue::Reduce(rc) => {
                let mut data = rc.borrow_mut();
                pending.push(std::mem::replace(&mut data.callable, PickleValue::None));
                pending.push(std::mem::replace(&mut data.args, PickleValue::None));
                pending.extend(data.state.take());
            }
            PickleValue::Object(rc) => {
                let mut data = rc.borrow_mut();
                pending.push(std::mem::replace(&mut data.args, PickleValue::None));
                pending.extend(data.state.take());
                for (key, item) in data.dict_items.drain(..) {
                    pending.push(key);
                    pending.push(item);
                }
            }
            // Tuples and persistent ids are immutable: a cycle always passes through a
            // mutable container above, which is emptied; here we only walk through.
            _ => pending.extend(value.children()),
        }
    }
}

/// Why a value graph failed [`check_graph`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GraphProblem {
    Cycle,
    TooDeep,
}

/// Hashes allocation addresses (the keys of [`check_graph`]'s table), which are neither
/// chosen by the file nor need protection from collisions it could force: SipHash's
/// cost was a tenth of loading a model. The multiply spreads the aligned (low-zero) bits,
/// and folding the high half down feeds the table's bucket bits.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        let product = value.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = product ^ (product >> 32);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

/// Checks that the graphs under `roots` are acyclic and that no chain of nested
/// containers is longer than `max_depth`. Each allocation is visited once (its
/// height is memoized), so shared sub-trees do not cause exponential work.
pub(crate) fn check_graph(roots: &[PickleValue], max_depth: usize) -> Result<(), GraphProblem> {
    // None: on the current path (in progress); Some(h): finished with height h.
    let mut heights: HashMap<usize, Option<usize>, BuildHasherDefault<AddressHasher>> =
        HashMap::default();
    struct Frame {
        id: usize,
        children: Vec<PickleValue>,
        next: usize,
        height: usize,
    }
    for root in roots {
        let Some(root_id) = root.ptr_id() else {
            continue;
        };
        if heights.contains_key(&root_id) {
            continue;
        }
        heights.insert(root_id, None);
        let mut path = vec![Frame {
            id: root_id,
            children: root.container_children(),
            next: 0,
            height: 1,
        }];
        while let Some(frame) = path.last_mut() {
            if frame.next < frame.children.len() {
                let child = frame.children[frame.next].clone();
                frame.next += 1;
                let Some(child_id) = child.ptr_id() else {
                    continue;
                };
                match heights.get(&child_id) {
                    Some(None) => return Err(GraphProblem::Cycle),
                    Some(Some(child_height)) => {
                        frame.height = frame.height.max(child_height + 1);
                    }
                    None => {
                        if path.len() >= max_depth {
                            return Err(GraphProblem::TooDeep);
                        }
                        heights.insert(child_id, None);
                        path.push(Frame {
                            id: child_id,
                            children: child.container_children(),
                            next: 0,
                            height: 1,
                        });
                    }
                }
            } else {
                let (id, height) = (frame.id, frame.height);
                path.pop();
                if height > max_depth {
                    return Err(GraphProblem::TooDeep);
                }
                heights.insert(id, Some(height));
                if let Some(parent) = path.last_mut() {
                    parent.height = parent.height.max(height + 1);
                }
            }
        }
    }
    Ok(())
}

/// Nesting beyond which `Debug` prints `...` instead of recursing further.
const DEBUG_MAX_DEPTH: usize = 64;

struct DebugPrinter {
    printed: HashSet<usize>,
}

impl DebugPrinter {
    fn write(
        &mut self,
        value: &PickleValue,
        depth: usize,
        f: &mut fmt::Formatter<'_>,
    ) -> fmt::Result {
        if let Some(id) = value.ptr_id() {
            // Shared allocations are printed once; later occurrences are references,
            // which keeps output linear in the graph size and terminates on cycles.
            if !self.printed.insert(id) {
                return write!(f, "@{id:x}");
            }
            if depth >= DEBUG_MAX_DEPTH {
                return write!(f, "...");
            }
        }
        match value {
            PickleValue::None => write!(f, "None"),
            PickleValue::Bool(v) => write!(f, "{}", if *v { "True" } else { "False" }),
            PickleValue::Int(v) => write!(f, "{v}"),
            PickleValue::Float(v) => write!(f, "{v:?}"),
            PickleValue::Str(v) => write!(f, "{:?}", &**v),
            PickleValue::Bytes(v) => write!(f, "b{:?}", String::from_utf8_lossy(v)),
            PickleValue::Global(global) => write!(f, "{}.{}", global.module, global.name),
            PickleValue::Tuple(items) => {
                write!(f, "(")?;
                self.write_seq(items, depth, f)?;
                write!(f, ")")
            }
            PickleValue::List(items) => {
                write!(f, "[")?;
                self.write_seq(&items.borrow(), depth, f)?;
                write!(f, "]")
            }
            PickleValue::Dict(items) => {
                write!(f, "{{")?;
                self.write_pairs(&items.borrow(), depth, f)?;
                write!(f, "}}")
            }
            PickleValue::Reduce(data) => {
                let data = data.borrow();
                self.write(&data.callable, depth + 1, f)?;
                self.write(&data.args, depth + 1, f)?;
                if let Some(state) = &data.state {
                    write!(f, ".__setstate__(")?;
                    self.write(state, depth + 1, f)?;
                    write!(f, ")")?;
                }
                Ok(())
            }
            PickleValue::Object(data) => {
                let data = data.borrow();
                write!(f, "{}.{}.__new__", data.module, data.name)?;
                self.write(&data.args, depth + 1, f)?;
                if let Some(state) = &data.state {
                    write!(f, ".__setstate__(")?;
                    self.write(state, depth + 1, f)?;
                    write!(f, ")")?;
                }
                if !data.dict_items.is_empty() {
                    write!(f, ".items{{")?;
                    self.write_pairs(&data.dict_items, depth, f)?;
                    write!(f, "}}")?;
                }
                Ok(())
            }
            PickleValue::PersistentId(pid) => {
                write!(f, "persid(")?;
                self.write(pid, depth + 1, f)?;
                write!(f, ")")
            }
        }
    }

    fn write_seq(
        &mut self,
        items: &[PickleValue],
        depth: usize,
        f: &mut fmt::Formatter<'_>,
    ) -> fmt::Result {
        for (index, item) in items.iter().enumerate() {
            if index > 0 {
                write!(f, ", ")?;
            }
            self.write(item, depth + 1, f)?;
        }
        Ok(())
    }

    fn write_pairs(
        &mut self,
        items: &[(PickleValue, PickleValue)],
        depth: usize,
        f: &mut fmt::Formatter<'_>,
    ) -> fmt::Result {
        for (index, (key, item)) in items.iter().enumerate() {
            if index > 0 {
                write!(f, ", ")?;
            }
            self.write(key, depth + 1, f)?;
            write!(f, ": ")?;
            self.write(item, depth + 1, f)?;
        }
        Ok(())
    }
}

impl fmt::Debug for PickleValue {
    /// Python-like rendering. Each shared allocation is printed once (later
    /// occurrences print as `@address`) and nesting beyond 64 prints `...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        DebugPrinter {
            printed: HashSet::new(),
        }
        .write(self, 0, f)
    }
}

// The value budget charges slots at this size; a larger variant would make every stack,
// memo and container slot of every pickle cost more.
const _: () = assert!(std::mem::size_of::<PickleValue>() <= 24);

/// Whether a REDUCE of `callable` on `args` is PyTorch's enum form: a `__torch__` class
/// applied to a bare member value (a string, int or float) rather than to a tuple.
/// PyTorch's unpickler resolves the class to its enum type and looks the value up among
/// the members; the value is never a tuple, so the two forms cannot be confused.
pub fn is_enum_class_call(callable: &PickleValue, args: &PickleValue) -> bool {
    let Some((module, _)) = callable.as_global() else {
        return false;
    };
    let torch_class = module == "__torch__" || module.starts_with("__torch__.");
    torch_class
        && matches!(
            args,
            PickleValue::Str(_) | PickleValue::Int(_) | PickleValue::Float(_)
        )
}
