//! `pow(x, y)` over slices on the vector unit: `dst[i] = pow(x[i], y[i])`
//! and `dst[i] = pow(x[i], c)` with a constant exponent (the common case,
//! `pow(r, -1.5)`), the lane code below compiled for AVX2+FMA and for
//! AVX-512 (the compiler vectorises it, table look-ups as gathers), with
//! the scalar fallback `f64::powf` per element.
//!
//! **Algorithm** (the one of ARM's optimized-routines and glibc 2.28's
//! `pow`, by Szabolcs Nagy; own code and tables). `x = 2^k·z` with `z` in
//! `[OFF, 2·OFF)`, `OFF ≈ 0.7059`, and the range split into 128
//! subintervals by the top bits of `z`'s significand; `c` near the centre
//! of `z`'s subinterval, with `1/c` ([`INVC`]) of at most 8 significant
//! bits, so that `r = z·(1/c) − 1` is exact (one `fma`), `|r| < 2^-7.4`.
//! `ln x = k·ln2 + ln c + log1p(r)`, `log1p(r) = r − r²/2 + r³·P(r)` with
//! `P` the Taylor polynomial to `r^10` (truncation below `2^-85`), the
//! sum of the large parts compensated (`−r²/2` split exactly by an
//! `fma`), so `ln x = hi + lo` as a double-double, relative error about
//! `2^-68` (and relative to `r` near `x = 1`, where `c = 1`). Then `y·ln x
//! = ehi + elo` (`ehi = y·hi` rounded, `elo = fma(y, hi, −ehi) + y·lo`),
//! and `e^(ehi + elo) = 2^m·2^(j/128)·e^ρ`, `k' = 128m + j` the nearest
//! integer to `ehi·128/ln2`, `ρ = ehi − k'·ln2/128 + elo` (`ln2/128` in
//! two parts, the first of 32 bits, so the first step is exact),
//! `|ρ| < 2^-8.4`; `e^ρ − 1` its Taylor polynomial to `ρ^6` (truncation
//! below `2^-71`); the table holds `2^(j/128)` as its rounded value `T`
//! and its relative error `τ` ([`EXP_BITS`], [`EXP_TAIL`]), and the
//! result is `s + s·(τ + ρ + …)` with `s = 2^m·T` built in the exponent
//! bits (one `fma`, one rounding).
//!
//! **Error bound** (normal results): the error of `ln x` as `hi + lo` is
//! below `2^-68·|ln x|` plus `2^-100` (table rounding below `2^-106`
//! relative, the rounded `lo` sum `2^-53·|lo|` with `|lo| < 2^-20`); times
//! `|y|`, it is below `2^-68·|y·ln x| + …` absolute in the exponent,
//! which `|y·ln x| < 710` keeps below `2^-58`: 1/32 of an ulp of the
//! result at most. `elo` rounds at `2^-53·2^-53·|ehi|`, negligible; `ρ`
//! rounds once (`2^-62` absolute), the polynomial's evaluation below
//! `2^-62` relative, the table's `τ` below `2^-105`; the last `fma`
//! rounds once (½ ulp). So a lane is within about 0.52 ulp of
//! `x^y` (`tests/suite/vmath.rs` measures it against a double-double
//! reference), and within 1 ulp of the correctly rounded result.
//!
//! **Core domain**: `x` positive, normal and finite, `y` finite, and
//! `−708 < y·ln x < 709` (a normal result). Every other lane (`x ≤ 0`,
//! subnormal `x`, an infinity or NaN in either argument, a result that
//! overflows, underflows or is subnormal) is recomputed with
//! `f64::powf`, so special values are exactly C's `pow`; a block of lanes
//! none of which leaves the domain takes no branch.
//!
//! Owns the `pow` kernel and its tables; it uses nothing of its parent
//! ([`crate::vmath`] dispatches to it: no circle of module dependencies,
//! `tests/suite/architecture.rs`).

// the tables are generated with more digits than an f64 holds
#![allow(clippy::excessive_precision, clippy::unreadable_literal)]

