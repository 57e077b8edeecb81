//! Hand-written Rust 5-point blurs with zero padding, the peers of
//! `benches/perf.tl`'s `blur` in `examples/schedbench.rs` and
//! `benches/jit.rs` (both include this file with `#[path]`).

/// A 5-point blur of the `n`×`n` image `a` (row-major), zero outside, added
/// in the order of `benches/perf.tl`'s `blur`; every neighbour checked.
pub fn naive(a: &[f64], o: &mut [f64], n: usize) {
    let at = |y: isize, x: isize| {
        if y < 0 || x < 0 || y >= n as isize || x >= n as isize {
            0.0
        } else {
            a[y as usize * n + x as usize]
        }
    };
    for y in 0..n as isize {
        for x in 0..n as isize {
            o[y as usize * n + x as usize] =
                (at(y - 1, x) + at(y + 1, x) + at(y, x - 1) + at(y, x + 1) + at(y, x)) / 5.0;
        }
    }
}

/// The same blur as a careful programmer writes it: the first and last
/// column checked, the interior of every row a zipped loop over the three
/// rows with no checks (LLVM vectorises it).
pub fn peeled(a: &[f64], o: &mut [f64], n: usize) {
    let zeros = vec![0.0; n];
    for y in 0..n {
        let row = &a[y * n..(y + 1) * n];
        let up = if y > 0 {
            &a[(y - 1) * n..y * n]
        } else {
            &zeros[..]
        };
        let dn = if y + 1 < n {
            &a[(y + 1) * n..(y + 2) * n]
        } else {
            &zeros[..]
        };
        let out = &mut o[y * n..(y + 1) * n];
        let px = |x: usize| {
            let l = if x > 0 { row[x - 1] } else { 0.0 };
            let r = if x + 1 < n { row[x + 1] } else { 0.0 };
            (up[x] + dn[x] + l + r + row[x]) / 5.0
        };
        if n < 3 {
            for (x, o) in out.iter_mut().enumerate() {
                *o = px(x);
            }
            continue;
        }
        out[0] = px(0);
        out[n - 1] = px(n - 1);
        for (((o, u), d), w) in out[1..n - 1]
            .iter_mut()
            .zip(&up[1..n - 1])
            .zip(&dn[1..n - 1])
            .zip(row.windows(3))
        {
            *o = (u + d + w[0] + w[2] + w[1]) / 5.0;
        }
    }
}
