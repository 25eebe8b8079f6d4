//! `torchvision::box_iou_rotated`: the IoU of every pair of rotated rectangles, computed as
//! torchvision's CPU kernel does (edge crossings and contained corners, a Graham-scan hull,
//! the hull's area), with the same tolerances and the same mix of `double` and element
//! precision, so that results match bit for bit where torchvision's arithmetic is exact.

use ferrojit_tensor::{DType, Tensor};

use crate::error::TorchvisionError;
use crate::real::Real;

type Result<T> = std::result::Result<T, TorchvisionError>;

/// A point (or vector) in the element precision.
#[derive(Debug, Clone, Copy)]
struct Point<T> {
    x: T,
    y: T,
}

impl<T: Real> Point<T> {
    fn new(x: T, y: T) -> Self {
        Point { x, y }
    }
    fn minus(self, other: Self) -> Self {
        Point::new(self.x - other.x, self.y - other.y)
    }
    fn plus(self, other: Self) -> Self {
        Point::new(self.x + other.x, self.y + other.y)
    }
    fn scaled(self, factor: T) -> Self {
        Point::new(self.x * factor, self.y * factor)
    }
    fn dot(self, other: Self) -> T {
        self.x * other.x + self.y * other.y
    }
    fn cross(self, other: Self) -> T {
        self.x * other.y - other.x * self.y
    }
}

/// A rotated rectangle: centre, width, height and angle in degrees.
#[derive(Debug, Clone, Copy)]
struct RotatedBox<T> {
    center_x: T,
    center_y: T,
    width: T,
    height: T,
    angle_degrees: T,
}

/// The four corners, in the order torchvision lists them (each edge `i -> i+1` is a side).
fn corners<T: Real>(rectangle: &RotatedBox<T>) -> [Point<T>; 4] {
    // torchvision converts degrees with this truncated constant, in double precision, and
    // rounds the cosine and sine to the element type before halving them.
    let theta = rectangle.angle_degrees.to_f64() * 0.01745329251;
    let half = T::from_f64(0.5);
    let half_cos = T::from_f64(theta.cos()) * half;
    let half_sin = T::from_f64(theta.sin()) * half;
    let (cx, cy, w, h) = (
        rectangle.center_x,
        rectangle.center_y,
        rectangle.width,
        rectangle.height,
    );
    let two = T::from_f64(2.0);
    let first = Point::new(
        cx + half_sin * h + half_cos * w,
        cy + half_cos * h - half_sin * w,
    );
    let second = Point::new(
        cx - half_sin * h + half_cos * w,
        cy - half_cos * h - half_sin * w,
    );
    let third = Point::new(two * cx - first.x, two * cy - first.y);
    let fourth = Point::new(two * cx - second.x, two * cy - second.y);
    [first, second, third, fourth]
}

/// Slack on the comparisons that decide whether a point belongs to the intersection: an extra
/// (duplicate) point costs nothing, a missed one changes the area a lot.
const EPSILON: f64 = 1e-5;

/// Corners of `inner` that lie inside (or within `EPSILON` of) the rectangle `outer`.
fn corners_inside<T: Real>(
    inner: &[Point<T>; 4],
    outer: &[Point<T>; 4],
    outer_edges: &[Point<T>; 4],
    found: &mut Vec<Point<T>>,
) {
    let side_ab = outer_edges[0];
    let side_da = outer_edges[3];
    let ab_squared = side_ab.dot(side_ab).to_f64();
    let ad_squared = side_da.dot(side_da).to_f64();
    for &corner in inner {
        let from_a = corner.minus(outer[0]);
        let along_ab = from_a.dot(side_ab).to_f64();
        let along_ad = -(from_a.dot(side_da).to_f64());
        if along_ab > -EPSILON
            && along_ad > -EPSILON
            && along_ab < ab_squared + EPSILON
            && along_ad < ad_squared + EPSILON
        {
            found.push(corner);
        }
    }
}

