//! Unstable orderings exactly as PyTorch's CPU kernels produce them, so that equal elements
//! come out in PyTorch's order: libstdc++'s (GCC) `std::sort`, `std::nth_element` and
//! `std::partial_sort` re-implemented step for step (same pivots, partitions, thresholds and
//! heap moves), and the Sedgewick quickselect PyTorch's `kthvalue` uses.
//!
//! PyTorch 2.15's `torch.sort` (stable=False), `torch.topk` and `torch.kthvalue` are not
//! stable: which of several equal elements comes first is decided by these algorithms.
//! Detection models feed such results into later steps, so a different tie order changes
//! their outputs. Every function takes a strict weak order `less` (as C++ `comp`); with one,
//! no index goes out of bounds (the "unguarded" loops of libstdc++ keep explicit bounds here
//! that a strict weak order never reaches).

/// Ranges of at most this many elements are left to the final insertion sort
/// (libstdc++'s `_S_threshold`).
const THRESHOLD: usize = 16;

/// `floor(log2(n))` for `n > 0` (libstdc++'s `__lg`); 0 for 0.
fn lg(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (usize::BITS - 1 - n.leading_zeros()) as usize
    }
}

/// `std::sort(v.begin(), v.end(), less)`: introsort with median-of-three pivots, heap sort
/// past `2 * lg(n)` levels, then one insertion sort pass.
pub fn sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) {
    if v.is_empty() {
        return;
    }
    let depth = 2 * lg(v.len());
    introsort_loop(v, depth, less);
    final_insertion_sort(v, less);
}

/// `std::nth_element(v.begin(), v.begin() + nth, v.end(), less)`: introselect. Does nothing
/// when `nth >= v.len()`.
pub fn nth_element<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], nth: usize, less: &mut F) {
    if nth >= v.len() {
        return;
    }
    let mut first = 0usize;
    let mut last = v.len();
    let mut depth = 2 * lg(v.len());
    while last - first > 3 {
        if depth == 0 {
            heap_select(&mut v[first..last], nth - first + 1, less);
            v.swap(first, nth);
            return;
        }
        depth -= 1;
        let cut = first + partition_pivot(&mut v[first..last], less);
        if cut <= nth {
            first = cut;
        } else {
            last = cut;
        }
    }
    insertion_sort(&mut v[first..last], less);
}

/// `std::partial_sort(v.begin(), v.begin() + middle, v.end(), less)`: a heap of the first
/// `middle` elements takes in each smaller later element, then is sorted in place.
pub fn partial_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], middle: usize, less: &mut F) {
    let middle = middle.min(v.len());
    if middle == 0 {
        return;
    }
    heap_select(v, middle, less);
    sort_heap(v, middle, less);
}

/// PyTorch's `quick_select_template` (Sorting.cpp, from TH; Sedgewick 1978): moves the element
/// of rank `k` (0-based) to position `k` under `greater` (`gt_or_nan`), partitioning with a
/// median of three around it.
pub fn quick_select<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], k: usize, greater: &mut F) {
    if v.is_empty() {
        return;
    }
    let mut l = 0usize;
    let mut r = v.len() - 1;
    loop {
        if r <= l {
            return;
        }
        if r == l + 1 {
            if greater(&v[l], &v[r]) {
                v.swap(l, r);
            }
            return;
        }
        let p = (l + r) >> 1;
        v.swap(p, l + 1);
        if greater(&v[l + 1], &v[r]) {
            v.swap(l + 1, r);
        }
        if greater(&v[l], &v[r]) {
            v.swap(l, r);
        }
        if greater(&v[l + 1], &v[l]) {
            v.swap(l + 1, l);
        }
        let mut i = l + 1;
        let mut j = r;
        let pivot = v[l];
        loop {
            i += 1;
            while i < r && greater(&pivot, &v[i]) {
                i += 1;
            }
            j -= 1;
            while j > l + 1 && greater(&v[j], &pivot) {
                j -= 1;
            }
            if j < i {
                break;
            }
            v.swap(i, j);
        }
        v.swap(l, j);
        if j <= k {
            l = i;
        }
        if j >= k {
            r = j - 1;
        }
    }
}

