//! `tanh` on AVX-512 (F, DQ, VL) and on AVX2: the vector kernels
//! [`super`] runs for `Func::Tanh` at [`super::Level::Avx512`] (this
//! one first) and [`super::Level::Avx2`] (the last section below). At
//! AVX-512 it runs over a slice in chunks of
//! 256, each chunk by the cheapest of three lanes that covers all of its
//! elements (a pre-pass over the chunk's magnitudes picks it):
//!
//! * **table** (every `|x| < 4.75`): 16 intervals of `a = |x|`; the
//!   index is `round(a·(5.2 - 0.32·a) - 2)` (intervals about 0.21 wide
//!   near 0.5, 0.44 near 4.7), 0 for `a ≤ 0.4959028` (interval 0,
//!   where the map is at most 0.5): `tanh(a) = a + a³·P(a²)`, `P` of
//!   degree 10. The
//!   others: `tanh(a) = c0 + r·p(r)`, `r = a - m` (exact: `a` is within
//!   a factor 2 of `m`), `p` of degree 10, `m` a double near the
//!   interval's middle whose `tanh` is within 2^-12 ulp of the double
//!   `c0`. Coefficients are Chebyshev interpolants (computed at 40
//!   digits, then rounded) picked from 16-entry tables by one
//!   two-register permute each; no division, no `exp`. The tables are
//!   printed by `src/vmath/tanh_tables.py` (Python with `mpmath`), which
//!   also prints each interval's fit error.
//! * **exp** (every `|x| ≥ 4.75`, ±inf included): `1 - q`,
//!   `q = 2y/(1+y) = 2y(1 - y + y² - y³)`, `y = e^{-2a}` (a clamped to
//!   20, where the result rounds to 1) by `2^(j/16)` from a table and a
//!   degree-6 Taylor `e^r`, `|r| ≤ ln2/32`.
//! * **both**, selected per element, for a chunk with both kinds (or a
//!   NaN, whose lanes then get the library's `tanh`, the NaN).
//!
//! **Error bound** (in ulps of the result; the final rounding is 0.5):
//! *table, interval 0*: `fma(a³, P, a)`, where `a³ = a·(a·a)` (two
//! roundings) and `P ≈ -1/3` is within 1.3·2^-54 relative, so the
//! product's error is under 2.5·2^-53·a³/3 ≤ 0.21 ulp at `a = 0.4959`
//! (less below), plus 0.04 ulp of interpolation: ≤ 0.75. *Other
//! intervals*: `fma(r, p, c0)` with `|r| ≤ 0.11`, `p`'s error under
//! 1.1·2^-53 (its leading coefficient's and its last rounding), so
//! `|r·δp| ≤ 0.23` ulp in interval 1 (results below 0.5, ulp 2^-54)
//! and ≤ 0.12 beyond, plus ≤ 0.05 of interpolation and 2^-12 for `c0`:
//! ≤ 0.79. *exp*: `q ≤ 1.5·10^-4`, its relative error (the table's
//! rounding, the Taylor remainder `r^7/7!`, the truncated series
//! `y^4`) is under 2^-50, so under 2^-62 absolute: ≤ 0.51. So every
//! lane is within 0.8 ulp (`tests/suite/vmath.rs` checks ≤ 1 ulp against a
//! double-double reference at millions of points, every interval's
//! ends included).
//!
//! Every finite `x` (zeros and subnormals too: `a³` underflows and the
//! result is `a`, the sign is `x`'s) and ±inf are in the kernel's
//! domain; only NaN goes to the library.
//!
//! **AVX2** ([`map256`], four lanes): the AVX-512 kernel's two lanes,
//! the same operations and so the same bits (`tests/suite/vmath.rs`
//! compares the levels where a CPU has both), chosen per vector of four
//! rather than per chunk: the table lane if every `|x| < T_HI`, the exp
//! lane if none, both blended otherwise. AVX2 has no two-register permute,
//! so the table lane reads each lane's row of its interval's numbers
//! (`M`, `C0`, the coefficients: [`ROWS`]) by 16-byte loads and
//! transposes them two at a time, and the exp lane reads `2·2^(j/16)` per
//! lane; `2^m` goes into the exponent where AVX-512 uses `scalef` (the
//! same value: `w` is normal). NaN lanes get the library's `tanh`. On
//! Zen 3, 2^20 values of `|x| < 3`: 3.3 ns per element, against 4.2 for
//! the earlier AVX2 kernel (interval 0's polynomial below 0.4959 and a
//! double-double `1 - 2y/(1 + y)` with a division above); a vector
//! mixing both lanes (`|x|` spread to 10) costs both, 4.7 against 4.2.
//! The table lane is bound by its chain of eleven dependent `fma`s.