/// `z`'s range starts at `OFF` (its bits; `≈ 0.7059`).
const OFF: u64 = 0x3fe6955500000000;
/// `ln 2` with its last 11 bits zero (`k·LN2_HI` is exact for the
/// exponents of doubles) ...
const LN2_HI: f64 = 0.6931471805598903;
/// ... and the rest.
const LN2_LO: f64 = 5.497923018708371e-14;
/// `log1p(r) − r + r²/2 = ar3·(A1 + r·A2 + ar2·(A3 + r·A4 + ar2·(A5 +
/// r·A6 + ar2·(A7 + r·A8))))` with `ar2 = −r²/2`, `ar3 = −r³/2`: the
/// Taylor coefficients `r^n·(−1)^(n+1)/n` rescaled.
const A: [f64; 8] = [
    -2.0 / 3.0,
    0.5,
    0.8,
    -2.0 / 3.0,
    -8.0 / 7.0,
    1.0,
    16.0 / 9.0,
    -1.6,
];
/// `128/ln 2`.
const INV_LN2_N: f64 = 184.6649652337873;
/// `ln2/128` in two parts, the first of 32 significant bits.
const L_HI: f64 = 0.00541521234663378;
const L_LO: f64 = 1.4907929134926466e-12;
/// `2^52`.
const TWO52: f64 = 4503599627370496.0;
/// `1.5·2^52`: `v + SHIFT` rounds `v` to an integer in the low bits.
const SHIFT: f64 = 6755399441055744.0;
/// `e^ρ − 1 − ρ = ρ²·(C2 + ρ·C3 + ρ²·(C4 + ρ·C5 + ρ²·C6))`: Taylor.
const C2: f64 = 1.0 / 2.0;
const C3: f64 = 1.0 / 6.0;
const C4: f64 = 1.0 / 24.0;
const C5: f64 = 1.0 / 120.0;
const C6: f64 = 1.0 / 720.0;
/// The exponent range of the core domain (normal results).
const E_MIN: f64 = -708.0;
const E_MAX: f64 = 709.0;

/// `ln x` of a positive normal finite `x` (its bits) as `hi + lo`.
#[inline(always)]
fn ln_dd(ix: u64) -> (f64, f64) {
    let tmp = ix.wrapping_sub(OFF);
    let i = ((tmp >> 45) & 127) as usize;
    // k + 1024 in [2, 2048] for a positive normal x (unsigned arithmetic
    // and conversion through the bits: AVX2 has no 64-bit arithmetic
    // shift or integer conversion, and this vectorises there too)
    let kb = tmp.wrapping_add(1024 << 52) >> 52;
    let z = f64::from_bits(ix.wrapping_sub(kb << 52).wrapping_add(1024 << 52));
    let kd = f64::from_bits(kb | 0x4330_0000_0000_0000) - (TWO52 + 1024.0);
    let (invc, logc, logc_lo) = (INVC[i], LOGC[i], LOGC_LO[i]);
    // exact: invc has at most 8 significant bits, |r| < 2^-7.4
    let r = z.mul_add(invc, -1.0);
    // k·ln2 + ln c + r, compensated (t1 is exact)
    let t1 = kd.mul_add(LN2_HI, logc);
    let t2 = t1 + r;
    let lo1 = kd.mul_add(LN2_LO, logc_lo);
    let lo2 = t1 - t2 + r;
    let ar = -0.5 * r;
    let ar2 = r * ar;
    let ar3 = r * ar2;
    // + (−r²/2): its rounding error exactly (lo3), the sum's (lo4)
    let hi = t2 + ar2;
    let lo3 = ar.mul_add(r, -ar2);
    let lo4 = t2 - hi + ar2;
    let q = A[6] + r * A[7];
    let q = A[4] + r * A[5] + ar2 * q;
    let q = A[2] + r * A[3] + ar2 * q;
    let p = ar3 * (A[0] + r * A[1] + ar2 * q);
    let lo = lo1 + lo2 + lo3 + lo4 + p;
    let y = hi + lo;
    (y, hi - y + lo)
}

