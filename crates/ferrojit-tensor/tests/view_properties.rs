//! Property test: operators on strided views equal the same operators on contiguous copies,
//! and in-place operators through views write through to the base storage (and nowhere else).

use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::ops::pointwise::UnaryOp;
use ferrojit_tensor::{Scalar, Tensor};

/// Small deterministic generator (64-bit LCG, Knuth's constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A random view of a fresh base tensor: permuted, sliced with a step, or narrowed.
fn random_view(rng: &mut Lcg) -> (Tensor, Tensor) {
    let dims = 1 + rng.below(3) as usize;
    let sizes: Vec<usize> = (0..dims).map(|_| 1 + rng.below(4) as usize).collect();
    let numel: usize = sizes.iter().product();
    let values: Vec<f64> = (0..numel).map(|i| (i as f64) * 0.37 - 1.5).collect();
    let base = Tensor::from_vec(values, &sizes).unwrap();
    let mut view = base.clone();
    match rng.below(3) {
        0 => {
            let mut order: Vec<i64> = (0..dims as i64).collect();
            order.reverse();
            view = view.permute(&order).unwrap();
        }
        1 => {
            let dim = rng.below(dims as u64) as i64;
            let step = 1 + rng.below(2) as i64;
            view = view.slice(dim, Some(0), None, step).unwrap();
        }
        _ => {
            let dim = rng.below(dims as u64) as i64;
            let size = sizes[dim as usize] as i64;
            let start = rng.below(size as u64) as i64;
            view = view.narrow(dim, start, size - start).unwrap();
        }
    }
    (base, view)
}

fn same(a: &Tensor, b: &Tensor) {
    assert_eq!(a.sizes(), b.sizes());
    assert_eq!(a.dtype(), b.dtype());
    for (x, y) in a.to_f64_vec().iter().zip(b.to_f64_vec()) {
        assert!(x == &y || (x.is_nan() && y.is_nan()), "{x} vs {y}");
    }
}

#[test]
fn ops_on_views_equal_ops_on_contiguous_copies() {
    let mut rng = Lcg(42);
    for _ in 0..200 {
        let (_, view) = random_view(&mut rng);
        let copy = view.clone_tensor();
        assert!(copy.is_contiguous());
        for op in [
            UnaryOp::Exp,
            UnaryOp::Abs,
            UnaryOp::Gelu(false),
            UnaryOp::Floor,
        ] {
            same(&view.unary(op).unwrap(), &copy.unary(op).unwrap());
        }
        let other = view.unary(UnaryOp::Sin).unwrap();
        for op in [
            BinaryOp::Mul,
            BinaryOp::Fmod,
            BinaryOp::Maximum,
            BinaryOp::Lt,
        ] {
            same(
                &view.binary(&other, op).unwrap(),
                &copy.binary(&other, op).unwrap(),
            );
        }
        let last = view.dim() as i64 - 1;
        same(
            &view.sum_dim(&[last], true, None).unwrap(),
            &copy.sum_dim(&[last], true, None).unwrap(),
        );
        same(
            &view.cumulative(0, None, false).unwrap(),
            &copy.cumulative(0, None, false).unwrap(),
        );
        same(
            &view.sort(last, true).unwrap().0,
            &copy.sort(last, true).unwrap().0,
        );
        same(
            &view.sort(last, true).unwrap().1,
            &copy.sort(last, true).unwrap().1,
        );
        same(
            &view.var_std(&[], 1.0, false, true).unwrap(),
            &copy.var_std(&[], 1.0, false, true).unwrap(),
        );
    }
}

#[test]
fn in_place_ops_through_views_write_through() {
    let mut rng = Lcg(7);
    for _ in 0..200 {
        let (base, view) = random_view(&mut rng);
        let before_base = base.to_f64_vec();
        let before_view = view.to_f64_vec();
        // Mark every element the view can reach: a view of index positions.
        let numel = base.numel();
        let positions =
            Tensor::from_vec((0..numel as i64).collect::<Vec<_>>(), base.sizes()).unwrap();
        let reached: Vec<i64> = positions
            .as_strided(
                &view.sizes().iter().map(|&s| s as i64).collect::<Vec<_>>(),
                &view.strides().iter().map(|&s| s as i64).collect::<Vec<_>>(),
                Some(view.storage_offset() as i64),
            )
            .unwrap()
            .to_i64_vec();
        view.add_(
            &Tensor::wrapped_scalar(Scalar::Float(10.0)),
            &Scalar::Int(1),
        )
        .unwrap();
        view.unary_(UnaryOp::Neg).unwrap();
        let after_view = view.to_f64_vec();
        for (a, b) in after_view.iter().zip(&before_view) {
            assert_eq!(*a, -(b + 10.0));
        }
        let after_base = base.to_f64_vec();
        for (i, (a, b)) in after_base.iter().zip(&before_base).enumerate() {
            if reached.contains(&(i as i64)) {
                assert_eq!(*a, -(b + 10.0), "element {i} should have been written");
            } else {
                assert_eq!(a, b, "element {i} is outside the view");
            }
        }
    }
}