// The coefficients are printed with all the digits of their doubles.
#![allow(clippy::excessive_precision, clippy::unreadable_literal)]

use std::arch::x86_64::*;

/// Elements per chunk (one regime decision each).
const CH: usize = 256;
/// `a` from which the exp lane is used (the last interval reaches 4.7593).
const T_HI: f64 = 4.75;
/// The end of interval 0 (a hair above 0.49590274016643593, where the
/// index map reaches 0.5; the fit of interval 0 reaches 0.49595).
const W0: f64 = 0.4959028;
/// The index map `a·(IA - IB·a) - 2`.
const IA: f64 = 5.2;
const IB: f64 = 0.32;
/// `1.5·2^52`: `v + SHIFT` rounds `v` to an integer in the low bits.
const SHIFT: f64 = 6755399441055744.0;
/// From here on `tanh` rounds to 1 (it does from 19.06…).
const SAT: f64 = 20.0;
const INV_LN2_16: f64 = 23.083120654223414;
/// `ln2/16` split as fdlibm's `ln2` (32 significant bits, and the rest).
const LN2_16_HI: f64 = 0.04332169877307024;
const LN2_16_LO: f64 = 1.1926343307941173e-11;

/// The intervals' expansion points `m` (interval 0: 0).
const M: [f64; 16] = [
    0.0,
    0.5997194678837988,
    0.810342286966032,
    1.0272179743216798,
    1.2509394644091474,
    1.4821998952179043,
    1.7218180843656452,
    1.9707730055894104,
    2.230251494285746,
    2.50171598603635,
    2.787003671778123,
    3.0884770191167923,
    3.4092626358789957,
    3.753651930694003,
    4.1278229803764495,
    4.5412727070508145,
];
/// `tanh(m)`, each within 2^-12 ulp of the double here.
const C0: [f64; 16] = [
    0.0,
    0.5368499165084192,
    0.6697790385676659,
    0.7727901596809099,
    0.8485468698902109,
    0.9018793338094322,
    0.9380815796629929,
    0.9619034241806665,
    0.9771509580467292,
    0.9866598528714942,
    0.9924382166240685,
    0.995855120028095,
    0.9978157239357602,
    0.9989024837311654,
    0.9994805596282615,
    0.9997727618244593,
];
/// `p`'s coefficients: `C[j][k]` of `r^j` in interval `k` (interval 0:
/// `P`'s, of `u^j`, `u = a²`).
const C: [[f64; 16]; 11] = [
    [
        -0.3333333333333333,
        0.7117921671449033,
        0.5513960394953732,
        0.40279536910035374,
        0.2799682095995255,
        0.1866136672474548,
        0.12000294989698394,
        0.07474180254950868,
        0.04517600518835918,
        0.0265023347316015,
        0.01506638618403848,
        0.008272579913828593,
        0.00436378106655472,
        0.002193827995708816,
        0.001038610925177119,
        0.00045442471389300015,
    ],
    [
        0.13333333333333244,
        -0.38212556550309995,
        -0.3693135092032306,
        -0.3112762976057886,
        -0.237566147924442,
        -0.1683030098968702,
        -0.11257255680358252,
        -0.07189439580180805,
        -0.04414377675052922,
        -0.02614878968703295,
        -0.014952457435456574,
        -0.008238291063027727,
        -0.004354249364021432,
        -0.0021914202337924888,
        -0.0010380714287320531,
        -0.0004543214512501034,
    ],
    [
        -0.05396825396811092,
        -0.03211997777889982,
        0.0635597672924033,
        0.10628613669821163,
        0.10826327467998503,
        0.08958445069475911,
        0.06560125861401148,
        0.044241531317989566,
        0.02807646534746086,
        0.016965849408175148,
        0.009817261463379051,
        0.005446617697455034,
        0.0028901447925063152,
        0.0014577391158644498,
        0.0006913285707975135,
        0.00030274330744140356,
    ],
    [
        0.02186948852704729,
        0.14461879590267174,
        0.08053350323989722,
        0.021621885313082134,
        -0.012677746880634708,
        -0.024693361412791968,
        -0.024015146706658098,
        -0.01859128186490491,
        -0.01272035276263888,
        -0.00802325925194548,
        -0.004758872980406091,
        -0.002677945099863266,
        -0.0014324154637526008,
        -0.0007256658122093402,
        -0.0003449456572504946,
        -0.00015123402885234048,
    ],
    [
        -0.008863235231866587,
        -0.051114325527932915,
        -0.06287299615170945,
        -0.04318688423715588,
        -0.019108580025074113,
        -0.0034440808404333366,
        0.0033278127741311766,
        0.004796769525427925,
        0.0040747943326054125,
        0.0028498854287834718,
        0.001785275507855054,
        0.0010351412155452948,
        0.0005628779880206762,
        0.0002877080767886487,
        0.00013740386439975113,
        6.0383553871282186e-05,
    ],
    [
        0.0035921223313055265,
        -0.02925722820332399,
        0.0070595466470664515,
        0.01924985463610655,
        0.015161194219667135,
        0.00759719875655817,
        0.0023816764756533215,
        -1.4588386157126329e-05,
        -0.0007225444204054571,
        -0.0007185319922230091,
        -0.0005177614709644266,
        -0.00032127544290766697,
        -0.0001809377808807603,
        -9.420193524974542e-05,
        -4.5418859491103056e-05,
        -2.0054521917985377e-05,
    ],
    [
        -0.001455766026746557,
        0.03052463171086938,
        0.016474793988758358,
        0.001028968057116292,
        -0.004682131949163494,
        -0.004107913819626978,
        -0.0021396466339161963,
        -0.0007599291569817618,
        -0.00012391894073702107,
        7.991414870352249e-05,
        0.00010502927597631025,
        7.842456945121415e-05,
        4.7906492465245726e-05,
        2.594703553208617e-05,
        1.2758717683777569e-05,
        5.687996910537436e-06,
    ],
    [
        0.0005894981007778003,
        -0.00261134846835648,
        -0.010816351013970285,
        -0.006072782311830964,
        -0.0008597482678552389,
        0.000979921003370251,
        0.0009178743069375843,
        0.00047486743375327046,
        0.00017268771464362713,
        3.770826176169126e-05,
        -5.75601009448503e-06,
        -1.308242224676005e-05,
        -1.0105507004395755e-05,
        -6.005929390357521e-06,
        -3.0809537641014095e-06,
        -1.4010851290147714e-06,
    ],
    [
        -0.0002364672705827934,
        -0.009689942845623509,
        0.00033772509720618113,
        0.0032504265927769814,
        0.0016957305314481118,
        0.00025892841305778926,
        -0.00018729857826288278,
        -0.00017468271334133048,
        -8.674524666141892e-05,
        -3.081110415079822e-05,
        -7.213717503637018e-06,
        1.1312118575429264e-07,
        1.4297538392540739e-06,
        1.1229582814062762e-06,
        6.365519908245711e-07,
        3.0208029500791883e-07,
    ],
    [
        8.842308737471872e-05,
        0.004960667930973576,
        0.0032833275209829607,
        -0.00015243882104418196,
        -0.0008331358720687649,
        -0.00037613923499004316,
        -5.179181612715634e-05,
        3.308623359712905e-05,
        2.8693042603244037e-05,
        1.3356619780314538e-05,
        4.511459371112584e-06,
        1.0465141382056851e-06,
        3.5494480003681874e-08,
        -1.401244746211021e-07,
        -1.0817856845029516e-07,
        -5.686707709559368e-08,
    ],
    [
        -2.3146017354474017e-05,
        0.0013079469664442338,
        -0.0017918268521241397,
        -0.0008253788766245206,
        9.542016477718172e-05,
        0.00018188887833765684,
        6.675050988832045e-05,
        6.91833989673661e-06,
        -5.495920542878474e-06,
        -4.09288785908117e-06,
        -1.7360721048020225e-06,
        -5.42096483283679e-07,
        -1.1732834534186105e-07,
        -4.464239467530035e-09,
        1.2710614393280282e-08,
        8.976869119821858e-09,
    ],
];
/// `2·2^(j/16)`, rounded.
const EXP2: [f64; 16] = [
    2.0,
    2.0885475648548275,
    2.1810154653305154,
    2.277577269513383,
    2.378414230005442,
    2.483715624146968,
    2.5936791093020193,
    2.7085110938737853,
    2.8284271247461903,
    2.9536522918789987,
    3.0844216508158815,
    3.2209806638985086,
    3.363585661014858,
    3.512504320746599,
    3.668016172818685,
    3.830413122794295,
];

