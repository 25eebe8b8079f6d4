//! `torch.linalg.matrix_exp`: PyTorch's scheme (Bader, Blanes and Casas, "Computing the
//! Matrix Exponential with an Optimized Taylor Polynomial Approximation", 2019), carried out
//! in the input's own precision.
//!
//! The 1-norm picks a Taylor approximant of degree 1, 2, 4, 8, 12 or 18 (the thresholds
//! depend on the dtype); above the last threshold the matrix is scaled by a power of two,
//! the degree-18 approximant taken and the result squared back. float32 inputs are computed
//! in f32 with plain (unfused, in-order) dot products: for the large-norm matrices PyTorch's
//! own float32 result carries rounding error far above the tests' tolerance, and doing the
//! same operations in the same precision reproduces it.

// The approximants' coefficients are written with all the digits they were published with.
#![allow(clippy::excessive_precision)]

use std::ops::{Add, Div, Mul, Sub};

use super::batch::read_square;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// The arithmetic the approximants need, in f32 or f64.
trait Real:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    fn from_f64(value: f64) -> Self;
    fn to_f64(self) -> f64;
    /// The 1-norm thresholds of the degree 1, 2, 4, 8, 12 and 18 approximants.
    const THETAS: [f64; 6];
}

impl Real for f32 {
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    const THETAS: [f64; 6] = [
        1.192092800768788e-07,
        5.978858893805233e-04,
        5.116619363445086e-02,
        5.800524627688768e-01,
        1.461661507209034e+00,
        3.010066362817634e+00,
    ];
}

impl Real for f64 {
    fn from_f64(value: f64) -> Self {
        value
    }
    fn to_f64(self) -> f64 {
        self
    }
    const THETAS: [f64; 6] = [
        2.220446049250313e-16,
        2.580956802971767e-08,
        3.397168839976962e-04,
        4.991228871115323e-02,
        2.996158913811580e-01,
        1.090863719290036e+00,
    ];
}

/// A row-major `n x n` matrix in precision `T`.
#[derive(Clone)]
struct Matrix<T> {
    n: usize,
    values: Vec<T>,
}

impl<T: Real> Matrix<T> {
    fn identity(n: usize) -> Self {
        let mut values = vec![T::from_f64(0.0); n * n];
        for i in 0..n {
            values[i * n + i] = T::from_f64(1.0);
        }
        Matrix { n, values }
    }

    /// `self @ other`, each entry one dot product summed from k = 0 up.
    fn matmul(&self, other: &Self) -> Self {
        let n = self.n;
        let mut values = Vec::with_capacity(n * n);
        for i in 0..n {
            for j in 0..n {
                let mut sum = T::from_f64(0.0);
                for k in 0..n {
                    sum = sum + self.values[i * n + k] * other.values[k * n + j];
                }
                values.push(sum);
            }
        }
        Matrix { n, values }
    }

    fn add(&self, other: &Self) -> Self {
        Matrix {
            n: self.n,
            values: self
                .values
                .iter()
                .zip(&other.values)
                .map(|(a, b)| *a + *b)
                .collect(),
        }
    }

    fn divide(&self, divisor: T) -> Self {
        Matrix {
            n: self.n,
            values: self.values.iter().map(|a| *a / divisor).collect(),
        }
    }

    /// `sum_j coefficients[j] * matrices[j]`, accumulated from j = 0 up, starting at zero.
    fn combination(matrices: &[&Self], coefficients: &[T]) -> Self {
        let n = matrices[0].n;
        let mut values = vec![T::from_f64(0.0); n * n];
        for (matrix, &c) in matrices.iter().zip(coefficients) {
            for (out, a) in values.iter_mut().zip(&matrix.values) {
                *out = *out + *a * c;
            }
        }
        Matrix { n, values }
    }

    /// The largest column sum of absolute values, summed in precision `T` as PyTorch does.
    fn one_norm(&self) -> f64 {
        let n = self.n;
        (0..n)
            .map(|c| {
                let mut sum = T::from_f64(0.0);
                for r in 0..n {
                    sum = sum + T::from_f64(self.values[r * n + c].to_f64().abs());
                }
                sum.to_f64()
            })
            .fold(0.0, f64::max)
    }
}

