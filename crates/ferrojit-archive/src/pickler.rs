//! Writes a [`PickleValue`] tree as a protocol-2 pickle readable by Python's
//! `pickle` / `torch.load` and by PyTorch's C++ unpickler.
//!
//! Layout follows CPython's protocol-2 pickler: `PROTO 2`, containers memoized with
//! BINPUT/LONG_BINPUT right after they are created, lists and dicts filled with
//! MARK ... APPENDS / SETITEMS in batches of 1000 (a batch of one uses APPEND /
//! SETITEM), tuples of up to 3 items via TUPLE1-3, ints as BININT1/BININT2/BININT
//! or LONG1, floats as big-endian BINFLOAT, strings as BINUNICODE (memoized).
//! Like PyTorch's C++ pickler, GLOBALs are memoized by name and a persistent id
//! result is memoized, so a storage shared by two tensors is written once.
//!
//! Any value reachable twice through the same `Rc` is written once and then
//! referenced with BINGET/LONG_BINGET. The writer is an explicit work-list loop,
//! so deep values do not recurse; output is a pure function of the input tree.
//! `bytes` are written as CPython's protocol 2 writes them,
//! `_codecs.encode(<latin-1 text>, "latin1")`, because `torch.load(weights_only=True)`
//! does not accept the protocol-3 BINBYTES opcodes.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::error::PickleError;
use crate::pickle_value::{GlobalName, PickleValue};

/// Items per APPENDS / SETITEMS batch, as in CPython. Like CPython's C pickler, a
/// container with exactly one item uses APPEND / SETITEM; otherwise every batch,
/// even a final batch of one, is MARK ... APPENDS / SETITEMS.
const BATCH_SIZE: usize = 1000;

enum Task {
    Value(PickleValue),
    Op(u8),
    /// Memoize the value just written under this identity key.
    Memoize(MemoKey),
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum MemoKey {
    /// A live allocation of the tree being written (the tree keeps it alive, so the
    /// address cannot be reused while pickling).
    Pointer(usize),
    Global(Rc<str>, Rc<str>),
    /// A temporary the pickler made itself (never looked up again).
    Anonymous(usize),
}

struct Pickler {
    out: Vec<u8>,
    memo: HashMap<MemoKey, u32>,
    /// Containers whose creation has started but which are not memoized yet;
    /// meeting one again means a cycle the pickle format cannot express here.
    in_progress: HashSet<usize>,
    tasks: Vec<Task>,
    /// The one "latin1" string used for every bytes value, so it is memoized once.
    latin1: PickleValue,
    anonymous_count: usize,
}

/// Serializes `value` as a protocol-2 pickle.
pub fn pickle(value: &PickleValue) -> Result<Vec<u8>, PickleError> {
    let mut pickler = Pickler {
        out: vec![0x80, 2],
        memo: HashMap::new(),
        in_progress: HashSet::new(),
        tasks: vec![Task::Value(value.clone())],
        latin1: PickleValue::str("latin1"),
        anonymous_count: 0,
    };
    while let Some(task) = pickler.tasks.pop() {
        match task {
            Task::Value(value) => pickler.write_value(&value)?,
            Task::Op(opcode) => pickler.out.push(opcode),
            Task::Memoize(key) => pickler.memoize(key)?,
        }
    }
    pickler.out.push(b'.');
    Ok(pickler.out)
}

fn str_pointer(text: &Rc<str>) -> usize {
    Rc::as_ptr(text) as *const u8 as usize
}

fn bytes_pointer(data: &Rc<[u8]>) -> usize {
    Rc::as_ptr(data) as *const u8 as usize
}

impl Pickler {
    fn memoize(&mut self, key: MemoKey) -> Result<(), PickleError> {
        let index = u32::try_from(self.memo.len())
            .map_err(|_| PickleError::Unpicklable("more than 2^32 memo entries".into()))?;
        if let Ok(short) = u8::try_from(index) {
            self.out.extend_from_slice(&[b'q', short]);
        } else {
            self.out.push(b'r');
            self.out.extend_from_slice(&index.to_le_bytes());
        }
        self.memo.insert(key, index);
        Ok(())
    }

    /// Emits a BINGET for `key` if it was memoized; returns whether it did.
    fn try_get(&mut self, key: &MemoKey) -> bool {
        let Some(&index) = self.memo.get(key) else {
            return false;
        };
        if let Ok(short) = u8::try_from(index) {
            self.out.extend_from_slice(&[b'h', short]);
        } else {
            self.out.push(b'j');
            self.out.extend_from_slice(&index.to_le_bytes());
        }
        true
    }

    fn anonymous_key(&mut self) -> MemoKey {
        self.anonymous_count += 1;
        MemoKey::Anonymous(self.anonymous_count)
    }