/// `t[idx]` per lane (the low four bits of each index).
#[inline(always)]
unsafe fn pick(t: &[f64; 16], idx: __m512i) -> __m512d {
    let lo = _mm512_loadu_pd(t.as_ptr());
    let hi = _mm512_loadu_pd(t.as_ptr().add(8));
    _mm512_permutex2var_pd(lo, idx, hi)
}

/// `|tanh(a)|` for `0 ≤ a ≤ 4.7593` (the table lane; finite garbage
/// above, which the callers never keep), for `U` vectors at once, step
/// by step (the polynomial is one long chain of dependent operations;
/// interleaved, the vectors' chains overlap). (Loops, not closures: a
/// closure would not have the caller's target features.)
#[inline(always)]
unsafe fn table_lane<const U: usize>(a: [__m512d; U]) -> [__m512d; U] {
    let mut idx = [_mm512_setzero_si512(); U];
    let mut odd = [0; U];
    let mut u = [_mm512_setzero_pd(); U];
    let mut r = u;
    for i in 0..U {
        let g = _mm512_fnmadd_pd(_mm512_set1_pd(IB), a[i], _mm512_set1_pd(IA));
        // SHIFT + round(g·a - 2): the index in the low bits (SHIFT's are
        // 0), negative (wrapped) only in interval 0, where it is 0
        let t = _mm512_fmadd_pd(g, a[i], _mm512_set1_pd(SHIFT - 2.0));
        odd[i] = _mm512_cmp_pd_mask::<_CMP_LE_OQ>(a[i], _mm512_set1_pd(W0));
        idx[i] = _mm512_maskz_mov_epi64(!odd[i], _mm512_castpd_si512(t));
        u[i] = _mm512_mul_pd(a[i], a[i]);
        // r: a - m, or a² in interval 0
        r[i] = _mm512_mask_mov_pd(_mm512_sub_pd(a[i], pick(&M, idx[i])), odd[i], u[i]);
    }
    let mut p = [_mm512_setzero_pd(); U];
    for i in 0..U {
        p[i] = pick(&C[C.len() - 1], idx[i]);
    }
    for c in C[..C.len() - 1].iter().rev() {
        for i in 0..U {
            p[i] = _mm512_fmadd_pd(p[i], r[i], pick(c, idx[i]));
        }
    }
    // fma(x, p, y): x = r, y = c0, or x = a³, y = a in interval 0
    for i in 0..U {
        let x = _mm512_mask_mul_pd(r[i], odd[i], a[i], u[i]);
        let y = _mm512_mask_mov_pd(pick(&C0, idx[i]), odd[i], a[i]);
        p[i] = _mm512_fmadd_pd(x, p[i], y);
    }
    p
}