/// Every edge crossing plus every corner of one rectangle inside the other (with duplicates).
fn intersection_points<T: Real>(first: &[Point<T>; 4], second: &[Point<T>; 4]) -> Vec<Point<T>> {
    let edges = |corners: &[Point<T>; 4]| -> [Point<T>; 4] {
        std::array::from_fn(|i| corners[(i + 1) % 4].minus(corners[i]))
    };
    let first_edges = edges(first);
    let second_edges = edges(second);
    let mut found = Vec::with_capacity(24);
    for i in 0..4 {
        for j in 0..4 {
            let determinant = second_edges[j].cross(first_edges[i]);
            // Parallel edges do not cross.
            if determinant.to_f64().abs() <= 1e-14 {
                continue;
            }
            let between = second[j].minus(first[i]);
            let t1 = (second_edges[j].cross(between) / determinant).to_f64();
            let t2 = (first_edges[i].cross(between) / determinant).to_f64();
            if t1 > -EPSILON && t1 < 1.0 + EPSILON && t2 > -EPSILON && t2 < 1.0 + EPSILON {
                found.push(first[i].plus(first_edges[i].scaled(T::from_f64(t1))));
            }
        }
    }
    corners_inside(first, second, &second_edges, &mut found);
    corners_inside(second, first, &first_edges, &mut found);
    found
}