/// `__introsort_loop`: partitions ranges longer than [`THRESHOLD`], recursing on the right part
/// and looping on the left one, until `depth` runs out (then heap sort).
fn introsort_loop<T: Copy, F: FnMut(&T, &T) -> bool>(
    mut v: &mut [T],
    mut depth: usize,
    less: &mut F,
) {
    while v.len() > THRESHOLD {
        if depth == 0 {
            let len = v.len();
            partial_sort(v, len, less);
            return;
        }
        depth -= 1;
        let cut = partition_pivot(v, less);
        let (left, right) = std::mem::take(&mut v).split_at_mut(cut);
        introsort_loop(right, depth, less);
        v = left;
    }
}

/// `__unguarded_partition_pivot`: the median of `v[1]`, `v[len / 2]` and `v[len - 1]` moves to
/// `v[0]`, then `v[1..]` is partitioned around it; returns the cut.
fn partition_pivot<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) -> usize {
    let len = v.len();
    move_median_to_first(v, 1, len / 2, len - 1, less);
    unguarded_partition(v, 1, len, less)
}

/// `__move_median_to_first(result = 0, a, b, c)` with libstdc++'s comparison sequence.
fn move_median_to_first<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    a: usize,
    b: usize,
    c: usize,
    less: &mut F,
) {
    let median = if less(&v[a], &v[b]) {
        if less(&v[b], &v[c]) {
            b
        } else if less(&v[a], &v[c]) {
            c
        } else {
            a
        }
    } else if less(&v[a], &v[c]) {
        a
    } else if less(&v[b], &v[c]) {
        c
    } else {
        b
    };
    v.swap(0, median);
}

/// `__unguarded_partition(first, last, pivot = v[0])`: Hoare partition of `v[first..last]`.
fn unguarded_partition<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    mut first: usize,
    mut last: usize,
    less: &mut F,
) -> usize {
    loop {
        while first < v.len() && less(&v[first], &v[0]) {
            first += 1;
        }
        last = last.saturating_sub(1);
        while last > 0 && less(&v[0], &v[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

/// `__final_insertion_sort`: insertion sort of the first 16, then unguarded insertion of the
/// rest (the first 16 hold the minimum by then).
fn final_insertion_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) {
    if v.len() > THRESHOLD {
        insertion_sort(&mut v[..THRESHOLD], less);
        for i in THRESHOLD..v.len() {
            linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, less);
    }
}

/// `__insertion_sort`: an element less than the first goes straight to the front; others
/// move left past every greater element.
fn insertion_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) {
    for i in 1..v.len() {
        if less(&v[i], &v[0]) {
            let value = v[i];
            v.copy_within(0..i, 1);
            v[0] = value;
        } else {
            linear_insert(v, i, less);
        }
    }
}

/// `__unguarded_linear_insert`: moves `v[last]` left while it is less than its neighbour.
fn linear_insert<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], mut last: usize, less: &mut F) {
    let value = v[last];
    while last > 0 && less(&value, &v[last - 1]) {
        v[last] = v[last - 1];
        last -= 1;
    }
    v[last] = value;
}

/// `__heap_select(0, middle, len)`: max-heap (under `less`) of `v[..middle]`; every later
/// element less than the top replaces it.
fn heap_select<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], middle: usize, less: &mut F) {
    make_heap(v, middle, less);
    for i in middle..v.len() {
        if less(&v[i], &v[0]) {
            pop_heap(v, middle, i, less);
        }
    }
}

/// `__make_heap` over `v[..len]`.
fn make_heap<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], len: usize, less: &mut F) {
    if len < 2 {
        return;
    }
    let mut parent = (len - 2) / 2;
    loop {
        let value = v[parent];
        adjust_heap(v, parent, len, value, less);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

/// `__sort_heap` over `v[..len]`.
fn sort_heap<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], len: usize, less: &mut F) {
    let mut last = len;
    while last > 1 {
        last -= 1;
        pop_heap(v, last, last, less);
    }
}