/// `|tanh(a)|` for `a ≥ 4.75` (the exp lane; any `a ≥ 0`, +inf too,
/// gives a finite value), `U` vectors at once.
#[inline(always)]
unsafe fn exp_lane<const U: usize>(a: [__m512d; U]) -> [__m512d; U] {
    let mut t = [_mm512_setzero_pd(); U];
    let mut k = t;
    let mut r = t;
    for i in 0..U {
        let z = _mm512_mul_pd(
            _mm512_min_pd(a[i], _mm512_set1_pd(SAT)),
            _mm512_set1_pd(-2.0),
        );
        t[i] = _mm512_fmadd_pd(z, _mm512_set1_pd(INV_LN2_16), _mm512_set1_pd(SHIFT));
        k[i] = _mm512_sub_pd(t[i], _mm512_set1_pd(SHIFT));
        let rh = _mm512_fnmadd_pd(k[i], _mm512_set1_pd(LN2_16_HI), z); // exact
        r[i] = _mm512_fnmadd_pd(k[i], _mm512_set1_pd(LN2_16_LO), rh);
    }
    // e^r, Taylor to r^6
    let mut e = [_mm512_set1_pd(1.0 / 720.0); U];
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        for i in 0..U {
            e[i] = _mm512_fmadd_pd(e[i], r[i], _mm512_set1_pd(c));
        }
    }
    for i in 0..U {
        // w = 2y = 2·2^(j/16)·e^r·2^⌊k/16⌋ (k = 16⌊k/16⌋ + j, j its low
        // bits)
        let w = _mm512_mul_pd(pick(&EXP2, _mm512_castpd_si512(t[i])), e[i]);
        let w = _mm512_scalef_pd(w, _mm512_mul_pd(k[i], _mm512_set1_pd(1.0 / 16.0)));
        // 1 - w(1 - w/2 + w²/4 - w³/8)
        let s = _mm512_fmadd_pd(w, _mm512_set1_pd(-0.125), _mm512_set1_pd(0.25));
        let s = _mm512_fmadd_pd(w, s, _mm512_set1_pd(-0.5));
        let s = _mm512_fmadd_pd(w, s, _mm512_set1_pd(1.0));
        e[i] = _mm512_fnmadd_pd(w, s, _mm512_set1_pd(1.0));
    }
    e
}

