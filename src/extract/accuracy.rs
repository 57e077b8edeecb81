//! Accuracy-aware choice between equivalent programs (the default mode of
//! the floating-point contract, `docs/fp-contract.md`): among the
//! candidates the optimiser extracts, one much less accurate than the
//! program as written is not taken, however cheap.
//!
//! Measured as Herbie does: sample inputs (moderate values, a large common
//! offset, offsets of both signs, exact zeros), run the written
//! program in double-double arithmetic ([`crate::interp::domain::Dd`], about
//! 106 bits) as the reference, and score a program by the bits of error of
//! its `f64` results: `log2(1 + ulps)` between a result and the reference
//! rounded to `f64`, 64 for a NaN or infinity where the reference is
//! finite, averaged over the numbers of each sample. A candidate's cost is
//! raised by a quarter per bit it loses on average beyond one bit against
//! the written program, and a candidate that loses more than
//! [`MAX_LOSS_BITS`] bits on some sample is refused (a centred sum
//! expanded loses its digits on offset data only).
//!
//! Sampling runs the interpreter, so it is bounded: named sizes are set
//! small ([`SAMPLE_SIZE`]) and a program whose sampled work is beyond
//! [`WORK_BUDGET`] (literal sizes too large) is not measured; the report
//! says so.

use crate::interp::domain::{Dd, F32, F64};
use crate::interp::random::{random_inputs_of, ValueClass};
use crate::interp::{Prepared, Sizes, Value};
use crate::precision::Precision;
use crate::syntax::ast::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

/// Named sizes take this value in the samples.
pub const SAMPLE_SIZE: usize = 4;
/// Samples per value class.
pub const SAMPLES_PER_CLASS: u64 = 2;
/// The largest interpreter work (nodes evaluated, loops multiplied out) of
/// one sampled run.
pub const WORK_BUDGET: f64 = 2e5;
/// A candidate this many bits less accurate than the written program on
/// some sample (on average over the sample's numbers) is refused.
pub const MAX_LOSS_BITS: f64 = 8.0;

/// The value classes sampled: finite (the reference is double-double),
/// and not the huge and tiny magnitudes, where regrouping a product may
/// overflow or underflow, which the contract allows.
const CLASSES: [ValueClass; 4] = [
    ValueClass::Moderate,
    ValueClass::Offset,
    ValueClass::Opposed,
    ValueClass::Zeros,
];

/// The written program's samples and reference values.
pub struct Reference {
    samples: Vec<Vec<Value>>,
    /// Per sample, the reference value of every number of the result.
    reference: Vec<Vec<f64>>,
    /// Per sample, the written program's own error in bits.
    written: Vec<f64>,
    /// The written program's own error in bits, averaged over the samples.
    pub written_bits: f64,
    /// The format the program runs in: errors are counted in its ulps.
    precision: Precision,
}

/// A candidate's error against the reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loss {
    /// Its bits of error averaged over the samples.
    pub bits: f64,
    /// The most bits it loses against the written program on one sample.
    pub worst: f64,
}

/// The work of evaluating `e` once, roughly as the interpreter does it.
fn work(e: &Expr, sizes: &Sizes) -> f64 {
    match e {
        Expr::Gen(_, n, b) | Expr::Sum(_, n, b) | Expr::Reduce(_, _, n, b) => {
            let n = match n {
                Size::Lit(k) => *k as f64,
                Size::Named(x) => sizes.get(x).copied().unwrap_or(1) as f64,
            };
            n * (1.0 + work(b, sizes))
        }
        other => {
            1.0 + other
                .children()
                .into_iter()
                .map(|c| work(c, sizes))
                .sum::<f64>()
        }
    }
}

/// The position of `x` among the doubles, in order (for ulp distances).
fn ordinal(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    if b < 0 {
        i64::MIN - b
    } else {
        b
    }
}

/// The position of `x` among the singles, in order.
fn ordinal32(x: f32) -> i64 {
    let b = x.to_bits() as i32;
    i64::from(if b < 0 { i32::MIN - b } else { b })
}

/// Bits of error of `x` against the reference `r` (`log2(1 + ulps)`, in
/// ulps of the format `p`: in `F32` both are rounded to `f32` first).
fn bits(x: f64, r: f64, p: Precision) -> f64 {
    // a reference beyond the format's range: the written program
    // overflows too
    if !p.round(r).is_finite() {
        return 0.0;
    }
    if !x.is_finite() {
        return 64.0;
    }
    let d = if p == Precision::F32 {
        (ordinal32(x as f32) - ordinal32(r as f32)).unsigned_abs() as f64
    } else {
        (ordinal(x) as i128 - ordinal(r) as i128).unsigned_abs() as f64
    };
    (1.0 + d).log2()
}