/// `__pop_heap(0, len, result)`: the top moves to `v[result]`, whose old value is sifted into
/// the heap `v[..len]`.
fn pop_heap<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    len: usize,
    result: usize,
    less: &mut F,
) {
    let value = v[result];
    v[result] = v[0];
    adjust_heap(v, 0, len, value, less);
}

/// `__adjust_heap`: the hole walks down to a leaf along the larger child (the left one when
/// the right is not greater), then `value` is pushed back up from there.
fn adjust_heap<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    mut hole: usize,
    len: usize,
    value: T,
    less: &mut F,
) {
    let top = hole;
    let mut second = hole;
    while second < len.saturating_sub(1) / 2 {
        second = 2 * (second + 1);
        if less(&v[second], &v[second - 1]) {
            second -= 1;
        }
        v[hole] = v[second];
        hole = second;
    }
    if len >= 2 && len.is_multiple_of(2) && second == (len - 2) / 2 {
        second = 2 * (second + 1);
        v[hole] = v[second - 1];
        hole = second - 1;
    }
    push_heap(v, hole, top, value, less);
}

/// `__push_heap`: moves `value` up from `hole` while its parent is less than it.
fn push_heap<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    mut hole: usize,
    top: usize,
    value: T,
    less: &mut F,
) {
    while hole > top {
        let parent = (hole - 1) / 2;
        if !less(&v[parent], &value) {
            break;
        }
        v[hole] = v[parent];
        hole = parent;
    }
    v[hole] = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indices_of(mut pairs: Vec<(i32, usize)>, run: impl Fn(&mut [(i32, usize)])) -> Vec<usize> {
        run(&mut pairs);
        pairs.iter().map(|p| p.1).collect()
    }

    fn pairs(values: &[i32]) -> Vec<(i32, usize)> {
        values.iter().copied().zip(0..).collect()
    }

    #[test]
    fn sort_orders_values_and_moves_ties_as_libstdcxx_does() {
        // torch.zeros(40).sort().indices in PyTorch 2.15 (CPU).
        let order = indices_of(pairs(&[0; 40]), |v| sort(v, &mut |a, b| a.0 < b.0));
        let expected: Vec<usize> = [30, 21, 22, 23, 24, 25, 26, 27, 28, 29, 20, 31, 32, 33, 34]
            .into_iter()
            .chain(35..40)
            .chain([10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0])
            .chain(11..20)
            .collect();
        assert_eq!(order, expected);
        let values: Vec<i32> = (0..300).map(|i| (i * 7919) % 13).collect();
        let mut sorted = pairs(&values);
        sort(&mut sorted, &mut |a, b| a.0 < b.0);
        assert!(sorted.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn selection_and_partial_sort_keep_their_contracts() {
        let values: Vec<i32> = (0..500).map(|i| (i * 31) % 17).collect();
        let mut reference = values.clone();
        reference.sort();
        for nth in [0, 1, 3, 250, 499] {
            let mut v = pairs(&values);
            nth_element(&mut v, nth, &mut |a, b| a.0 < b.0);
            assert_eq!(v[nth].0, reference[nth]);
            assert!(v[..nth].iter().all(|p| p.0 <= v[nth].0));
            assert!(v[nth..].iter().all(|p| p.0 >= v[nth].0));
            let mut w = pairs(&values);
            partial_sort(&mut w, nth + 1, &mut |a, b| a.0 < b.0);
            let head: Vec<i32> = w[..=nth].iter().map(|p| p.0).collect();
            assert_eq!(head, reference[..=nth]);
            let mut q = pairs(&values);
            quick_select(&mut q, nth, &mut |a, b| a.0 > b.0);
            assert_eq!(q[nth].0, reference[nth]);
        }
        // Out-of-range positions and empty slices do nothing.
        let mut empty: Vec<(i32, usize)> = Vec::new();
        nth_element(&mut empty, 0, &mut |a, b| a.0 < b.0);
        partial_sort(&mut empty, 3, &mut |a, b| a.0 < b.0);
        quick_select(&mut empty, 0, &mut |a, b| a.0 > b.0);
        sort(&mut empty, &mut |a, b| a.0 < b.0);
    }
}