/// The three lanes (see the module's comment).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Table,
    Exp,
    Both,
}

/// `tanh(x)` by `kind`'s lane, `U` vectors at once.
#[inline(always)]
unsafe fn lane<const U: usize>(kind: Kind, x: [__m512d; U]) -> [__m512d; U] {
    let mut a = x;
    for v in a.iter_mut() {
        *v = _mm512_abs_pd(*v);
    }
    let mut v = match kind {
        Kind::Table => table_lane(a),
        Kind::Exp => exp_lane(a),
        Kind::Both => {
            let (mut t, e) = (table_lane(a), exp_lane(a));
            for i in 0..U {
                let small = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(a[i], _mm512_set1_pd(T_HI));
                t[i] = _mm512_mask_mov_pd(e[i], small, t[i]);
            }
            t
        }
    };
    let sign = _mm512_set1_epi64(i64::MIN);
    for i in 0..U {
        let s = _mm512_and_si512(_mm512_castpd_si512(x[i]), sign);
        v[i] = _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(v[i]), s));
    }
    v
}

/// Vectors interleaved in a lane (2 and 4 measured slower than 1 on
/// Zen 4: the lanes are bound by throughput, not by their chains).
const U: usize = 1;

/// `dst[i] = tanh(src[i])` for one chunk (`n ≤ CH`) by `kind`'s lane.
#[inline(always)]
unsafe fn run(kind: Kind, src: *const f64, dst: *mut f64, n: usize) {
    let mut i = 0;
    while i + 8 * U <= n {
        let mut x = [_mm512_setzero_pd(); U];
        for (k, x) in x.iter_mut().enumerate() {
            *x = _mm512_loadu_pd(src.add(i + 8 * k));
        }
        let y = lane(kind, x);
        for (k, y) in y.iter().enumerate() {
            _mm512_storeu_pd(dst.add(i + 8 * k), *y);
        }
        i += 8 * U;
    }
    while i < n {
        let m: __mmask8 = if n - i >= 8 {
            0xff
        } else {
            (1u8 << (n - i)) - 1
        };
        let [v] = lane(kind, [_mm512_maskz_loadu_pd(m, src.add(i))]);
        _mm512_mask_storeu_pd(dst.add(i), m, v);
        i += 8;
    }
}

/// One chunk (`n ≤ CH`): which magnitudes it has, then the lane.
#[inline(always)]
unsafe fn chunk(src: *const f64, dst: *mut f64, n: usize) {
    // the largest and smallest |x| as integers (a NaN is above +inf)
    let abs = _mm512_set1_epi64(i64::MAX);
    let (mut hi, mut lo) = (_mm512_setzero_si512(), abs);
    let mut i = 0;
    while i < n {
        let m: __mmask8 = if n - i >= 8 {
            0xff
        } else {
            (1u8 << (n - i)) - 1
        };
        let x = _mm512_and_si512(_mm512_maskz_loadu_epi64(m, src.add(i) as *const i64), abs);
        hi = _mm512_max_epu64(hi, x);
        lo = _mm512_mask_min_epu64(lo, m, lo, x);
        i += 8;
    }
    let (hi, lo) = (_mm512_reduce_max_epu64(hi), _mm512_reduce_min_epu64(lo));
    let nan = hi > f64::INFINITY.to_bits();
    let (small, large) = (lo < T_HI.to_bits(), hi >= T_HI.to_bits());
    if nan {
        // (from a copy: in place, the NaNs would be gone)
        let mut buf = [0.0f64; CH];
        std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), n);
        run(Kind::Both, buf.as_ptr(), dst, n);
        for (k, x) in buf[..n].iter().enumerate() {
            if x.is_nan() {
                *dst.add(k) = x.tanh();
            }
        }
        return;
    }
    let kind = match (small, large) {
        (_, false) => Kind::Table,
        (false, true) => Kind::Exp,
        (true, true) => Kind::Both,
    };
    run(kind, src, dst, n)
}