/// The numbers of `f`'s result on `args`, computed in `p` (the
/// interpreter's `F64` or `F32` domain).
fn numbers(f: &Prepared<'_>, args: &[Value], p: Precision) -> Option<Vec<f64>> {
    let leaves = if p == Precision::F32 {
        f.run_domain(args, &F32).ok()?
    } else {
        f.run_domain(args, &F64).ok()?
    };
    Some(
        leaves
            .into_iter()
            .flat_map(|l| l.data.into_iter().map(|(x, _)| x))
            .collect(),
    )
}

/// `v` with every number rounded to the format `p` (the inputs a run in
/// `p` sees, so that the reference is computed from them too).
fn rounded(v: Value, p: Precision) -> Value {
    match v {
        Value::Real(x) => Value::Real(p.round(x)),
        Value::Array(a) => Value::Array(a.mapv(|x| p.round(x))),
        Value::Pair(a, b) => Value::pair(rounded(*a, p), rounded(*b, p)),
    }
}

impl Reference {
    /// Samples for `f` and its reference values; `None` when `f` is too
    /// large to sample (see the module documentation) or cannot run.
    pub fn of(f: &Function) -> Option<Reference> {
        Reference::of_in(f, Precision::F64)
    }

    /// [`Reference::of`] for a program run in precision `p`: the samples'
    /// numbers are rounded to `p`, the reference is still double-double,
    /// and every program (the written one and the candidates) runs in `p`,
    /// its errors counted in ulps of `p` (a regrouping that loses the
    /// digits of an `f32` sum is seen in `f32`).
    pub fn of_in(f: &Function, p: Precision) -> Option<Reference> {
        let sizes: Sizes = f
            .size_names()
            .into_iter()
            .map(|n| (n, SAMPLE_SIZE))
            .collect();
        if work(&f.body, &sizes) > WORK_BUDGET {
            return None;
        }
        // (type-checked once for every sample; a program that does not
        // check runs on none)
        let prepared = Prepared::new(f).ok()?;
        let mut samples = Vec::new();
        let mut reference = Vec::new();
        for (k, class) in CLASSES.iter().enumerate() {
            for s in 0..SAMPLES_PER_CLASS {
                let mut rng = StdRng::seed_from_u64(0xACC0 + 97 * k as u64 + s);
                let args: Vec<Value> = random_inputs_of(f, &sizes, *class, &mut rng)
                    .ok()?
                    .into_iter()
                    .map(|v| rounded(v, p))
                    .collect();
                let r: Vec<f64> = prepared
                    .run_domain(&args, &Dd)
                    .ok()?
                    .into_iter()
                    .flat_map(|l| l.data.into_iter().map(|(x, _)| x.hi() + x.lo()))
                    .collect();
                samples.push(args);
                reference.push(r);
            }
        }
        let mut me = Reference {
            samples,
            reference,
            written: vec![],
            written_bits: 0.0,
            precision: p,
        };
        me.written = me.per_sample(&prepared)?;
        me.written_bits = mean(&me.written);
        Some(me)
    }

    /// Per sample, the average bits of error of `g`'s numbers; `None` when
    /// it cannot run on the samples.
    fn per_sample(&self, g: &Prepared<'_>) -> Option<Vec<f64>> {
        self.samples
            .iter()
            .zip(&self.reference)
            .map(|(args, r)| {
                let xs = numbers(g, args, self.precision)?;
                if xs.len() != r.len() {
                    return None;
                }
                Some(mean(
                    &xs.iter()
                        .zip(r)
                        .map(|(x, r)| bits(*x, *r, self.precision))
                        .collect::<Vec<_>>(),
                ))
            })
            .collect()
    }

    /// The error of `g` (the written program's signature) on the samples;
    /// `None` when it cannot run on them.
    pub fn loss(&self, g: &Function) -> Option<Loss> {
        let per = self.per_sample(&Prepared::new(g).ok()?)?;
        let worst = per
            .iter()
            .zip(&self.written)
            .map(|(c, w)| c - w)
            .fold(0.0, f64::max);
        Some(Loss {
            bits: mean(&per),
            worst,
        })
    }

    /// [`Reference::loss`] of the written program itself, without running
    /// it again: its errors are the written ones, so it loses nothing
    /// against them.
    pub fn written_loss(&self) -> Loss {
        Loss {
            bits: self.written_bits,
            worst: 0.0,
        }
    }

