//! The benchmark networks of the planner (`benches/plan.rs`,
//! `examples/plan_networks.rs`, tests): rings of matrices, a
//! matrix-product-state norm, a 2D grid, random einsums and random
//! regular graphs. All deterministic for a seed.

use super::model::{Network, Rng};

/// `ab,bc,…,za->`: a ring of `n` matrices, every index of size `d`.
pub fn ring(n: usize, d: u64) -> Network {
    let inputs = (0..n).map(|k| vec![k, (k + 1) % n]).collect();
    Network::new(inputs, vec![], vec![d; n]).expect("valid ring")
}

/// ⟨ψ|ψ⟩ of a matrix-product state of `sites` sites, bond `bond`,
/// physical dimension `phys`: 2·sites tensors, scalar result.
pub fn mps_norm(sites: usize, bond: u64, phys: u64) -> Network {
    assert!(sites >= 2);
    // ids: physical p_k = k; ket bonds sites + k; bra bonds 2·sites + k
    let mut inputs = Vec::new();
    for base in [sites, 2 * sites] {
        for k in 0..sites {
            let mut t = Vec::new();
            if k > 0 {
                t.push(base + k - 1);
            }
            t.push(k);
            if k + 1 < sites {
                t.push(base + k);
            }
            inputs.push(t);
        }
    }
    let mut sizes = vec![phys; sites];
    sizes.extend(vec![bond; 2 * sites]);
    Network::new(inputs, vec![], sizes).expect("valid MPS")
}

/// An `rows`×`cols` square lattice, one tensor per site, bond `bond`,
/// scalar result.
pub fn grid(rows: usize, cols: usize, bond: u64) -> Network {
    let mut inputs = vec![Vec::new(); rows * cols];
    let mut next = 0;
    for r in 0..rows {
        for c in 0..cols {
            let v = r * cols + c;
            if c + 1 < cols {
                inputs[v].push(next);
                inputs[v + 1].push(next);
                next += 1;
            }
            if r + 1 < rows {
                inputs[v].push(next);
                inputs[v + cols].push(next);
                next += 1;
            }
        }
    }
    Network::new(inputs, vec![], vec![bond; next]).expect("valid grid")
}

/// A random einsum of `n` operands: about 3n/2 indices each in two
/// operands (one in five in three: a hyperedge), two output indices each
/// in one operand, one batch index in two operands and the output, sizes
/// 2..=9.
pub fn random_einsum(n: usize, seed: u64) -> Network {
    assert!(n >= 2);
    let mut r = Rng::new(seed, 17);
    let mut inputs = vec![Vec::new(); n];
    let mut sizes = Vec::new();
    let mut output = Vec::new();
    let mut add = |inputs: &mut Vec<Vec<usize>>, k: usize, r: &mut Rng| {
        let id = sizes.len();
        sizes.push(2 + r.below(8) as u64);
        let mut ts: Vec<usize> = Vec::new();
        while ts.len() < k {
            let t = r.below(n);
            if !ts.contains(&t) {
                ts.push(t);
            }
        }
        for t in ts {
            inputs[t].push(id);
        }
        id
    };
    for _ in 0..(3 * n).div_ceil(2) {
        let k = if n >= 3 && r.below(5) == 0 { 3 } else { 2 };
        add(&mut inputs, k, &mut r);
    }
    for _ in 0..2 {
        output.push(add(&mut inputs, 1, &mut r));
    }
    output.push(add(&mut inputs, 2, &mut r));
    Network::new(inputs, output, sizes).expect("valid random einsum")
}

/// A random `degree`-regular graph of `n` tensors (pairing model, retried
/// until simple), every index of size `bond`, scalar result; `n·degree`
/// must be even.
pub fn random_regular(n: usize, degree: usize, bond: u64, seed: u64) -> Network {
    assert!((n * degree).is_multiple_of(2) && degree < n);
    let mut r = Rng::new(seed, 23);
    'retry: loop {
        let mut stubs: Vec<usize> = (0..n * degree).map(|s| s / degree).collect();
        for i in (1..stubs.len()).rev() {
            let j = r.below(i + 1);
            stubs.swap(i, j);
        }
        let mut edges: Vec<(usize, usize)> = Vec::with_capacity(stubs.len() / 2);
        for pair in stubs.chunks(2) {
            let (a, b) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
            if a == b {
                continue 'retry;
            }
            edges.push((a, b));
        }
        let mut sorted = edges.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            continue;
        }
        let mut inputs = vec![Vec::new(); n];
        for (id, &(a, b)) in edges.iter().enumerate() {
            inputs[a].push(id);
            inputs[b].push(id);
        }
        return Network::new(inputs, vec![], vec![bond; edges.len()]).expect("valid graph");
    }
}

/// The program text of a network: one parameter per tensor, one named size
/// per index (`d{id}`), the output as `gen`s and the rest as `sum`s.
pub fn program_text(net: &Network) -> String {
    let idx = |i: usize| format!("i{i}");
    let size = |i: usize| format!("d{i}");
    let mut params = Vec::new();
    let mut factors = Vec::new();
    for (t, ids) in net.inputs().iter().enumerate() {
        let dims: Vec<String> = ids.iter().map(|&i| size(i)).collect();
        params.push(if ids.is_empty() {
            format!("T{t}: R")
        } else {
            format!("T{t}: [{}]R", dims.join(","))
        });
        let ix: Vec<String> = ids.iter().map(|&i| idx(i)).collect();
        factors.push(if ids.is_empty() {
            format!("T{t}")
        } else {
            format!("T{t}[{}]", ix.join(","))
        });
    }
    let out = net.output();
    let mut used: Vec<usize> = net.inputs().iter().flatten().copied().collect();
    used.sort_unstable();
    used.dedup();
    let summed: Vec<usize> = used.into_iter().filter(|i| !out.contains(i)).collect();
    let ret = if out.is_empty() {
        "R".to_string()
    } else {
        format!(
            "[{}]R",
            out.iter().map(|&i| size(i)).collect::<Vec<_>>().join(",")
        )
    };
    let mut body = factors.join(" * ");
    if !summed.is_empty() {
        let b: Vec<String> = summed
            .iter()
            .map(|&i| format!("{}:{}", idx(i), size(i)))
            .collect();
        body = format!("sum({}) {body}", b.join(", "));
    }
    if !out.is_empty() {
        let b: Vec<String> = out
            .iter()
            .map(|&i| format!("{}:{}", idx(i), size(i)))
            .collect();
        body = format!("gen({}) {body}", b.join(", "));
    }
    format!("fn tn({}) -> {ret} = {body}", params.join(", "))
}

/// Random data in [-0.5, 0.5) for the network's inputs, deterministic for
/// `seed` (an xorshift stream, so benches and examples need no RNG).
pub fn random_data(net: &Network, seed: u64) -> Vec<ndarray::ArrayD<f64>> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    net.inputs()
        .iter()
        .map(|ids| {
            let shape: Vec<usize> = ids.iter().map(|&i| net.sizes()[i] as usize).collect();
            let n: usize = shape.iter().product();
            ndarray::ArrayD::from_shape_vec(shape, (0..n).map(|_| next()).collect()).unwrap()
        })
        .collect()
}