/// `dst[i] = tanh(src[i])` for `i < n`.
///
/// # Safety
/// AVX-512 F, DQ and VL are present; `src` has `n` readable elements,
/// `dst` room for `n`; the two are equal or disjoint.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
unsafe fn map(src: *const f64, dst: *mut f64, n: usize) {
    let mut i = 0;
    while i < n {
        let k = CH.min(n - i);
        chunk(src.add(i), dst.add(i), k);
        i += k;
    }
}

/// `dst[i] = tanh(src[i] + c)` for `i < n` (the sum rounded, as the
/// interpreter rounds it).
///
/// # Safety
/// As [`map`].
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
unsafe fn map_add(src: *const f64, dst: *mut f64, n: usize, c: f64) {
    let mut i = 0;
    while i < n {
        let k = CH.min(n - i);
        for j in i..i + k {
            *dst.add(j) = *src.add(j) + c;
        }
        chunk(dst.add(i), dst.add(i), k);
        i += k;
    }
}

/// `xs[i] = tanh(xs[i])`.
///
/// # Safety
/// AVX-512 F, DQ and VL (and AVX2, FMA) are present.
pub(super) unsafe fn apply(xs: &mut [f64]) {
    let p = xs.as_mut_ptr();
    map(p, p, xs.len())
}

/// `ys[i] = tanh(xs[i] + c)` (`tanh(xs[i])` without `c`); the slices
/// have the same length.
///
/// # Safety
/// As [`apply`].
pub(super) unsafe fn apply_to(xs: &[f64], ys: &mut [f64], c: Option<f64>) {
    let n = xs.len().min(ys.len());
    match c {
        None => map(xs.as_ptr(), ys.as_mut_ptr(), n),
        Some(c) => map_add(xs.as_ptr(), ys.as_mut_ptr(), n, c),
    }
}

// ------------------------------------------------------------------ AVX2

/// The four 64-bit lanes of `v`, lane 0 first: the AVX2 lanes' table
/// indices.
#[inline(always)]
unsafe fn lanes_u64(v: __m256i) -> [u64; 4] {
    let (lo, hi) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    [
        _mm_cvtsi128_si64(lo) as u64,
        _mm_extract_epi64::<1>(lo) as u64,
        _mm_cvtsi128_si64(hi) as u64,
        _mm_extract_epi64::<1>(hi) as u64,
    ]
}

/// `|tanh(a)|` for `a ≥ T_HI`, four lanes (any `a ≥ 0`, +inf too, gives
/// a finite value): the AVX-512 exp lane's operations, so its bits. `w =
/// 2y = 2·2^(j/16)·e^r·2^m`, `2^m` put in `w`'s exponent where AVX-512
/// uses `scalef` (the same value: `w` is normal, `a ≤ SAT`), the table
/// entry read per lane.
#[inline(always)]
unsafe fn exp256(a: __m256d) -> __m256d {
    let set = _mm256_set1_pd;
    let z = _mm256_mul_pd(_mm256_min_pd(a, set(SAT)), set(-2.0));
    let t = _mm256_fmadd_pd(z, set(INV_LN2_16), set(SHIFT));
    let k = _mm256_sub_pd(t, set(SHIFT));
    let rh = _mm256_fnmadd_pd(k, set(LN2_16_HI), z); // exact
    let r = _mm256_fnmadd_pd(k, set(LN2_16_LO), rh);
    // e^r, Taylor to r^6
    let mut e = set(1.0 / 720.0);
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        e = _mm256_fmadd_pd(e, r, set(c));
    }
    // k as an integer (t's low bits less SHIFT's), j = k mod 16
    let ki = _mm256_sub_epi64(_mm256_castpd_si256(t), _mm256_castpd_si256(set(SHIFT)));
    let j = _mm256_and_si256(ki, _mm256_set1_epi64x(15));
    let js = lanes_u64(j);
    // SAFETY: every index is below 16, the table's length.
    let th = unsafe {
        let e = |q: usize| *EXP2.get_unchecked(js[q] as usize);
        _mm256_set_pd(e(3), e(2), e(1), e(0))
    };
    // 2^m, m = floor(k/16) ≥ -58: (k + 16·1023) >> 4 is its biased
    // exponent (a shift of a positive number)
    let m = _mm256_srli_epi64::<4>(_mm256_add_epi64(ki, _mm256_set1_epi64x(16 * 1023)));
    let w = _mm256_mul_pd(
        _mm256_mul_pd(th, e),
        _mm256_castsi256_pd(_mm256_slli_epi64::<52>(m)),
    );
    // 1 - w(1 - w/2 + w²/4 - w³/8)
    let s = _mm256_fmadd_pd(w, set(-0.125), set(0.25));
    let s = _mm256_fmadd_pd(w, s, set(-0.5));
    let s = _mm256_fmadd_pd(w, s, set(1.0));
    _mm256_fnmadd_pd(w, s, set(1.0))
}