fn constants<T: Real>(values: &[f64]) -> Vec<T> {
    values.iter().map(|&v| T::from_f64(v)).collect()
}

/// I + A.
fn degree_1<T: Real>(a: &Matrix<T>) -> Matrix<T> {
    Matrix::identity(a.n).add(a)
}

/// I + A + A^2 / 2.
fn degree_2<T: Real>(a: &Matrix<T>) -> Matrix<T> {
    let a2 = a.matmul(a).divide(T::from_f64(2.0));
    Matrix::identity(a.n).add(a).add(&a2)
}

/// I + A + A^2 (I / 2 + A / 6 + A^2 / 24).
fn degree_4<T: Real>(a: &Matrix<T>) -> Matrix<T> {
    let identity = Matrix::identity(a.n);
    let a2 = a.matmul(a);
    let inner = Matrix::combination(
        &[&identity, a, &a2],
        &constants::<T>(&[1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0]),
    );
    let product = a2.matmul(&inner);
    Matrix::combination(
        &[&identity, a, &a2, &product],
        &constants::<T>(&[1.0, 1.0, 0.0, 1.0]),
    )
}

/// The degree-8 approximant with two products beyond A^2 (the paper's (x1..x7, y2)).
fn degree_8<T: Real>(a: &Matrix<T>) -> Matrix<T> {
    // The constants are formed as PyTorch forms them: sqrt(177) and x3 are already rounded
    // to the working precision when the others are computed from them.
    let sqrt_177 = T::from_f64(0.1330413469565007072504e+2).to_f64();
    let x3 = T::from_f64(2.0 / 3.0).to_f64();
    let x1 = x3 * ((1.0 + sqrt_177) / 88.0);
    let x2 = x3 * ((1.0 + sqrt_177) / 352.0);
    let x4 = (-271.0 + 29.0 * sqrt_177) / (315.0 * x3);
    let x5 = (-11.0 + 11.0 * sqrt_177) / (1260.0 * x3);
    let x6 = (-99.0 + 11.0 * sqrt_177) / (5040.0 * x3);
    let x7 = (89.0 - sqrt_177) / (5040.0 * x3);
    let y2 = (857.0 - 58.0 * sqrt_177) / 630.0;
    let identity = Matrix::identity(a.n);
    let a2 = a.matmul(a);
    let a4 = a2.matmul(&Matrix::combination(&[a, &a2], &constants::<T>(&[x1, x2])));
    let left = Matrix::combination(&[&a2, &a4], &constants::<T>(&[x3, 1.0]));
    let right = Matrix::combination(
        &[&identity, a, &a2, &a4],
        &constants::<T>(&[x4, x5, x6, x7]),
    );
    let a8 = left.matmul(&right);
    Matrix::combination(
        &[&identity, a, &a2, &a4, &a8],
        &constants::<T>(&[1.0, 1.0, y2, 0.0, 1.0]),
    )
}

/// The degree-12 approximant from I, A, A^2, A^3 and two more products.
fn degree_12<T: Real>(a: &Matrix<T>) -> Matrix<T> {
    const B: [[f64; 4]; 4] = [
        [
            9.0198e-16,
            0.46932117595418237389,
            -0.20099424927047284052,
            -0.04623946134063071740,
        ],
        [
            5.31597895759871264183,
            1.19926790417132231573,
            0.01179296240992997031,
            0.01108844528519167989,
        ],
        [
            0.18188869982170434744,
            0.05502798439925399070,
            0.09351590770535414968,
            0.00610700528898058230,
        ],
        [
            -2.0861320e-13,
            -0.13181061013830184015,
            -0.02027855540589259079,
            -0.00675951846863086359,
        ],
    ];
    let identity = Matrix::identity(a.n);
    let a2 = a.matmul(a);
    let a3 = a.matmul(&a2);
    let powers = [&identity, a, &a2, &a3];
    let b: Vec<Matrix<T>> = B
        .iter()
        .map(|row| Matrix::combination(&powers, &constants::<T>(row)))
        .collect();
    let b2 = b[2].add(&b[3].matmul(&b[3]));
    b[0].add(&b[1].add(&b2).matmul(&b2))
}

