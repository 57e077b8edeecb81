//! The constants of `exp` in `f32` lanes that the AVX2 kernel (`avx2.rs`,
//! a sixteen-entry table) and the AVX-512 kernel (`avx512.rs`, 32
//! entries) share: the rounding shift, the clamp, the subnormal band and
//! the tables of `2^(j/32)` with their corrections; the sixteen-entry
//! tables are the even entries of the 32-entry ones, derived here at
//! compile time so the two kernels cannot drift apart; and the scalar
//! fallback both hand their hard lanes to ([`library_exp`]).
//!
//! Owns these constants and that fallback; uses nothing.

/// `1.5·2^23`: `y + SHIFT32` rounds `y` to an integer, `k`, in the low
/// bits.
pub(super) const SHIFT32: f32 = 12_582_912.0;
/// The clamp: `e^100` overflows `f32`, `e^-110` rounds to +0 in it.
pub(super) const HI32: f32 = 100.0;
pub(super) const LO32: f32 = -110.0;
/// The subnormal band: `e^x` of `x` in `(BAND_LO, BAND_HI)` is subnormal
/// (or next to it), computed by the library one lane at a time; below
/// it `e^x` rounds to +0.
pub(super) const BAND_LO: f32 = -104.0;
pub(super) const BAND_HI: f32 = -87.33;
/// A double's rounding to `f32` is decided by the low `MID_BITS` bits of
/// its significand: `2^(MID_BITS - 1)` there is a midpoint. A hard lane
/// whose `f64` value (the kernels' `double_lanes`) is within `NEAR`
/// doubles of one takes the library instead.
pub(super) const MID_BITS: u32 = 29;
pub(super) const NEAR: i64 = 2;

/// `out[k]` set to the library's `e^xs[k]` rounded to `f32` (the
/// interpreter's `F32` value) for each bit `k` set in `lanes`.
pub(super) fn library_exp(xs: &[f32], out: &mut [f32], lanes: u32) {
    let mut m = lanes;
    while m != 0 {
        let k = m.trailing_zeros() as usize;
        out[k] = f64::from(xs[k]).exp() as f32;
        m &= m - 1;
    }
}

/// `2^(j/32)` rounded to `f32` (`H32`), and `2^(j/32)/H32[j] - 1` rounded
/// (`C32`, below `2^-24`).
pub(super) static H32: [f32; 32] = [
    1.0,
    1.0218972,
    1.0442737,
    1.0671405,
    1.0905077,
    1.1143868,
    1.1387886,
    1.1637249,
    1.1892071,
    1.2152474,
    1.2418578,
    1.269051,
    1.2968396,
    1.3252367,
    1.3542556,
    1.38391,
    std::f32::consts::SQRT_2,
    1.4451808,
    1.4768262,
    1.5091645,
    1.5422108,
    1.5759809,
    1.6104903,
    1.6457555,
    1.6817929,
    1.7186193,
    1.7562522,
    1.7947091,
    1.8340081,
    1.8741677,
    1.9152066,
    1.9571441,
];
pub(super) static C32: [f32; 32] = [
    0.0,
    -4.7084576e-8,
    4.628547e-8,
    -5.5604225e-8,
    -1.19921575e-8,
    -4.8776062e-8,
    4.7297824e-8,
    -3.4814427e-8,
    3.193418e-8,
    -2.6886665e-8,
    3.6210572e-8,
    1.118421e-9,
    -3.099072e-8,
    -2.638301e-8,
    -7.475213e-9,
    -4.2456357e-8,
    1.7114271e-8,
    2.3001967e-8,
    -3.0476834e-8,
    -1.6538538e-8,
    5.233334e-9,
    -3.5920646e-8,
    6.1075918e-9,
    -3.1140544e-8,
    -1.4719605e-8,
    -2.8218102e-8,
    -5.258795e-9,
    -6.3603873e-9,
    -6.1282597e-9,
    -2.4880409e-8,
    5.1406093e-9,
    -8.697267e-9,
];

/// `2^(j/16)` rounded to `f32`, and `2^(j/16)/H16[j] - 1` rounded: the
/// even entries of [`H32`] and [`C32`].
pub(super) static H16: [f32; 16] = evens(&H32);
pub(super) static C16: [f32; 16] = evens(&C32);

/// The entries `0, 2, 4, …` of `t`.
const fn evens(t: &[f32; 32]) -> [f32; 16] {
    let mut out = [0.0f32; 16];
    let mut j = 0;
    while j < 16 {
        out[j] = t[2 * j];
        j += 1;
    }
    out
}