/// `pow(x, y)` of one lane and whether it is in the core domain (else
/// the value is meaningless and the caller recomputes it).
#[inline(always)]
fn lane(x: f64, y: f64) -> (f64, bool) {
    let ix = x.to_bits();
    // positive normal finite x, finite y
    let x_ok = ix.wrapping_sub(0x0010_0000_0000_0000) < 0x7fe0_0000_0000_0000;
    let y_ok = (y.to_bits() & 0x7fff_ffff_ffff_ffff) < 0x7ff0_0000_0000_0000;
    // a lane outside the domain computes pow(1, 0) (no NaN or ∞ flows)
    let ix = if x_ok { ix } else { 0x3ff0_0000_0000_0000 };
    let y = if y_ok { y } else { 0.0 };
    let (hi, lo) = ln_dd(ix);
    let ehi = y * hi;
    let elo = y.mul_add(hi, -ehi) + y * lo;
    let e_ok = ehi > E_MIN && ehi < E_MAX;
    let (ehi, elo) = if e_ok { (ehi, elo) } else { (0.0, 0.0) };
    // e^(ehi + elo) = 2^m · 2^(j/128) · e^ρ
    let kd = ehi.mul_add(INV_LN2_N, SHIFT);
    let ki = kd.to_bits();
    let kd = kd - SHIFT;
    let rho = kd.mul_add(-L_HI, ehi);
    let rho = kd.mul_add(-L_LO, rho) + elo;
    let j = (ki & 127) as usize;
    let sbits = EXP_BITS[j].wrapping_add(ki << 45);
    let r2 = rho * rho;
    let q = C4 + rho * C5 + r2 * C6;
    let tmp = EXP_TAIL[j] + rho + r2 * (C2 + rho * C3) + r2 * r2 * q;
    let s = f64::from_bits(sbits);
    (s.mul_add(tmp, s), x_ok && y_ok && e_ok)
}

/// Lanes per block: computed into a buffer, then the lanes outside the
/// core domain recomputed.
const BLOCK: usize = 256;

/// One block: `out[k] = pow(x[k], y[k])` (`y = None`: the exponent `c`).
#[inline(always)]
fn block(x: &[f64], y: Option<&[f64]>, c: f64, out: &mut [f64]) {
    let n = x.len();
    let out = &mut out[..n];
    let mut bad = [0u8; BLOCK];
    let bad = &mut bad[..n];
    match y {
        Some(y) => {
            let y = &y[..n];
            for (((o, b), &xv), &yv) in out.iter_mut().zip(bad.iter_mut()).zip(x).zip(y) {
                let (v, ok) = lane(xv, yv);
                *o = v;
                *b = u8::from(!ok);
            }
        }
        None => {
            for ((o, b), &xv) in out.iter_mut().zip(bad.iter_mut()).zip(x) {
                let (v, ok) = lane(xv, c);
                *o = v;
                *b = u8::from(!ok);
            }
        }
    }
    if bad.iter().fold(0u8, |a, &b| a | b) != 0 {
        for k in 0..n {
            if bad[k] != 0 {
                out[k] = x[k].powf(y.map_or(c, |y| y[k]));
            }
        }
    }
}

/// `dst[i] = pow(x[i], y[i])` (`y = None`: `pow(x[i], c)`) block by block
/// through a buffer, so `dst` may be `x` or `y` (the raw entry points
/// pass equal pointers).
///
/// # Safety
/// `x` (and `y`) point to `n` initialised doubles, `dst` to room for `n`.
#[inline(always)]
unsafe fn run(x: *const f64, y: Option<*const f64>, c: f64, dst: *mut f64, n: usize) {
    let mut buf = [0.0f64; BLOCK];
    let mut i = 0;
    while i < n {
        let m = BLOCK.min(n - i);
        // SAFETY: `i + m <= n` elements at each (the caller's contract);
        // the results go to the buffer before `dst` is written.
        unsafe {
            let xs = std::slice::from_raw_parts(x.add(i), m);
            let ys = y.map(|y| std::slice::from_raw_parts(y.add(i), m));
            block(xs, ys, c, &mut buf[..m]);
            std::ptr::copy_nonoverlapping(buf.as_ptr(), dst.add(i), m);
        }
        i += m;
    }
}