/// One interval's numbers side by side, for AVX2's look-ups: `M`, `C0`,
/// then `p`'s coefficients from the highest (`C[10]`) down to `C[0]`,
/// three zeros (a row of 16: 128 bytes).
static ROWS: [[f64; 16]; 16] = {
    let mut t = [[0.0; 16]; 16];
    let mut k = 0;
    while k < 16 {
        t[k][0] = M[k];
        t[k][1] = C0[k];
        let mut j = 0;
        while j < C.len() {
            t[k][2 + j] = C[C.len() - 1 - j][k];
            j += 1;
        }
        k += 1;
    }
    t
};

/// Columns `2c` and `2c + 1` of the rows `js` of [`ROWS`] (`c ≤ 6`, every
/// index below 16), as two vectors: [`table256`]'s look-up.
#[inline(always)]
unsafe fn pair(js: &[u64; 4], c: usize) -> (__m256d, __m256d) {
    // SAFETY: the caller's indices; `2c + 1 < 16`.
    let row = |q: usize| unsafe { ROWS.get_unchecked(js[q] as usize).as_ptr().add(2 * c) };
    let lo = _mm256_insertf128_pd::<1>(
        _mm256_castpd128_pd256(_mm_loadu_pd(row(0))),
        _mm_loadu_pd(row(2)),
    );
    let hi = _mm256_insertf128_pd::<1>(
        _mm256_castpd128_pd256(_mm_loadu_pd(row(1))),
        _mm_loadu_pd(row(3)),
    );
    (_mm256_unpacklo_pd(lo, hi), _mm256_unpackhi_pd(lo, hi))
}

/// `|tanh(a)|` for `0 ≤ a ≤ 4.7593`, four lanes: the AVX-512 table
/// lane's operations (so its bits), each lane's row of [`ROWS`] read by
/// 16-byte loads and transposed two numbers at a time (AVX2 has no
/// two-register permute; finite garbage above 4.7593, the index taken
/// mod 16, which the callers never keep).
#[inline(always)]
unsafe fn table256(a: __m256d) -> __m256d {
    let set = _mm256_set1_pd;
    let g = _mm256_fnmadd_pd(set(IB), a, set(IA));
    let t = _mm256_fmadd_pd(g, a, set(SHIFT - 2.0));
    let odd = _mm256_cmp_pd::<_CMP_LE_OQ>(a, set(W0));
    let idx = _mm256_andnot_si256(
        _mm256_castpd_si256(odd),
        _mm256_and_si256(_mm256_castpd_si256(t), _mm256_set1_epi64x(15)),
    );
    let js = lanes_u64(idx);
    let u = _mm256_mul_pd(a, a);
    let (m, c0) = pair(&js, 0);
    // r: a - m, or a² in interval 0
    let r = _mm256_blendv_pd(_mm256_sub_pd(a, m), u, odd);
    let (c10, c9) = pair(&js, 1);
    let mut p = _mm256_fmadd_pd(c10, r, c9);
    for c in 2..6 {
        let (x, y) = pair(&js, c);
        p = _mm256_fmadd_pd(p, r, x);
        p = _mm256_fmadd_pd(p, r, y);
    }
    // (column 13 is a zero of the row's padding)
    p = _mm256_fmadd_pd(p, r, pair(&js, 6).0);
    // fma(x, p, y): x = r, y = c0, or x = a³, y = a in interval 0
    let x = _mm256_blendv_pd(r, _mm256_mul_pd(a, u), odd);
    let y = _mm256_blendv_pd(c0, a, odd);
    _mm256_fmadd_pd(x, p, y)
}

