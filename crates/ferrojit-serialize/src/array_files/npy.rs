//! NumPy's `.npy` format: `\x93NUMPY`, a version, a header length, a Python dict literal
//! (`{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`) and the raw elements.
//!
//! Reading accepts format versions 1.0-3.0, little-, big- and native-endian elements, and C
//! or Fortran order (a Fortran-order array comes back as a C-contiguous tensor with the same
//! logical elements). Writing produces version 1.0 (2.0 when the header needs it), C order,
//! little-endian, the header padded so the data starts on a 64-byte boundary, as
//! `numpy.save` does.

use ferrojit_tensor::{contiguous_strides, DType, Storage, Tensor};

use super::ArrayFileError;

const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses one `.npy` array.
pub fn read_npy(bytes: &[u8]) -> Result<Tensor, ArrayFileError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        if MAGIC.starts_with(bytes) {
            return Err(ArrayFileError::Truncated(
                "the magic string is cut short".into(),
            ));
        }
        return Err(ArrayFileError::NotNpy);
    }
    let version = bytes
        .get(6..8)
        .ok_or_else(|| ArrayFileError::Truncated("no format version".into()))?;
    let (major, minor) = (version[0], version[1]);
    let (length_bytes, header_start) = match major {
        1 => (2usize, 10usize),
        2 | 3 => (4, 12),
        _ => return Err(ArrayFileError::UnsupportedVersion { major, minor }),
    };
    let length_field = bytes
        .get(8..8 + length_bytes)
        .ok_or_else(|| ArrayFileError::Truncated("no header length".into()))?;
    let header_len = length_field
        .iter()
        .rev()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    let header_end = header_start
        .checked_add(header_len)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| {
            ArrayFileError::Truncated(format!(
                "the header says {header_len} bytes but only {} follow",
                bytes.len().saturating_sub(header_start)
            ))
        })?;
    let header = std::str::from_utf8(&bytes[header_start..header_end])
        .map_err(|_| ArrayFileError::Header("the header is not text".into()))?;
    let header = parse_header(header)?;
    let (dtype, little_endian) = dtype_from_descr(&header.descr)?;
    let shape = header
        .shape
        .iter()
        .map(|&size| usize::try_from(size))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| ArrayFileError::SizeOverflow(header.shape.clone()))?;
    let expected = shape
        .iter()
        .try_fold(1usize, |acc, &size| acc.checked_mul(size))
        .and_then(|numel| numel.checked_mul(dtype.item_size()))
        .ok_or_else(|| ArrayFileError::SizeOverflow(header.shape.clone()))?;
    let data = &bytes[header_end..];
    if data.len() != expected {
        return Err(ArrayFileError::DataLength {
            shape,
            dtype: dtype.name(),
            expected,
            actual: data.len(),
        });
    }
    let storage = Storage::from_bytes(dtype, data, little_endian)?;
    if !header.fortran_order || shape.len() < 2 {
        let strides = contiguous_strides(&shape);
        return Ok(Tensor::from_storage(storage, 0, shape, strides)?);
    }
    // Column-major: the first dimension varies fastest. The element count fits (checked
    // above), so these running products do too.
    let mut strides = Vec::with_capacity(shape.len());
    let mut stride = 1usize;
    for &size in &shape {
        strides.push(stride);
        stride = stride.saturating_mul(size.max(1));
    }
    Ok(Tensor::from_storage(storage, 0, shape, strides)?.contiguous())
}

