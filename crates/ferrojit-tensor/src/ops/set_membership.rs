//! Set operations on tensor values: `isin` (membership of each element in a set of test
//! values) and `unique_consecutive` (collapsing runs of equal values or slices).

use std::collections::HashSet;

use crate::dtype::{promote_types, DType, Scalar};
use crate::error::{Result, TensorError};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

fn refuse_bool(dtype: DType) -> Result<()> {
    if dtype == DType::Bool || dtype.is_complex() {
        return Err(TensorError::InvalidArgument(format!(
            "Unsupported input type encountered for isin(): {}",
            dtype.scalar_type_name()
        )));
    }
    Ok(())
}

/// Whether each of `elements` is one of `tests` (NaN never is), compared in `common`.
fn membership(elements: &Tensor, tests: &Tensor, common: DType, invert: bool) -> Tensor {
    let found: Vec<bool> = if common.is_floating_point() {
        let set: HashSet<u64> = tests
            .to_f64_vec()
            .into_iter()
            .filter(|v| !v.is_nan())
            // -0.0 and 0.0 are equal: key both as 0.0.
            .map(|v| (v + 0.0).to_bits())
            .collect();
        elements
            .to_f64_vec()
            .into_iter()
            .map(|v| !v.is_nan() && set.contains(&(v + 0.0).to_bits()))
            .collect()
    } else {
        let set: HashSet<i64> = tests.to_i64_vec().into_iter().collect();
        elements
            .to_i64_vec()
            .into_iter()
            .map(|v| set.contains(&v))
            .collect()
    };
    let found = found.into_iter().map(|f| f != invert).collect();
    Tensor::from_values(found, elements.sizes())
}

impl Tensor {
    /// `isin(elements, test_elements, assume_unique, invert)` (Tensor_Tensor): a bool tensor
    /// shaped like `self`. Both sides are compared in their promoted dtype.
    /// `assume_unique` only lets PyTorch pick a faster algorithm; the result is the same.
    pub fn isin(&self, tests: &Tensor, invert: bool) -> Result<Tensor> {
        refuse_bool(self.dtype())?;
        refuse_bool(tests.dtype())?;
        let common = promote_types(self.dtype(), tests.dtype());
        // Compare values as the common dtype holds them (float32 rounding included).
        let elements = self.to_dtype(common);
        let tests = tests.to_dtype(common);
        Ok(membership(&elements, &tests, common, invert))
    }

    /// `isin(elements, test_element)` (Tensor_Scalar): `elements == test_element` with the
    /// scalar's usual (wrapped number) promotion.
    pub fn isin_scalar(&self, test: &Scalar, invert: bool) -> Result<Tensor> {
        refuse_bool(self.dtype())?;
        let common = if test.is_floating_point() && !self.dtype().is_floating_point() {
            DType::default_float()
        } else {
            self.dtype()
        };
        let elements = self.to_dtype(common);
        let tests = Tensor::scalar_tensor(*test, common);
        Ok(membership(&elements, &tests, common, invert))
    }

    /// `unique_consecutive(return_inverse, return_counts, dim)`: the first of each run of
    /// equal values (of all elements when `dim` is None, else of slices along `dim`), the
    /// run each element belongs to, and the run lengths. Unrequested results are empty.
    pub fn unique_consecutive(
        &self,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<i64>,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let (values, inverse, counts) = match dim {
            None => {
                let flat = self.reshape(&[-1])?;
                let n = flat.numel();
                let data = flat.to_f64_vec_exact();
                let mut kept = Vec::new();
                let mut inverse = Vec::with_capacity(n);
                let mut counts: Vec<i64> = Vec::new();
                for i in 0..n {
                    if i == 0 || data[i] != data[i - 1] {
                        kept.push(i as i64);
                        counts.push(0);
                    }
                    *counts.last_mut().expect("a run was opened") += 1;
                    inverse.push(counts.len() as i64 - 1);
                }
                let k = kept.len();
                let values = flat.index_select(0, &Tensor::from_values(kept, &[k]))?;
                let inverse = Tensor::from_values(inverse, self.sizes());
                (values, inverse, Tensor::from_values(counts, &[k]))
            }
            Some(dim) => {
                if self.dim() == 0 {
                    return Err(TensorError::InvalidArgument(
                        "unique_dim_consecutive(): expected a tensor with at least one dimension"
                            .to_string(),
                    ));
                }
                let d = wrap_dim(dim, self.dim())?;
                let len = self.sizes()[d];
                let moved: Vec<i64> = std::iter::once(d as i64)
                    .chain((0..self.dim() as i64).filter(|&i| i != d as i64))
                    .collect();
                let slices = self.permute(&moved)?.contiguous();
                let width = slices.numel().checked_div(len).unwrap_or(0);
                let data = slices.to_f64_vec_exact();
                let slice = |i: usize| &data[i * width..(i + 1) * width];
                let mut kept = Vec::new();
                let mut inverse = Vec::with_capacity(len);
                let mut counts: Vec<i64> = Vec::new();
                for i in 0..len {
                    if i == 0 || slice(i) != slice(i - 1) {
                        kept.push(i as i64);
                        counts.push(0);
                    }
                    *counts.last_mut().expect("a run was opened") += 1;
                    inverse.push(counts.len() as i64 - 1);
                }
                let k = kept.len();
                let values = self.index_select(d as i64, &Tensor::from_values(kept, &[k]))?;
                (
                    values,
                    Tensor::from_values(inverse, &[len]),
                    Tensor::from_values(counts, &[k]),
                )
            }
        };
        let empty = || Tensor::from_values(Vec::<i64>::new(), &[0]);
        Ok((
            values,
            if return_inverse { inverse } else { empty() },
            if return_counts { counts } else { empty() },
        ))
    }

    /// Elements as comparable keys: floats as f64 (exact for every float dtype), integers as
    /// f64 only when that is exact, else their i64 value's bits (equality is all that's used).
    fn to_f64_vec_exact(&self) -> Vec<f64> {
        if self.dtype().is_floating_point() || self.dtype() != DType::Int64 {
            self.to_f64_vec()
        } else {
            self.to_i64_vec()
                .into_iter()
                .map(|v| f64::from_bits(v as u64))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_is_never_a_member() {
        let x = Tensor::from_vec(vec![f32::NAN, 1.0], &[2]).unwrap();
        let tests = Tensor::from_vec(vec![f32::NAN, 1.0], &[2]).unwrap();
        assert_eq!(x.isin(&tests, false).unwrap().to_i64_vec(), vec![0, 1]);
        assert_eq!(x.isin(&tests, true).unwrap().to_i64_vec(), vec![1, 0]);
    }

    #[test]
    fn runs_collapse_to_their_first_value() {
        let x = Tensor::from_vec(vec![1i64, 1, 2, 2, 2, 1], &[6]).unwrap();
        let (values, inverse, counts) = x.unique_consecutive(true, true, None).unwrap();
        assert_eq!(values.to_i64_vec(), vec![1, 2, 1]);
        assert_eq!(inverse.to_i64_vec(), vec![0, 0, 1, 1, 1, 2]);
        assert_eq!(counts.to_i64_vec(), vec![2, 3, 1]);
    }
}