/// `tanh(x)` of four lanes: the table lane where `|x| < T_HI`, the exp
/// lane elsewhere (each computed only when some lane needs it), the sign
/// `x`'s; NaN lanes get the library's `tanh` (the NaN).
#[inline(always)]
unsafe fn lanes256(x: __m256d) -> __m256d {
    let sign = _mm256_set1_pd(-0.0);
    let a = _mm256_andnot_pd(sign, x);
    // (NaN counts as large: `exp256` is defined on it, the lane is reset)
    let large = _mm256_cmp_pd::<_CMP_NLT_UQ>(a, _mm256_set1_pd(T_HI));
    let m = _mm256_movemask_pd(large);
    let t = if m != 0xf { table256(a) } else { a };
    let v = if m == 0 {
        t
    } else {
        _mm256_blendv_pd(t, exp256(a), large)
    };
    let v = _mm256_or_pd(v, _mm256_and_pd(x, sign));
    let nan = _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x);
    if _mm256_movemask_pd(nan) == 0 {
        return v;
    }
    let (mut xs, mut vs) = ([0.0; 4], [0.0; 4]);
    // SAFETY: room for four each.
    unsafe {
        _mm256_storeu_pd(xs.as_mut_ptr(), x);
        _mm256_storeu_pd(vs.as_mut_ptr(), v);
    }
    for (v, x) in vs.iter_mut().zip(xs) {
        if x.is_nan() {
            *v = x.tanh();
        }
    }
    // SAFETY: four elements.
    unsafe { _mm256_loadu_pd(vs.as_ptr()) }
}

/// `dst[i] = tanh(src[i] + c)` (`tanh(src[i])` when `!ADD`; the sum
/// rounded, as the interpreter rounds it) for `i < n` on AVX2 and FMA,
/// four lanes at a time by [`lanes256`], the tail in a padded vector.
///
/// # Safety
/// AVX2 and FMA are present; `src` points to `n` initialised doubles and
/// `dst` to room for `n`, the two equal or disjoint.
#[target_feature(enable = "avx2,fma")]
unsafe fn map256<const ADD: bool>(src: *const f64, dst: *mut f64, n: usize, c: f64) {
    let cv = _mm256_set1_pd(c);
    let mut i = 0;
    while i + 4 <= n {
        // SAFETY: `i + 4 <= n` elements at each.
        unsafe {
            let mut x = _mm256_loadu_pd(src.add(i));
            if ADD {
                x = _mm256_add_pd(x, cv);
            }
            _mm256_storeu_pd(dst.add(i), lanes256(x));
        }
        i += 4;
    }
    if i < n {
        let mut pad = [0.0; 4];
        for (k, p) in pad.iter_mut().enumerate().take(n - i) {
            // SAFETY: `i + k < n`.
            let x = unsafe { *src.add(i + k) };
            *p = if ADD { x + c } else { x };
        }
        let mut out = [0.0; 4];
        // SAFETY: four elements each.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), lanes256(_mm256_loadu_pd(pad.as_ptr()))) };
        for (k, o) in out.iter().enumerate().take(n - i) {
            // SAFETY: `i + k < n`.
            unsafe { *dst.add(i + k) = *o };
        }
    }
}

/// `xs[i] = tanh(xs[i])` at AVX2.
///
/// # Safety
/// AVX2 and FMA are present.
pub(super) unsafe fn apply256(xs: &mut [f64]) {
    let p = xs.as_mut_ptr();
    // SAFETY: the caller checked the features; in place.
    unsafe { map256::<false>(p, p, xs.len(), 0.0) }
}

/// `ys[i] = tanh(xs[i] + c)` (`tanh(xs[i])` without `c`) at AVX2; the
/// slices have the same length.
///
/// # Safety
/// AVX2 and FMA are present.
pub(super) unsafe fn apply_to256(xs: &[f64], ys: &mut [f64], c: Option<f64>) {
    let n = xs.len().min(ys.len());
    // SAFETY: the caller checked the features; `n` elements of each.
    unsafe {
        match c {
            None => map256::<false>(xs.as_ptr(), ys.as_mut_ptr(), n, 0.0),
            Some(c) => map256::<true>(xs.as_ptr(), ys.as_mut_ptr(), n, c),
        }
    }
}
