//! Conversions between `ndarray` arrays and [`Tensor`]s (the `ndarray` cargo feature).
//!
//! Both directions copy the elements once, in logical (row-major) order, so any layout
//! converts: an `ndarray` view with reversed, sliced or broadcast (zero) strides, and a
//! tensor that is a transposed or strided view. The result is always contiguous.

use ndarray::{ArrayBase, ArrayD, Data, Dimension, IxDyn};

use crate::{Element, Error, Result, Tensor};

/// A contiguous tensor holding `array`'s elements, with its shape. The array may have any
/// strides (negative, zero, sliced): elements are read in logical order.
///
/// ```
/// use ferrojit::ndarray::{array, s, Array2};
/// # fn main() -> Result<(), ferrojit::Error> {
/// let a: Array2<f32> = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
/// // A transposed, reversed view: ferrojit gets the values as the view shows them.
/// let view = a.t();
/// let view = view.slice(s![..;-1, ..]);
/// let tensor = ferrojit::tensor_from_ndarray(&view)?;
/// assert_eq!(tensor.sizes(), &[3, 2]);
/// assert_eq!(tensor.to_vec::<f32>()?, vec![3.0, 6.0, 2.0, 5.0, 1.0, 4.0]);
/// # Ok(())
/// # }
/// ```
pub fn tensor_from_ndarray<T, S, D>(array: &ArrayBase<S, D>) -> Result<Tensor>
where
    T: Element,
    S: Data<Elem = T>,
    D: Dimension,
{
    // A standard-layout array is one slice already; anything else is gathered in order.
    let values: Vec<T> = match array.as_slice() {
        Some(slice) => slice.to_vec(),
        None => array.iter().copied().collect(),
    };
    Ok(Tensor::from_vec(values, array.shape())?)
}

/// The tensor's elements as an owned `ArrayD<T>` of its shape, in standard (row-major)
/// layout. `T` must be the tensor's element type exactly: asking for `f32` from a `float64`
/// tensor is [`Error::DTypeMismatch`], not a conversion (use [`Tensor::to_dtype`] first).
///
/// ```
/// # fn main() -> Result<(), ferrojit::Error> {
/// let tensor = ferrojit::Tensor::from_vec(vec![1_i64, 2, 3, 4, 5, 6], &[2, 3])?;
/// let array = ferrojit::tensor_to_ndarray::<i64>(&tensor)?;
/// assert_eq!(array.shape(), &[2, 3]);
/// assert_eq!(array[[1, 0]], 4);
/// let wrong = ferrojit::tensor_to_ndarray::<f32>(&tensor).unwrap_err();
/// assert!(matches!(wrong, ferrojit::Error::DTypeMismatch { actual: ferrojit::DType::Int64, .. }));
/// # Ok(())
/// # }
/// ```
pub fn tensor_to_ndarray<T: Element>(tensor: &Tensor) -> Result<ArrayD<T>> {
    if tensor.dtype() != T::DTYPE {
        return Err(Error::DTypeMismatch {
            expected: T::DTYPE,
            actual: tensor.dtype(),
        });
    }
    // `to_vec` walks the tensor's strides, so views come out in logical order.
    let values = tensor.to_vec::<T>()?;
    ArrayD::from_shape_vec(IxDyn(tensor.sizes()), values).map_err(|error| {
        Error::Tensor(Box::new(ferrojit_tensor::TensorError::InvalidArgument(
            format!(
                "cannot make an array of shape {:?}: {error}",
                tensor.sizes()
            ),
        )))
    })
}