/// The convex hull of `points` (at least three), relative to its lowest point, in
/// counter-clockwise order; a single point when all points coincide.
fn convex_hull<T: Real>(points: &[Point<T>]) -> Vec<Point<T>> {
    let count = points.len();
    // The lowest point (then the leftmost) starts the scan.
    let mut start_index = 0;
    for (i, point) in points.iter().enumerate().skip(1) {
        let start = points[start_index];
        if point.y < start.y || (point.y == start.y && point.x < start.x) {
            start_index = i;
        }
    }
    let start = points[start_index];
    let mut relative: Vec<Point<T>> = points.iter().map(|p| p.minus(start)).collect();
    relative.swap(0, start_index);
    let mut distance: Vec<T> = relative.iter().map(|p| p.dot(*p)).collect();
    // torchvision's exchange sort by angle (cross product), nearer first on near-ties; kept
    // as is because the order of near-collinear points decides which duplicates survive.
    for i in 1..count.saturating_sub(1) {
        for j in i + 1..count {
            let cross = relative[i].cross(relative[j]).to_f64();
            if cross < -1e-4 || (cross.abs() < 1e-4 && distance[i] > distance[j]) {
                relative.swap(i, j);
                distance.swap(i, j);
            }
        }
    }
    let distance: Vec<f64> = relative.iter().map(|p| p.dot(*p).to_f64()).collect();
    let Some(second) = (1..count).find(|&k| distance[k] > 1e-8) else {
        // Only the area matters to the caller, and one point has none.
        return vec![Point::new(T::ZERO, T::ZERO)];
    };
    let mut hull = vec![relative[0], relative[second]];
    for &point in &relative[second + 1..] {
        while hull.len() > 1 {
            let last = hull.len() - 1;
            let to_point = point.minus(hull[last - 1]);
            let to_last = hull[last].minus(hull[last - 1]);
            // Compared as two products (not their difference) so that equal vectors compare
            // equal even where the subtraction would round, as torchvision does.
            if to_point.x * to_last.y >= to_last.x * to_point.y {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(point);
    }
    hull
}

fn absolute<T: Real>(value: T) -> T {
    if value < T::ZERO {
        T::ZERO - value
    } else {
        value
    }
}

/// Area of a convex polygon by a fan of triangles from its first vertex.
fn polygon_area<T: Real>(polygon: &[Point<T>]) -> T {
    if polygon.len() <= 2 {
        return T::ZERO;
    }
    let mut twice_area = T::ZERO;
    for i in 1..polygon.len() - 1 {
        twice_area += absolute(
            polygon[i]
                .minus(polygon[0])
                .cross(polygon[i + 1].minus(polygon[0])),
        );
    }
    T::from_f64(twice_area.to_f64() / 2.0)
}

fn intersection_area<T: Real>(first: &RotatedBox<T>, second: &RotatedBox<T>) -> T {
    let points = intersection_points(&corners(first), &corners(second));
    if points.len() <= 2 {
        return T::ZERO;
    }
    polygon_area(&convex_hull(&points))
}

/// IoU of two `(cx, cy, w, h, angle)` rows, as torchvision's `single_box_iou_rotated`.
fn rotated_iou<T: Real>(first: &[T], second: &[T]) -> T {
    // Both centres are moved so that their midpoint is the origin (in double precision, then
    // rounded to the element type), for precision far from the origin.
    let shift_x = (first[0].to_f64() + second[0].to_f64()) / 2.0;
    let shift_y = (first[1].to_f64() + second[1].to_f64()) / 2.0;
    let make = |row: &[T]| RotatedBox {
        center_x: T::from_f64(row[0].to_f64() - shift_x),
        center_y: T::from_f64(row[1].to_f64() - shift_y),
        width: row[2],
        height: row[3],
        angle_degrees: row[4],
    };
    let (first, second) = (make(first), make(second));
    let first_area = first.width * first.height;
    let second_area = second.width * second.height;
    // Degenerate boxes (and negative sizes) overlap nothing.
    if first_area.to_f64() < 1e-14 || second_area.to_f64() < 1e-14 {
        return T::ZERO;
    }
    let intersection = intersection_area(&first, &second);
    intersection / (first_area + second_area - intersection)
}

fn check_boxes(argument: &str, boxes: &Tensor, count_name: &str) -> Result<usize> {
    match boxes.sizes() {
        &[count, 5] => Ok(count),
        other => Err(TorchvisionError::Shape(format!(
            "{argument} should have shape ({count_name}, 5), got {other:?}"
        ))),
    }
}

/// `torchvision::box_iou_rotated`: the `[N, M]` float32 matrix of IoUs between the rotated
/// boxes `boxes1` `[N, 5]` and `boxes2` `[M, 5]`, rows `(cx, cy, w, h, angle in degrees)`.
/// float64 boxes are computed in double precision; the result is float32 either way, as in
/// torchvision.
pub fn box_iou_rotated(boxes1: &Tensor, boxes2: &Tensor) -> Result<Tensor> {
    let rows = check_boxes("boxes1", boxes1, "N")?;
    let columns = check_boxes("boxes2", boxes2, "M")?;
    if boxes1.dtype() != boxes2.dtype() {
        return Err(TorchvisionError::DType {
            argument: "boxes2",
            dtype: boxes2.dtype(),
            requirement: "boxes1 and boxes2 must have the same dtype",
        });
    }
    let ious = match boxes1.dtype() {
        DType::Float32 => iou_matrix::<f32>(boxes1, boxes2, rows, columns)?,
        DType::Float64 => iou_matrix::<f64>(boxes1, boxes2, rows, columns)?,
        dtype => {
            return Err(TorchvisionError::DType {
                argument: "boxes1",
                dtype,
                requirement: "float32 or float64",
            })
        }
    };
    Ok(Tensor::from_vec(ious, &[rows, columns])?)
}

fn iou_matrix<T: Real>(
    boxes1: &Tensor,
    boxes2: &Tensor,
    rows: usize,
    columns: usize,
) -> Result<Vec<f32>> {
    let first: Vec<T> = boxes1.to_vec()?;
    let second: Vec<T> = boxes2.to_vec()?;
    let mut ious = Vec::with_capacity(rows * columns);
    for row in first.chunks_exact(5).take(rows) {
        for column in second.chunks_exact(5).take(columns) {
            ious.push(rotated_iou(row, column).to_f64() as f32);
        }
    }
    Ok(ious)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxes(values: Vec<f64>) -> Tensor {
        let count = values.len() / 5;
        Tensor::from_vec(values, &[count, 5]).unwrap()
    }

    #[test]
    fn half_overlapping_axis_aligned_squares_have_iou_one_third() {
        let first = boxes(vec![0.0, 0.0, 2.0, 2.0, 0.0]);
        let second = boxes(vec![1.0, 0.0, 2.0, 2.0, 0.0]);
        let iou = box_iou_rotated(&first, &second).unwrap();
        assert_eq!(iou.dtype(), DType::Float32);
        let value = iou.to_vec::<f32>().unwrap()[0];
        assert!((value - 1.0 / 3.0).abs() < 1e-6, "{value}");
    }

    #[test]
    fn a_square_turned_by_ninety_degrees_still_covers_itself() {
        let first = boxes(vec![3.0, 4.0, 2.0, 2.0, 0.0]);
        let second = boxes(vec![3.0, 4.0, 2.0, 2.0, 90.0]);
        let value = box_iou_rotated(&first, &second)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[0];
        assert!((value - 1.0).abs() < 1e-5, "{value}");
    }

    #[test]
    fn wrong_shapes_and_dtypes_are_errors() {
        let good = boxes(vec![0.0; 5]);
        let bad = Tensor::from_vec(vec![0.0f64; 8], &[2, 4]).unwrap();
        assert!(matches!(
            box_iou_rotated(&bad, &good),
            Err(TorchvisionError::Shape(_))
        ));
        let single = Tensor::from_vec(vec![0.0f32; 5], &[1, 5]).unwrap();
        assert!(matches!(
            box_iou_rotated(&good, &single),
            Err(TorchvisionError::DType { .. })
        ));
        let integers = Tensor::from_vec(vec![0i64; 5], &[1, 5]).unwrap();
        assert!(matches!(
            box_iou_rotated(&integers, &integers),
            Err(TorchvisionError::DType { .. })
        ));
    }
}