    fn start_container(&mut self, pointer: usize, kind: &str) -> Result<(), PickleError> {
        if !self.in_progress.insert(pointer) {
            return Err(PickleError::Unpicklable(format!(
                "{kind} contains itself through its constructor arguments"
            )));
        }
        Ok(())
    }

    fn write_int(&mut self, value: i64) {
        if (0..=0xff).contains(&value) {
            self.out.extend_from_slice(&[b'K', value as u8]);
        } else if (0..=0xffff).contains(&value) {
            self.out.push(b'M');
            self.out.extend_from_slice(&(value as u16).to_le_bytes());
        } else if let Ok(small) = i32::try_from(value) {
            self.out.push(b'J');
            self.out.extend_from_slice(&small.to_le_bytes());
        } else {
            // Minimal little-endian two's complement, as CPython's encode_long.
            let mut bytes = value.to_le_bytes().to_vec();
            while bytes.len() > 1 {
                let last = bytes[bytes.len() - 1];
                let sign_of_previous = bytes[bytes.len() - 2] & 0x80 != 0;
                if (last == 0x00 && !sign_of_previous) || (last == 0xff && sign_of_previous) {
                    bytes.pop();
                } else {
                    break;
                }
            }
            self.out.push(0x8a);
            self.out.push(bytes.len() as u8);
            self.out.extend_from_slice(&bytes);
        }
    }

    fn write_length_prefixed(
        &mut self,
        short_op: Option<u8>,
        long_op: u8,
        data: &[u8],
    ) -> Result<(), PickleError> {
        match (short_op, u8::try_from(data.len())) {
            (Some(short_op), Ok(short_len)) => {
                self.out.push(short_op);
                self.out.push(short_len);
            }
            _ => {
                let length = u32::try_from(data.len()).map_err(|_| {
                    PickleError::Unpicklable("string or bytes longer than 4 GiB".into())
                })?;
                self.out.push(long_op);
                self.out.extend_from_slice(&length.to_le_bytes());
            }
        }
        self.out.extend_from_slice(data);
        Ok(())
    }

    /// Queues MARK/APPENDS (or APPEND) batches for list items.
    fn queue_appends(&mut self, items: Vec<PickleValue>) -> Vec<Task> {
        let mut tasks = Vec::new();
        if let [only] = items.as_slice() {
            tasks.push(Task::Value(only.clone()));
            tasks.push(Task::Op(b'a'));
            return tasks;
        }
        for chunk in items.chunks(BATCH_SIZE) {
            tasks.push(Task::Op(b'('));
            tasks.extend(chunk.iter().cloned().map(Task::Value));
            tasks.push(Task::Op(b'e'));
        }
        tasks
    }

    /// Queues MARK/SETITEMS (or SETITEM) batches for dict items.
    fn queue_setitems(&mut self, items: &[(PickleValue, PickleValue)]) -> Vec<Task> {
        let mut tasks = Vec::new();
        if let [(key, value)] = items {
            tasks.push(Task::Value(key.clone()));
            tasks.push(Task::Value(value.clone()));
            tasks.push(Task::Op(b's'));
            return tasks;
        }
        for chunk in items.chunks(BATCH_SIZE) {
            tasks.push(Task::Op(b'('));
            for (key, value) in chunk {
                tasks.push(Task::Value(key.clone()));
                tasks.push(Task::Value(value.clone()));
            }
            tasks.push(Task::Op(b'u'));
        }
        tasks
    }

    /// Schedules `tasks` to run next, in order.
    fn schedule(&mut self, tasks: Vec<Task>) {
        self.tasks.extend(tasks.into_iter().rev());
    }

    fn write_global(&mut self, module: &Rc<str>, name: &Rc<str>) -> Result<(), PickleError> {
        let key = MemoKey::Global(module.clone(), name.clone());
        if self.try_get(&key) {
            return Ok(());
        }
        if module.contains('\n') || name.contains('\n') || module.is_empty() || name.is_empty() {
            return Err(PickleError::Unpicklable(format!(
                "global name {module:?}.{name:?} cannot be written"
            )));
        }
        self.out.push(b'c');
        self.out.extend_from_slice(module.as_bytes());
        self.out.push(b'\n');
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b'\n');
        self.memoize(key)
    }