/// The instruction sets the kernel is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Isa {
    /// `f64::powf` per element.
    Scalar,
    /// AVX2 and FMA.
    Avx2,
    /// AVX-512 F/DQ/VL (with AVX2 and FMA).
    Avx512,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2(x: *const f64, y: Option<*const f64>, c: f64, dst: *mut f64, n: usize) {
    // SAFETY: the caller's contract.
    unsafe { run(x, y, c, dst, n) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
unsafe fn run_avx512(x: *const f64, y: Option<*const f64>, c: f64, dst: *mut f64, n: usize) {
    // SAFETY: the caller's contract.
    unsafe { run(x, y, c, dst, n) }
}

/// `dst[i] = pow(x[i], y[i])` for `i < n` (`y = None`: `pow(x[i], c)`)
/// with the kernel for `isa`; `dst` may equal `x` or `y`.
///
/// # Safety
/// `isa`'s features are present on this CPU; `x` (and `y`) point to `n`
/// initialised doubles, `dst` to room for `n`, equal to `x` or `y` or
/// disjoint from both.
pub(super) unsafe fn pow_raw(
    isa: Isa,
    x: *const f64,
    y: Option<*const f64>,
    c: f64,
    dst: *mut f64,
    n: usize,
) {
    // SAFETY: the caller's contract.
    unsafe {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => run_avx2(x, y, c, dst, n),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => run_avx512(x, y, c, dst, n),
            _ => {
                for i in 0..n {
                    let yv = y.map_or(c, |y| *y.add(i));
                    *dst.add(i) = (*x.add(i)).powf(yv);
                }
            }
        }
    }
}

/// `1/c` of each of the 128 subintervals of `[OFF, 2·OFF)`: `j/128` or
/// `j/256` (at most 8 significant bits, so `z·invc − 1` is exact), 1 on
/// the subinterval holding 1.
static INVC: [f64; 128] = [
    1.4140625, 1.40625, 1.3984375, 1.390625, 1.3828125, 1.375, 1.3671875, 1.359375, 1.3515625,
    1.34375, 1.3359375, 1.3359375, 1.328125, 1.3203125, 1.3125, 1.3046875, 1.296875, 1.2890625,
    1.2890625, 1.28125, 1.2734375, 1.265625, 1.2578125, 1.25, 1.25, 1.2421875, 1.234375, 1.2265625,
    1.2265625, 1.21875, 1.2109375, 1.203125, 1.203125, 1.1953125, 1.1875, 1.1875, 1.1796875,
    1.171875, 1.171875, 1.1640625, 1.15625, 1.1484375, 1.1484375, 1.140625, 1.140625, 1.1328125,
    1.125, 1.125, 1.1171875, 1.109375, 1.109375, 1.1015625, 1.1015625, 1.09375, 1.0859375,
    1.0859375, 1.078125, 1.078125, 1.0703125, 1.0625, 1.0625, 1.0546875, 1.0546875, 1.046875,
    1.046875, 1.0390625, 1.0390625, 1.03125, 1.03125, 1.0234375, 1.015625, 1.015625, 1.0078125,
    1.0078125, 1.0, 1.0, 0.9921875, 0.984375, 0.9765625, 0.96875, 0.9609375, 0.953125, 0.9453125,
    0.94140625, 0.93359375, 0.92578125, 0.91796875, 0.9140625, 0.90625, 0.8984375, 0.89453125,
    0.88671875, 0.8828125, 0.875, 0.87109375, 0.86328125, 0.859375, 0.8515625, 0.84765625,
    0.83984375, 0.8359375, 0.83203125, 0.82421875, 0.8203125, 0.8125, 0.80859375, 0.8046875,
    0.80078125, 0.79296875, 0.7890625, 0.78515625, 0.78125, 0.7734375, 0.76953125, 0.765625,
    0.76171875, 0.7578125, 0.75390625, 0.74609375, 0.7421875, 0.73828125, 0.734375, 0.73046875,
    0.7265625, 0.72265625, 0.71875, 0.71484375, 0.7109375,
];
/// `−ln(invc)` rounded to a multiple of `2^-42` (so `k·LN2_HI + LOGC` is
/// exact) ...
static LOGC: [f64; 128] = [
    -0.3464667673461008,
    -0.34092658697068146,
    -0.3353555419212171,
    -0.32975328637257917,
    -0.32411946865431673,
    -0.31845373111855224,
    -0.31275571000378477,
    -0.30702503529482783,
    -0.3012613305781997,
    -0.2954642128938758,
    -0.28963329258294834,
    -0.28963329258294834,
    -0.28376817313073843,
    -0.27786845100354185,
    -0.2719337154835557,
    -0.2659635484972114,
    -0.25995752443691345,
    -0.25391520998095984,
    -0.25391520998095984,
    -0.2478361639045943,
    -0.2417199368871934,
    -0.23556607131286,
    -0.22937410106487732,
    -0.22314355131425145,
    -0.22314355131425145,
    -0.21687393830052315,
    -0.21056476910735,
    -0.2042155414287663,
    -0.2042155414287663,
    -0.19782574332998593,
    -0.19139485299956505,
    -0.18492233849406148,
    -0.18492233849406148,
    -0.17840765747291698,
    -0.17185025692674571,
    -0.17185025692674571,
    -0.16524957289539088,
    -0.15860503017665906,
    -0.15860503017665906,
    -0.15191604202573217,
    -0.14518200984457508,
    -0.13840232285906495,
    -0.13840232285906495,
    -0.13157635778861732,
    -0.13157635778861732,
    -0.1247034785010328,
    -0.11778303565643,
    -0.11778303565643,
    -0.11081436634026431,
    -0.10379679368156758,
    -0.10379679368156758,
    -0.09672962645845473,
    -0.09672962645845473,
    -0.08961215868976069,
    -0.08244366921098845,
    -0.08244366921098845,
    -0.07522342123752424,
    -0.07522342123752424,
    -0.06795066190852594,
    -0.06062462181648698,
    -0.06062462181648698,
    -0.053244514518837605,
    -0.053244514518837605,
    -0.0458095360313564,
    -0.0458095360313564,
    -0.03831886430202758,
    -0.03831886430202758,
    -0.03077165866670839,
    -0.03077165866670839,
    -0.023167059281604452,
    -0.015504186535963527,
    -0.015504186535963527,
    -0.0077821404420319595,
    -0.0077821404420319595,
    0.0,
    0.0,
    0.007843177460927109,
    0.01574835696806076,
    0.023716526617363343,
    0.03174869831468641,
    0.039845908547249564,
    0.04800921918626955,
    0.05623971832278585,
    0.060380510988807146,
    0.06871389254797577,
    0.07711730334449385,
    0.0855919303353403,
    0.08985632912185793,
    0.09844007281321865,
    0.10709813555627079,
    0.11145544092528326,
    0.12022742699809896,
    0.12464244520720058,
    0.13353139262449076,
    0.1380056730195065,
    0.14701474296180095,
    0.151549898127314,
    0.16068238169054894,
    0.16528009093917717,
    0.17453941635199044,
    0.17920142945763473,
    0.1838852787700489,
    0.1933193110035063,
    0.19806991376208316,
    0.20763936477828793,
    0.21245865121409224,
    0.21730127569003344,
    0.2221674653410446,
    0.2319714654377094,
    0.2369097470784709,
    0.24187253642048745,
    0.2468600779316148,
    0.25691041378513546,
    0.26197371574153294,
    0.2670627852489815,
    0.2721778859158803,
    0.27731928541629713,
    0.28248725557477883,
    0.29290401643288533,
    0.29815337231912054,
    0.3034304294199046,
    0.30873548164959175,
    0.3140688276250785,
    0.3194307707663029,
    0.3248216194012912,
    0.33024168687052224,
    0.3356912916381134,
    0.3411707574027787,
];
/// ... and the rest, `−ln(invc) − LOGC` rounded.
static LOGC_LO: [f64; 128] = [
    -1.077574303757264e-13,
    8.82452633212564e-14,
    7.925157831386559e-14,
    1.1118671389559323e-13,
    1.0475750058776541e-13,
    1.7625431312172662e-14,
    -1.1211800740360982e-13,
    -8.403156304792425e-14,
    3.7923164802093147e-14,
    3.993416384387844e-14,
    -9.43339818951269e-14,
    -9.43339818951269e-14,
    9.3834172236637e-14,
    8.554360006566322e-14,
    -8.604306772808733e-14,
    7.343591369867797e-14,
    -1.2621729398885316e-14,
    -3.600176732637335e-15,
    -3.600176732637335e-15,
    1.3029797173308663e-14,
    4.8230289429940886e-14,
    9.30945949519689e-14,
    3.149265065191484e-14,
    4.169796584527195e-14,
    4.169796584527195e-14,
    -9.120937249914984e-14,
    3.6507188831790577e-16,
    7.540916511956189e-14,
    7.540916511956189e-14,
    6.604544877082384e-14,
    -6.440856150696892e-14,
    4.9485167661250996e-14,
    4.9485167661250996e-14,
    9.86835038673495e-14,
    8.649239607212071e-14,
    8.649239607212071e-14,
    8.372091099235912e-14,
    2.0472357800461955e-14,
    2.0472357800461955e-14,
    -1.0980754099855238e-13,
    7.718001336828099e-14,
    -5.4183331379008994e-14,
    -5.4183331379008994e-14,
    -1.0195735223708473e-13,
    -1.0195735223708473e-13,
    7.556920687451337e-14,
    4.654729747598445e-14,
    4.654729747598445e-14,
    -2.5799991283069902e-14,
    -7.598636597194141e-14,
    -7.598636597194141e-14,
    -9.638067658552277e-14,
    -9.638067658552277e-14,
    7.355770219435029e-14,
    -8.614512936087814e-14,
    -8.614512936087814e-14,
    -6.329065958724544e-14,
    -6.329065958724544e-14,
    1.8195060030168815e-14,
    5.213620639136504e-14,
    5.213620639136504e-14,
    2.532168943117445e-14,
    2.532168943117445e-14,
    6.219834199475792e-14,
    6.219834199475792e-14,
    -1.0902154302203302e-13,
    -1.0902154302203302e-13,
    -4.529814257790929e-14,
    -4.529814257790929e-14,
    7.007359704310036e-14,
    -1.7274567499706107e-15,
    -1.7274567499706107e-15,
    -2.298941004620351e-14,
    -2.298941004620351e-14,
    0.0,
    0.0,
    9.878410481031469e-14,
    7.840703382506278e-14,
    -4.730054772033249e-14,
    -1.0610652735224087e-13,
    -4.9893776716773285e-14,
    9.106054379130929e-14,
    9.023009281142904e-14,
    1.0033424888676119e-13,
    7.603386951772729e-14,
    -6.255850200176405e-14,
    6.322009333691484e-14,
    3.1218748807418837e-15,
    3.3871241029241416e-14,
    9.631011033519217e-14,
    3.957125899799804e-14,
    6.083738419972574e-14,
    7.601671269852866e-14,
    3.1859736349078334e-14,
    -6.278619479555556e-14,
    8.710783796122478e-15,
    -1.1307104809870373e-13,
    -7.547106028244807e-14,
    -7.424679100316254e-14,
    -9.076231556699796e-14,
    7.626153677429339e-14,
    8.84637355812087e-14,
    -1.0320443688698849e-14,
    1.0634128304268335e-14,
    -4.3425422595242564e-14,
    1.0115944196590467e-13,
    -5.204008743405884e-14,
    1.0970699320566433e-13,
    6.573097737831975e-14,
    -1.1318526912023687e-13,
    -7.252318953240293e-16,
    -8.899851356560444e-14,
    -1.0822171646799124e-13,
    4.102651071698446e-14,
    6.371947269815667e-14,
    -6.465103064005256e-14,
    -6.279055732660844e-14,
    -1.0190482133505088e-13,
    4.727452940514406e-14,
    -4.4204083338755686e-14,
    1.548345993498083e-14,
    2.1522127491642888e-14,
    -1.0263280755261064e-13,
    5.834357420090924e-14,
    -5.351646604259541e-14,
    5.4612144489920215e-14,
    2.8136969901227338e-14,
    -1.156568624616423e-14,
];
/// The bits of `2^(j/128)` rounded, less `j << 45` (adding `k << 45`
/// for `k = 128m + j` gives the bits of `2^m·2^(j/128)`).
static EXP_BITS: [u64; 128] = [
    0x3ff0000000000000,
    0x3feff63da9fb3335,
    0x3fefec9a3e778061,
    0x3fefe315e86e7f85,
    0x3fefd9b0d3158574,
    0x3fefd06b29ddf6de,
    0x3fefc74518759bc8,
    0x3fefbe3ecac6f383,
    0x3fefb5586cf9890f,
    0x3fefac922b7247f7,
    0x3fefa3ec32d3d1a2,
    0x3fef9b66affed31b,
    0x3fef9301d0125b51,
    0x3fef8abdc06c31cc,
    0x3fef829aaea92de0,
    0x3fef7a98c8a58e51,
    0x3fef72b83c7d517b,
    0x3fef6af9388c8dea,
    0x3fef635beb6fcb75,
    0x3fef5be084045cd4,
    0x3fef54873168b9aa,
    0x3fef4d5022fcd91d,
    0x3fef463b88628cd6,
    0x3fef3f49917ddc96,
    0x3fef387a6e756238,
    0x3fef31ce4fb2a63f,
    0x3fef2b4565e27cdd,
    0x3fef24dfe1f56381,
    0x3fef1e9df51fdee1,
    0x3fef187fd0dad990,
    0x3fef1285a6e4030b,
    0x3fef0cafa93e2f56,
    0x3fef06fe0a31b715,
    0x3fef0170fc4cd831,
    0x3feefc08b26416ff,
    0x3feef6c55f929ff1,
    0x3feef1a7373aa9cb,
    0x3feeecae6d05d866,
    0x3feee7db34e59ff7,
    0x3feee32dc313a8e5,
    0x3feedea64c123422,
    0x3feeda4504ac801c,
    0x3feed60a21f72e2a,
    0x3feed1f5d950a897,
    0x3feece086061892d,
    0x3feeca41ed1d0057,
    0x3feec6a2b5c13cd0,
    0x3feec32af0d7d3de,
    0x3feebfdad5362a27,
    0x3feebcb299fddd0d,
    0x3feeb9b2769d2ca7,
    0x3feeb6daa2cf6642,
    0x3feeb42b569d4f82,
    0x3feeb1a4ca5d920f,
    0x3feeaf4736b527da,
    0x3feead12d497c7fd,
    0x3feeab07dd485429,
    0x3feea9268a5946b7,
    0x3feea76f15ad2148,
    0x3feea5e1b976dc09,
    0x3feea47eb03a5585,
    0x3feea34634ccc320,
    0x3feea23882552225,
    0x3feea155d44ca973,
    0x3feea09e667f3bcd,
    0x3feea012750bdabf,
    0x3fee9fb23c651a2f,
    0x3fee9f7df9519484,
    0x3fee9f75e8ec5f74,
    0x3fee9f9a48a58174,
    0x3fee9feb564267c9,
    0x3feea0694fde5d3f,
    0x3feea11473eb0187,
    0x3feea1ed0130c132,
    0x3feea2f336cf4e62,
    0x3feea427543e1a12,
    0x3feea589994cce13,
    0x3feea71a4623c7ad,
    0x3feea8d99b4492ed,
    0x3feeaac7d98a6699,
    0x3feeace5422aa0db,
    0x3feeaf3216b5448c,
    0x3feeb1ae99157736,
    0x3feeb45b0b91ffc6,
    0x3feeb737b0cdc5e5,
    0x3feeba44cbc8520f,
    0x3feebd829fde4e50,
    0x3feec0f170ca07ba,
    0x3feec49182a3f090,
    0x3feec86319e32323,
    0x3feecc667b5de565,
    0x3feed09bec4a2d33,
    0x3feed503b23e255d,
    0x3feed99e1330b358,
    0x3feede6b5579fdbf,
    0x3feee36bbfd3f37a,
    0x3feee89f995ad3ad,
    0x3feeee07298db666,
    0x3feef3a2b84f15fb,
    0x3feef9728de5593a,
    0x3feeff76f2fb5e47,
    0x3fef05b030a1064a,
    0x3fef0c1e904bc1d2,
    0x3fef12c25bd71e09,
    0x3fef199bdd85529c,
    0x3fef20ab5fffd07a,
    0x3fef27f12e57d14b,
    0x3fef2f6d9406e7b5,
    0x3fef3720dcef9069,
    0x3fef3f0b555dc3fa,
    0x3fef472d4a07897c,
    0x3fef4f87080d89f2,
    0x3fef5818dcfba487,
    0x3fef60e316c98398,
    0x3fef69e603db3285,
    0x3fef7321f301b460,
    0x3fef7c97337b9b5f,
    0x3fef864614f5a129,
    0x3fef902ee78b3ff6,
    0x3fef9a51fbc74c83,
    0x3fefa4afa2a490da,
    0x3fefaf482d8e67f1,
    0x3fefba1bee615a27,
    0x3fefc52b376bba97,
    0x3fefd0765b6e4540,
    0x3fefdbfdad9cbe14,
    0x3fefe7c1819e90d8,
    0x3feff3c22b8f71f1,
];
/// `(2^(j/128) − T_j)/T_j` rounded: the table value's relative error.
static EXP_TAIL: [f64; 128] = [
    0.0,
    9.447885451727066e-17,
    -1.507066976926039e-17,
    -5.679155082825012e-17,
    4.9997448722726326e-17,
    -4.823683599994895e-17,
    7.357846871247418e-18,
    5.773230223741951e-17,
    8.189317638195515e-17,
    5.326891139980878e-17,
    1.6665881442326747e-18,
    -1.128113245461828e-17,
    -7.402825309426177e-17,
    -3.578659767309563e-18,
    -6.170654745608695e-17,
    2.919139999949279e-17,
    -2.7939114859515733e-17,
    -5.399285355184285e-17,
    4.776959425256223e-17,
    -7.927701432338473e-17,
    9.341710609905046e-17,
    -5.534520675707472e-17,
    4.585670326662351e-17,
    2.8582430411116143e-17,
    7.826573258636076e-17,
    4.053626906769216e-17,
    2.823784425951061e-17,
    -7.882802262487991e-17,
    3.2904726646008416e-17,
    -1.5792094703347882e-18,
    4.721368121170128e-17,
    1.3045277096919659e-17,
    3.3484623336251524e-17,
    3.8611199774925664e-17,
    5.527550048505249e-17,
    -3.927184172445234e-17,
    -6.346552106729483e-17,
    -8.684417614865944e-17,
    -1.5456342819397733e-17,
    -8.70763476495455e-17,
    3.750854201303127e-17,
    -6.616854503526488e-17,
    -5.346099009198751e-18,
    -2.443726321015018e-17,
    2.1023049675215714e-18,
    7.771067937501065e-17,
    1.3357510088834541e-17,
    6.938291696959204e-17,
    1.9572585293112036e-17,
    6.632256961675804e-17,
    -5.478069123926778e-17,
    -4.140839310392624e-17,
    -2.1571477251208752e-17,
    -3.8287766552120535e-17,
    6.663804589232195e-17,
    2.3936187400285282e-17,
    5.68648095791174e-17,
    1.1264523354521684e-18,
    7.007875046906994e-17,
    -5.0119214278381254e-17,
    -4.8923067513522756e-17,
    -3.5260089953269434e-17,
    -6.872303720902018e-17,
    5.001446664133532e-18,
    -6.835808657661922e-17,
    -1.1307344092910212e-17,
    -8.416011634717156e-18,
    -2.9247977035436566e-17,
    -2.092304381843353e-17,
    -3.9778645875427124e-17,
    -3.833464968654295e-17,
    5.763611164480894e-17,
    -2.3591094770850053e-17,
    7.260074661098575e-17,
    9.50689710108796e-18,
    -4.272956133839906e-17,
    -6.735219232374683e-17,
    -2.8396044410430936e-17,
    -7.226635472101257e-17,
    5.786121003395918e-17,
    5.1548301170786783e-17,
    -9.416257568878152e-18,
    2.4253985766689806e-17,
    -6.604314051707707e-17,
    -6.432131775424189e-18,
    -1.2204007601863921e-17,
    -6.336161863401293e-17,
    -3.7800879246373815e-17,
    1.5341410053603723e-17,
    1.2932855580427452e-17,
    -4.123367330661149e-17,
    4.703083974463456e-17,
    -6.152602891550265e-17,
    5.827849326195279e-17,
    3.540948262646183e-17,
    -3.2741571320938764e-17,
    4.875160526227062e-17,
    -5.718569790077838e-17,
    -4.719539664590972e-18,
    -5.773451958805706e-17,
    -1.0772487078934056e-17,
    -6.221808618533911e-17,
    1.821405440362259e-17,
    -6.155536546227639e-17,
    1.685487290628973e-17,
    5.3581249177694816e-17,
    3.621615935336894e-17,
    8.588379527574144e-18,
    1.01562190116415e-17,
    -2.869134889187244e-17,
    -5.495118966122005e-17,
    -5.56965572431627e-17,
    1.790126907604513e-17,
    -3.2211766346200164e-17,
    5.265370768556274e-17,
    3.5089866402403033e-17,
    -3.266924100901318e-17,
    -4.3657593008079375e-17,
    1.7963932659833022e-17,
    3.4300925275214166e-17,
    -5.545065618639427e-17,
    -5.149009745457733e-17,
    5.336805878514151e-17,
    3.498978661192973e-17,
    4.5784915277060095e-17,
    -5.241934575393899e-17,
    2.0414278897578303e-17,
    4.124842848606488e-18,
];
