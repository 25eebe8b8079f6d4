//! `index_select` reads a contiguous input in place and a strided one through its strides: the
//! rows it picks must be the same either way, for views with an offset and for transposes.

use ferrojit_tensor::Tensor;

/// A 4×3 table whose element (r, c) is 10 r + c.
fn table() -> Tensor {
    let values: Vec<f32> = (0..4)
        .flat_map(|r| (0..3).map(move |c| (10 * r + c) as f32))
        .collect();
    Tensor::from_vec(values, &[4, 3]).unwrap()
}

fn index(values: &[i64]) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()]).unwrap()
}

#[test]
fn rows_of_a_contiguous_table() {
    let picked = table().index_select(0, &index(&[3, 0, 3, -1])).unwrap();
    assert_eq!(picked.sizes(), [4, 3]);
    assert_eq!(
        picked.to_vec::<f32>().unwrap(),
        [30., 31., 32., 0., 1., 2., 30., 31., 32., 30., 31., 32.]
    );
}

#[test]
fn rows_of_a_view_with_a_storage_offset() {
    // Rows 1..3 of the table: contiguous, starting 3 elements into the storage.
    let view = table().narrow(0, 1, 2).unwrap();
    assert!(view.is_contiguous());
    let picked = view.index_select(0, &index(&[1, 0])).unwrap();
    assert_eq!(
        picked.to_vec::<f32>().unwrap(),
        [20., 21., 22., 10., 11., 12.]
    );
}

#[test]
fn rows_and_columns_of_a_transposed_table() {
    let transposed = table().t().unwrap();
    assert!(!transposed.is_contiguous());
    let rows = transposed.index_select(0, &index(&[2])).unwrap();
    assert_eq!(rows.to_vec::<f32>().unwrap(), [2., 12., 22., 32.]);
    let columns = transposed.index_select(1, &index(&[3, 1])).unwrap();
    assert_eq!(columns.sizes(), [3, 2]);
    assert_eq!(
        columns.to_vec::<f32>().unwrap(),
        [30., 10., 31., 11., 32., 12.]
    );
}

#[test]
fn an_index_out_of_range_is_an_error() {
    let error = table().index_select(0, &index(&[4])).unwrap_err();
    assert!(
        error.to_string().contains("index out of range in self"),
        "{error}"
    );
}