    fn write_value(&mut self, value: &PickleValue) -> Result<(), PickleError> {
        if let Some(pointer) = value.ptr_id() {
            if self.try_get(&MemoKey::Pointer(pointer)) {
                return Ok(());
            }
        }
        match value {
            PickleValue::None => self.out.push(b'N'),
            PickleValue::Bool(true) => self.out.push(0x88),
            PickleValue::Bool(false) => self.out.push(0x89),
            PickleValue::Int(number) => self.write_int(*number),
            PickleValue::Float(number) => {
                self.out.push(b'G');
                self.out.extend_from_slice(&number.to_be_bytes());
            }
            PickleValue::Str(text) => {
                let key = MemoKey::Pointer(str_pointer(text));
                if !self.try_get(&key) {
                    self.write_length_prefixed(None, b'X', text.as_bytes())?;
                    self.memoize(key)?;
                }
            }
            PickleValue::Bytes(data) => {
                let key = MemoKey::Pointer(bytes_pointer(data));
                if !self.try_get(&key) {
                    // _codecs.encode(text, "latin1") where each byte becomes the code
                    // point of the same value; memo layout as CPython's.
                    self.write_global(&Rc::from("_codecs"), &Rc::from("encode"))?;
                    let text: String = data.iter().map(|&byte| char::from(byte)).collect();
                    self.write_length_prefixed(None, b'X', text.as_bytes())?;
                    let text_key = self.anonymous_key();
                    self.memoize(text_key)?;
                    let tuple_key = self.anonymous_key();
                    let latin1 = self.latin1.clone();
                    self.schedule(vec![
                        Task::Value(latin1),
                        Task::Op(0x86),
                        Task::Memoize(tuple_key),
                        Task::Op(b'R'),
                        Task::Memoize(key),
                    ]);
                }
            }
            PickleValue::Global(global) => self.write_global(&global.module, &global.name)?,
            PickleValue::Tuple(items) => {
                let pointer = Rc::as_ptr(items) as *const u8 as usize;
                if items.is_empty() {
                    self.out.push(b')');
                    return Ok(());
                }
                self.start_container(pointer, "tuple")?;
                let mut tasks = Vec::new();
                if items.len() > 3 {
                    tasks.push(Task::Op(b'('));
                }
                tasks.extend(items.iter().cloned().map(Task::Value));
                tasks.push(Task::Op(match items.len() {
                    1 => 0x85,
                    2 => 0x86,
                    3 => 0x87,
                    _ => b't',
                }));
                tasks.push(Task::Memoize(MemoKey::Pointer(pointer)));
                self.schedule(tasks);
            }
            PickleValue::List(items) => {
                let pointer = Rc::as_ptr(items) as *const u8 as usize;
                self.out.push(b']');
                self.memoize(MemoKey::Pointer(pointer))?;
                let snapshot = items.borrow().clone();
                let tasks = self.queue_appends(snapshot);
                self.schedule(tasks);
            }
            PickleValue::Dict(items) => {
                let pointer = Rc::as_ptr(items) as *const u8 as usize;
                self.out.push(b'}');
                self.memoize(MemoKey::Pointer(pointer))?;
                let snapshot = items.borrow().clone();
                let tasks = self.queue_setitems(&snapshot);
                self.schedule(tasks);
            }
            PickleValue::Reduce(data) => {
                let pointer = Rc::as_ptr(data) as *const u8 as usize;
                self.start_container(pointer, "reduce result")?;
                let data = data.borrow();
                if !matches!(data.args, PickleValue::Tuple(_))
                    && !crate::pickle_value::is_enum_class_call(&data.callable, &data.args)
                {
                    return Err(PickleError::Unpicklable(format!(
                        "REDUCE arguments must be a tuple, got {}",
                        data.args.kind_name()
                    )));
                }
                let mut tasks = vec![
                    Task::Value(data.callable.clone()),
                    Task::Value(data.args.clone()),
                    Task::Op(b'R'),
                    Task::Memoize(MemoKey::Pointer(pointer)),
                ];
                if let Some(state) = &data.state {
                    tasks.push(Task::Value(state.clone()));
                    tasks.push(Task::Op(b'b'));
                }
                self.schedule(tasks);
            }
            PickleValue::Object(data) => {
                let pointer = Rc::as_ptr(data) as *const u8 as usize;
                self.start_container(pointer, "object")?;
                let data = data.borrow();
                if !matches!(data.args, PickleValue::Tuple(_)) {
                    return Err(PickleError::Unpicklable(format!(
                        "NEWOBJ arguments must be a tuple, got {}",
                        data.args.kind_name()
                    )));
                }
                let mut tasks = vec![
                    Task::Value(PickleValue::Global(Rc::new(GlobalName {
                        module: data.module.clone(),
                        name: data.name.clone(),
                    }))),
                    Task::Value(data.args.clone()),
                    Task::Op(0x81),
                    Task::Memoize(MemoKey::Pointer(pointer)),
                ];
                tasks.extend(self.queue_setitems(&data.dict_items));
                if let Some(state) = &data.state {
                    tasks.push(Task::Value(state.clone()));
                    tasks.push(Task::Op(b'b'));
                }
                self.schedule(tasks);
            }
            PickleValue::PersistentId(pid) => {
                let pointer = Rc::as_ptr(pid) as *const u8 as usize;
                self.start_container(pointer, "persistent id")?;
                self.schedule(vec![
                    Task::Value(pid.as_ref().clone()),
                    Task::Op(b'Q'),
                    Task::Memoize(MemoKey::Pointer(pointer)),
                ]);
            }
        }
        Ok(())
    }
}
