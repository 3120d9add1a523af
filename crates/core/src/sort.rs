//! One sort for the whole program.
//!
//! The standard library's sorts are generic: each `sort_by`/`sort_unstable_by_key` call
//! compiles its own copy of the sort for its element type and comparison, 1.5–5 KB of wasm
//! each (about 17 KB gzip of the app's bundle went to fifteen of them). Here the sort is a
//! stable merge sort over indices that compares through `&mut dyn FnMut`: it is compiled
//! once, and each call site adds only its comparison and a small permutation step.
//!
//! Stable: equal elements keep their order (a superset of what an unstable sort promises).
//! O(n log n) comparisons and O(n) extra indices.

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, stably.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let order = {
        let v: &[T] = v;
        order(v.len(), &mut |a, b| cmp(&v[a], &v[b]))
    };
    permute(v, order);
}

/// Sorts `v` by a key, stably.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `v` by its own order, stably.
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp);
}

/// The indices of `0..n` in sorted order (bottom-up merge sort; ties keep index order).
fn order(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut b: Vec<usize> = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut i, mut j) = (lo, mid);
            for slot in &mut b[lo..hi] {
                // The left run's element goes first unless the right one is strictly less.
                let take_left = j >= hi || (i < mid && cmp(a[i], a[j]) != Ordering::Greater);
                if take_left {
                    *slot = a[i];
                    i += 1;
                } else {
                    *slot = a[j];
                    j += 1;
                }
            }
            lo = hi;
        }
        std::mem::swap(&mut a, &mut b);
        width *= 2;
    }
    a
}

/// Moves `v[order[i]]` to position `i`, following each cycle of the permutation once.
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    for start in 0..order.len() {
        let mut at = start;
        while order[at] != usize::MAX {
            let from = order[at];
            order[at] = usize::MAX;
            if from == start {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The oracle: std's stable sort, on keys with many ties (so stability shows).
        #[test]
        fn same_as_std_stable_sort(keys in proptest::collection::vec(0u8..8, 0..300)) {
            let tagged: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let mut ours = tagged.clone();
            sort_by_key(&mut ours, |x| x.0);
            let mut want = tagged;
            want.sort_by_key(|x| x.0);
            prop_assert_eq!(ours, want);
        }

        #[test]
        fn sorts_any_order_and_keeps_every_element(mut v in proptest::collection::vec(any::<i64>(), 0..500)) {
            let mut want = v.clone();
            want.sort_unstable();
            sort(&mut v);
            prop_assert_eq!(v, want);
        }
    }

    #[test]
    fn reverse_comparison_and_small_cases() {
        let mut v = vec![3, 1, 2];
        sort_by(&mut v, |a, b| b.cmp(a));
        assert_eq!(v, [3, 2, 1]);
        let mut e: Vec<u8> = vec![];
        sort(&mut e);
        assert!(e.is_empty());
        let mut one = vec![String::from("x")];
        sort(&mut one);
        assert_eq!(one, ["x"]);
    }
}