/// The degree-18 approximant from I, A, A^2, A^3, A^6 and two more products.
fn degree_18<T: Real>(a: &Matrix<T>) -> Matrix<T> {
    const B: [[f64; 5]; 5] = [
        [
            0.,
            -1.00365581030144618291e-01,
            -8.02924648241156932449e-03,
            -8.92138498045729985177e-04,
            0.,
        ],
        [
            0.,
            3.97849749499645077844e-01,
            1.36783778460411720168e+00,
            4.98289622525382669416e-01,
            -6.37898194594723280150e-04,
        ],
        [
            -1.09676396052962061844e+01,
            1.68015813878906206114e+00,
            5.71779846478865511061e-02,
            -6.98210122488052056106e-03,
            3.34975017086070470649e-05,
        ],
        [
            -9.04316832390810593223e-02,
            -6.76404519071381882256e-02,
            6.75961301770459654925e-02,
            2.95552570429315521194e-02,
            -1.39180257516060693404e-05,
        ],
        [
            0.,
            0.,
            -9.23364619367118555360e-02,
            -1.69364939002081722752e-02,
            -1.40086798182036094347e-05,
        ],
    ];
    let identity = Matrix::identity(a.n);
    let a2 = a.matmul(a);
    let a3 = a.matmul(&a2);
    let a6 = a3.matmul(&a3);
    let powers = [&identity, a, &a2, &a3, &a6];
    let b: Vec<Matrix<T>> = B
        .iter()
        .map(|row| Matrix::combination(&powers, &constants::<T>(row)))
        .collect();
    let a9 = b[3].add(&b[0].matmul(&b[4]));
    b[1].add(&b[2].add(&a9).matmul(&a9))
}

/// `exp(A)` of one matrix in precision `T`.
fn exp_of<T: Real>(a: Matrix<T>) -> Matrix<T> {
    let norm = a.one_norm();
    let thetas = T::THETAS;
    // PyTorch compares in the working precision: the thresholds are T values.
    let theta = |i: usize| T::from_f64(thetas[i]).to_f64();
    if norm <= theta(0) {
        return degree_1(&a);
    }
    if norm <= theta(1) {
        return degree_2(&a);
    }
    if norm <= theta(2) {
        return degree_4(&a);
    }
    if norm <= theta(3) {
        return degree_8(&a);
    }
    if norm <= theta(4) {
        return degree_12(&a);
    }
    let squarings = (norm / theta(5)).log2().ceil().max(0.0) as i32;
    let scaled = a.divide(T::from_f64(2f64.powi(squarings)));
    let mut result = degree_18(&scaled);
    for _ in 0..squarings {
        result = result.matmul(&result);
    }
    result
}

/// `torch.linalg.matrix_exp(A)` for float32 and float64 batches.
pub fn matrix_exp(a: &Tensor) -> Result<Tensor> {
    let matrices = read_square("linalg.matrix_exp", "A", a)?;
    let n = matrices.rows;
    if n == 1 {
        return a.exp();
    }
    let count = matrices.count();
    match matrices.dtype {
        DType::Float32 => {
            let mut values: Vec<f32> = Vec::with_capacity(count * n * n);
            for index in 0..count {
                let matrix = Matrix {
                    n,
                    values: matrices.matrix(index).iter().map(|&v| v as f32).collect(),
                };
                values.extend(exp_of(matrix).values);
            }
            Tensor::from_vec(values, a.sizes())
        }
        _ => {
            let mut values: Vec<f64> = Vec::with_capacity(count * n * n);
            for index in 0..count {
                let matrix = Matrix {
                    n,
                    values: matrices.matrix(index).to_vec(),
                };
                values.extend(exp_of(matrix).values);
            }
            Tensor::from_vec(values, a.sizes())
        }
    }
}