    /// The cost of a candidate of cost `cost` and error `loss`, against the
    /// written program: raised by a quarter per bit lost on average beyond
    /// one, `None` (refused) when it loses more than [`MAX_LOSS_BITS`] on
    /// some sample.
    pub fn weigh(&self, cost: f64, loss: Loss) -> Option<f64> {
        if loss.worst > MAX_LOSS_BITS {
            return None;
        }
        let avg = loss.bits - self.written_bits;
        Some(cost * (1.0 + (avg - 1.0).max(0.0) / 4.0))
    }
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(src: &str) -> Function {
        crate::load(src).unwrap().functions.remove(0)
    }

    #[test]
    fn an_expanded_variance_loses_the_bits_the_centred_one_keeps() {
        let centred = f(
            "fn v(x: [n]R) -> R = let m = (sum(i:n) x[i]) / 6 in sum(i:n) (x[i] - m) * (x[i] - m)",
        );
        let expanded = f("fn v(x: [n]R) -> R = let m = (sum(i:n) x[i]) / 4 in (sum(i:n) x[i] * x[i]) - 2 * m * (sum(i:n) x[i]) + 4 * m * m");
        let r = Reference::of(&centred).unwrap();
        let b = r.loss(&expanded).unwrap();
        assert!(r.written_bits < 3.0, "{}", r.written_bits);
        assert!(b.worst > MAX_LOSS_BITS, "{b:?} vs {}", r.written_bits);
        assert!(r.weigh(1.0, b).is_none());
        let same = r.loss(&centred).unwrap();
        assert_eq!(same.worst, 0.0);
        assert_eq!(same, r.written_loss());
        assert_eq!(r.weigh(2.0, same), Some(2.0));
    }

    #[test]
    fn a_regrouping_that_overflows_only_in_f32_is_refused_only_in_f32() {
        // x·1e31·1e-31 regrouped: fine in f64, inf in f32 for the offset
        // samples (about 1e8 · 1e31 > 3.4e38)
        let written = f("fn g(x: [n]R) -> [n]R = gen(i:n) x[i] * (1e31 * 1e-31)");
        let regrouped = f("fn g(x: [n]R) -> [n]R = gen(i:n) (x[i] * 1e31) * 1e-31");
        let r64 = Reference::of_in(&written, Precision::F64).unwrap();
        let l64 = r64.loss(&regrouped).unwrap();
        assert!(r64.weigh(1.0, l64).is_some(), "{l64:?}");
        let r32 = Reference::of_in(&written, Precision::F32).unwrap();
        let l32 = r32.loss(&regrouped).unwrap();
        assert!(r32.weigh(1.0, l32).is_none(), "{l32:?}");
        // the written program itself loses nothing against itself in f32
        assert_eq!(r32.loss(&written).unwrap().worst, 0.0);
        // and the centred variance keeps its guard in f32
        let centred = f(
            "fn v(x: [n]R) -> R = let m = (sum(i:n) x[i]) / 6 in sum(i:n) (x[i] - m) * (x[i] - m)",
        );
        let expanded = f("fn v(x: [n]R) -> R = let m = (sum(i:n) x[i]) / 4 in (sum(i:n) x[i] * x[i]) - 2 * m * (sum(i:n) x[i]) + 4 * m * m");
        let r = Reference::of_in(&centred, Precision::F32).unwrap();
        assert!(r.weigh(1.0, r.loss(&expanded).unwrap()).is_none());
    }

    #[test]
    fn ulps_and_bits() {
        let p = Precision::F64;
        assert_eq!(bits(1.0, 1.0, p), 0.0);
        assert_eq!(bits(1.0 + f64::EPSILON, 1.0, p), 1.0);
        assert_eq!(bits(-0.0, 0.0, p), 0.0);
        assert_eq!(bits(f64::NAN, 1.0, p), 64.0);
        assert!(bits(-1.0, 1.0, p) > 60.0);
        // in f32, one ulp of f32 is one ulp, and f64 digits below it none
        let q = Precision::F32;
        assert_eq!(bits(1.0 + f32::EPSILON as f64, 1.0, q), 1.0);
        assert_eq!(bits(1.0, 1.0 + f64::EPSILON, q), 0.0);
        assert_eq!(bits(-0.0, 0.0, q), 0.0);
        assert!(bits(-1.0, 1.0, q) > 30.0);
        assert_eq!(bits(f64::INFINITY, 1e300, q), 0.0);
    }
}