/// Serializes a tensor as a `.npy` array (C order, little-endian). bfloat16, which NumPy
/// lacks, is refused.
pub fn write_npy(tensor: &Tensor) -> Result<Vec<u8>, ArrayFileError> {
    let descr = descr_for(tensor.dtype())?;
    let shape = match tensor.sizes() {
        [] => "()".to_string(),
        [one] => format!("({one},)"),
        many => {
            let parts: Vec<String> = many.iter().map(usize::to_string).collect();
            format!("({})", parts.join(", "))
        }
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // The whole preamble (magic, version, length, header, newline) is padded to 64 bytes.
    let fits_version_1 = header.len() + 11 <= usize::from(u16::MAX);
    let preamble = if fits_version_1 { 10 } else { 12 };
    let unpadded = preamble + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let data = little_endian_bytes(tensor);
    let mut out = Vec::with_capacity(preamble + header.len() + data.len());
    out.extend_from_slice(MAGIC);
    if fits_version_1 {
        out.extend_from_slice(&[1, 0]);
        let length = u16::try_from(header.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&length.to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        let length = u32::try_from(header.len()).map_err(|_| {
            ArrayFileError::Header(format!("a header of {} bytes is too long", header.len()))
        })?;
        out.extend_from_slice(&length.to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    Ok(out)
}

/// The tensor's elements in logical (C) order as little-endian bytes.
pub(crate) fn little_endian_bytes(tensor: &Tensor) -> Vec<u8> {
    if tensor.is_contiguous()
        && tensor.storage_offset() == 0
        && tensor.storage().len_elements() == tensor.numel()
    {
        tensor.storage().to_le_bytes()
    } else {
        tensor.clone_tensor().storage().to_le_bytes()
    }
}

/// NumPy's little-endian type string for a dtype.
fn descr_for(dtype: DType) -> Result<&'static str, ArrayFileError> {
    Ok(match dtype {
        DType::Bool => "|b1",
        DType::UInt8 => "|u1",
        DType::Int8 => "|i1",
        DType::Int16 => "<i2",
        DType::Int32 => "<i4",
        DType::Int64 => "<i8",
        DType::Float16 => "<f2",
        DType::Float32 => "<f4",
        DType::Float64 => "<f8",
        DType::ComplexFloat => "<c8",
        DType::ComplexDouble => "<c16",
        DType::BFloat16 => {
            return Err(ArrayFileError::UnwritableDtype {
                dtype,
                format: ".npy",
            })
        }
    })
}

/// The dtype and byte order of a NumPy type string such as `<f4`, `>i8` or `|b1`.
fn dtype_from_descr(descr: &str) -> Result<(DType, bool), ArrayFileError> {
    let unsupported = || ArrayFileError::UnsupportedNpyDtype(descr.to_string());
    let (order, code) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let dtype = match code {
        "b1" | "?" => DType::Bool,
        "u1" | "B" => DType::UInt8,
        "i1" | "b" => DType::Int8,
        "i2" => DType::Int16,
        "i4" => DType::Int32,
        "i8" => DType::Int64,
        "f2" => DType::Float16,
        "f4" => DType::Float32,
        "f8" => DType::Float64,
        "c8" => DType::ComplexFloat,
        "c16" => DType::ComplexDouble,
        _ => return Err(unsupported()),
    };
    let little_endian = match order {
        '<' | '|' => true,
        '>' => false,
        _ => cfg!(target_endian = "little"),
    };
    Ok((dtype, little_endian))
}

/// The three keys of a `.npy` header.
#[derive(Debug, PartialEq)]
struct NpyHeader {
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// One value of the header's dict literal.
#[derive(Debug)]
enum Literal {
    Text(String),
    Bool(bool),
    Int(u64),
    Tuple(Vec<Literal>),
    /// A list (structured dtypes) or anything else this reader does not use.
    Other,
}

/// Parses the header's Python dict literal; the three keys must be present.
fn parse_header(text: &str) -> Result<NpyHeader, ArrayFileError> {
    let mut parser = LiteralParser {
        text: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let entries = parser.dict()?;
    let mut descr = None;
    let mut fortran_order = None;
    let mut shape = None;
    for (key, value) in entries {
        match (key.as_str(), value) {
            ("descr", Literal::Text(text)) => descr = Some(text),
            ("descr", _) => {
                return Err(ArrayFileError::UnsupportedNpyDtype(
                    "a structured dtype".to_string(),
                ))
            }
            ("fortran_order", Literal::Bool(flag)) => fortran_order = Some(flag),
            ("shape", Literal::Tuple(items)) => {
                let sizes = items
                    .into_iter()
                    .map(|item| match item {
                        Literal::Int(size) => Ok(size),
                        _ => Err(ArrayFileError::Header(
                            "'shape' holds something other than sizes".into(),
                        )),
                    })
                    .collect::<Result<Vec<u64>, _>>()?;
                shape = Some(sizes);
            }
            (key @ ("fortran_order" | "shape"), _) => {
                return Err(ArrayFileError::Header(format!(
                    "'{key}' has the wrong type"
                )))
            }
            _ => {}
        }
    }
    let missing = |key: &str| ArrayFileError::Header(format!("no '{key}' key"));
    Ok(NpyHeader {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
    })
}

/// A recursive-descent reader for the small subset of Python literals `.npy` headers use.
struct LiteralParser<'a> {
    text: &'a [u8],
    pos: usize,
    /// Nesting depth, bounded so a hostile header cannot exhaust the stack.
    depth: usize,
}

const MAX_LITERAL_DEPTH: usize = 32;

impl LiteralParser<'_> {
    fn error(&self, what: &str) -> ArrayFileError {
        ArrayFileError::Header(format!("{what} at byte {}", self.pos))
    }

    fn skip_space(&mut self) {
        while self.text.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.text.get(self.pos).copied()
    }

    fn expect(&mut self, byte: u8) -> Result<(), ArrayFileError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected '{}'", byte as char)))
        }
    }

    fn dict(&mut self) -> Result<Vec<(String, Literal)>, ArrayFileError> {
        self.expect(b'{')?;
        let mut entries = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.pos += 1;
                break;
            }
            let key = match self.value()? {
                Literal::Text(key) => key,
                _ => return Err(self.error("a key that is not a string")),
            };
            self.expect(b':')?;
            let value = self.value()?;
            entries.push((key, value));
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
        Ok(entries)
    }

    /// The items of a tuple or list up to `close`.
    fn sequence(&mut self, close: u8) -> Result<Vec<Literal>, ArrayFileError> {
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok(items);
            }
            items.push(self.value()?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(c) if c == close => {}
                _ => return Err(self.error("expected ',' or the end of a sequence")),
            }
        }
    }

    fn value(&mut self) -> Result<Literal, ArrayFileError> {
        self.depth += 1;
        if self.depth > MAX_LITERAL_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        let result = self.value_inner();
        self.depth -= 1;
        result
    }

    fn value_inner(&mut self) -> Result<Literal, ArrayFileError> {
        match self.peek() {
            Some(quote @ (b'\'' | b'"')) => {
                let start = self.pos + 1;
                let length = self.text[start..]
                    .iter()
                    .position(|&b| b == quote || b == b'\\')
                    .ok_or_else(|| self.error("an unterminated string"))?;
                if self.text[start + length] == b'\\' {
                    return Err(self.error("an escape in a string"));
                }
                self.pos = start + length + 1;
                let text = std::str::from_utf8(&self.text[start..start + length])
                    .map_err(|_| self.error("a string that is not text"))?;
                Ok(Literal::Text(text.to_string()))
            }
            Some(b'(') => {
                self.pos += 1;
                Ok(Literal::Tuple(self.sequence(b')')?))
            }
            Some(b'[') => {
                self.pos += 1;
                self.sequence(b']')?;
                Ok(Literal::Other)
            }
            Some(b'{') => {
                self.dict()?;
                Ok(Literal::Other)
            }
            Some(b'0'..=b'9') => {
                let start = self.pos;
                while self.text.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    self.pos += 1;
                }
                let digits = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("");
                // Python 2 wrote long sizes as `3L`.
                if self.text.get(self.pos) == Some(&b'L') {
                    self.pos += 1;
                }
                digits
                    .parse::<u64>()
                    .map(Literal::Int)
                    .map_err(|_| ArrayFileError::SizeOverflow(vec![u64::MAX]))
            }
            Some(b'T' | b'F' | b'N') => {
                for (word, literal) in [
                    (&b"True"[..], Literal::Bool(true)),
                    (b"False", Literal::Bool(false)),
                    (b"None", Literal::Other),
                ] {
                    if self.text[self.pos..].starts_with(word) {
                        self.pos += word.len();
                        return Ok(literal);
                    }
                }
                Err(self.error("an unknown name"))
            }
            Some(b'-') => Err(self.error("a negative number")),
            Some(_) => Err(self.error("an unexpected character")),
            None => Err(self.error("the header ends early")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy_with_header(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn round_trips_every_writable_dtype() {
        let base = Tensor::from_vec(vec![1.5f64, -2.0, 0.0, 7.25, 3.0, -1.0], &[2, 3]).unwrap();
        for dtype in DType::ALL {
            if dtype == DType::BFloat16 {
                continue;
            }
            let tensor = base.to_dtype(dtype);
            let bytes = write_npy(&tensor).unwrap();
            assert_eq!(bytes[..6], *MAGIC);
            let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + header_len) % 64, 0, "data is 64-byte aligned");
            let back = read_npy(&bytes).unwrap();
            assert_eq!(back.dtype(), dtype);
            assert_eq!(back.sizes(), &[2, 3]);
            assert_eq!(back.to_f64_vec(), tensor.to_f64_vec());
        }
    }

    #[test]
    fn bfloat16_is_refused_for_writing() {
        let tensor = Tensor::from_vec(vec![1.0f32], &[1])
            .unwrap()
            .to_dtype(DType::BFloat16);
        assert!(matches!(
            write_npy(&tensor),
            Err(ArrayFileError::UnwritableDtype { .. })
        ));
    }

    #[test]
    fn reads_big_endian_and_fortran_order() {
        let data: Vec<u8> = [1i32, 2, 3, 4, 5, 6]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let bytes = npy_with_header(
            "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }\n",
            &data,
        );
        let tensor = read_npy(&bytes).unwrap();
        assert_eq!(tensor.dtype(), DType::Int32);
        assert_eq!(tensor.sizes(), &[2, 3]);
        // Column-major: the columns are (1, 2), (3, 4), (5, 6).
        assert_eq!(tensor.to_i64_vec(), vec![1, 3, 5, 2, 4, 6]);
    }

    #[test]
    fn reads_scalars_and_empty_arrays() {
        let bytes = npy_with_header(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
            &2.5f64.to_le_bytes(),
        );
        let tensor = read_npy(&bytes).unwrap();
        assert_eq!(tensor.sizes(), &[] as &[usize]);
        assert_eq!(tensor.to_f64_vec(), vec![2.5]);
        let bytes = npy_with_header(
            "{'descr': '<f4', 'fortran_order': True, 'shape': (0, 5), }",
            &[],
        );
        assert_eq!(read_npy(&bytes).unwrap().sizes(), &[0, 5]);
    }

    #[test]
    fn malformed_files_are_errors() {
        let good = write_npy(&Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap()).unwrap();
        // Every truncation of a valid file is refused.
        for end in 0..good.len() {
            assert!(read_npy(&good[..end]).is_err(), "truncated at {end}");
        }
        assert!(matches!(
            read_npy(b"PK\x03\x04rest"),
            Err(ArrayFileError::NotNpy)
        ));
        let header = |h: &str| npy_with_header(h, &[0; 8]);
        assert!(matches!(
            read_npy(&header(
                "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }"
            )),
            Err(ArrayFileError::UnsupportedNpyDtype(_))
        ));
        assert!(matches!(
            read_npy(&header(
                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"
            )),
            Err(ArrayFileError::UnsupportedNpyDtype(_))
        ));
        assert!(matches!(
            read_npy(&header(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }"
            )),
            Err(ArrayFileError::SizeOverflow(_))
        ));
        assert!(matches!(
            read_npy(&header(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }"
            )),
            Err(ArrayFileError::SizeOverflow(_))
        ));
        assert!(matches!(
            read_npy(&header(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"
            )),
            Err(ArrayFileError::DataLength {
                expected: 16,
                actual: 8,
                ..
            })
        ));
        assert!(matches!(
            read_npy(&header("{'descr': '<f8', 'shape': (1,), }")),
            Err(ArrayFileError::Header(_))
        ));
        assert!(matches!(
            read_npy(&header(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (-1,), }"
            )),
            Err(ArrayFileError::Header(_))
        ));
        assert!(matches!(
            read_npy(&header(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (1,)"
            )),
            Err(ArrayFileError::Header(_))
        ));
        let deep = format!("{{'x': {}{}, }}", "(".repeat(100), ")".repeat(100));
        assert!(matches!(
            read_npy(&header(&deep)),
            Err(ArrayFileError::Header(_))
        ));
        let mut version_9 = good.clone();
        version_9[6] = 9;
        assert!(matches!(
            read_npy(&version_9),
            Err(ArrayFileError::UnsupportedVersion { major: 9, .. })
        ));
    }
}
