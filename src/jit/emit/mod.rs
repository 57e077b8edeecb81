//! The emission stage: Cranelift code generation following the plans of
//! [`super::schedule`], compiled with `cranelift-jit` at `opt_level=speed`
//! for the host ISA (`cranelift_native`, so FMA/AVX are used when
//! present). It never decides, it only follows the plan: [`compile`]
//! emits each nest with the back end its [`NestPlan`] names: generic
//! loops ([`loops`]), register tiles ([`tiles`]), or nothing (a skipped
//! nest); GEMM stages are library calls made by the run time, which falls
//! back on this native code.
//!
//! Every nest of the loop program becomes its own native function
//! `extern "C" fn(bufs: *const *mut f64, strides: *const i64,
//! sizes: *const i64, lo: i64, hi: i64)` ([`Entry`]): the base pointer of
//! every buffer, the strides of every axis of every buffer (in elements,
//! any sign), the named sizes (then the address of the call's
//! cancellation flag), and the range `lo..hi` of the nest's outermost
//! loop (so the caller can run a nest in pieces, on several threads; a
//! nest without loops ignores it). [`compile`] leaves out the nests the
//! run time asks it to (the native code of GEMM stages, compiled on the
//! first call that needs it: `schedule::defer_native`); a nest's
//! function is the same either way. The code is specialised for a
//! [`Layout`]: an axis the layout marks unit-stride uses the constant 1
//! instead of the stride it is passed. With more than one nest, a chain
//! function runs them all in order ([`Native::chain`]).
//!
//! Within the generic loops' plan, [`loops`] still shapes the code of
//! each loop as it emits it: loop-invariant code motion, peeling of
//! border iterations, `f64x2` vectors for an innermost loop whose body
//! allows them, unrolling, all within the function's code-size budget
//! ([`crate::jit::Options::copy_nodes`]). These depend on what has been
//! emitted so far (the budget left, the loops around), so they are made
//! there, by the rules its module doc lists; the choices of a plan (back
//! end, loop order, domains, interchange, blocking, tiles, polls) are not
//! revisited.
//!
//! Owns the Cranelift module and the generated code; it must not run
//! code or bind arguments (`run`), and must not change a plan.

pub mod common;
pub mod loops;
pub mod tiles;

use super::ir::{Layout, LoopProgram, SizeRef};
use super::schedule::{Backend, NestPlan};
use crate::jit::options::Options;
use crate::syntax::ast::{Func, RedOp};
use common::EntryParams;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};
use std::sync::OnceLock;

/// The native entry point of one nest: buffers, strides, sizes, and the
/// range `lo..hi` of the nest's outermost loop.
pub type Entry = unsafe extern "C" fn(*const *mut f64, *const i64, *const i64, i64, i64);

extern "C" fn f_exp(x: f64) -> f64 {
    x.exp()
}

extern "C" fn f_log(x: f64) -> f64 {
    x.ln()
}

extern "C" fn f_sin(x: f64) -> f64 {
    x.sin()
}

extern "C" fn f_cos(x: f64) -> f64 {
    x.cos()
}

extern "C" fn f_tanh(x: f64) -> f64 {
    x.tanh()
}

extern "C" fn f_max(x: f64, y: f64) -> f64 {
    Func::Max.apply(&[x, y])
}

extern "C" fn f_min(x: f64, y: f64) -> f64 {
    Func::Min.apply(&[x, y])
}

extern "C" fn f_erf(x: f64) -> f64 {
    Func::Erf.apply(&[x])
}

extern "C" fn f_pow(x: f64, y: f64) -> f64 {
    Func::Pow.apply(&[x, y])
}

const CALLS: &[(&str, Func, usize)] = &[
    ("einsat_exp", Func::Exp, 1),
    ("einsat_log", Func::Log, 1),
    ("einsat_sin", Func::Sin, 1),
    ("einsat_cos", Func::Cos, 1),
    ("einsat_tanh", Func::Tanh, 1),
    ("einsat_max", Func::Max, 2),
    ("einsat_min", Func::Min, 2),
    ("einsat_erf", Func::Erf, 1),
    ("einsat_pow", Func::Pow, 2),
];

/// The slice kernels of [`crate::vmath`] (`dst[0..n] = f(src[0..n])`),
/// called by staged loops ([`loops`]).
/// With each, its form with an addend (`dst[0..n] = f(src[0..n] + c)`)
/// and its fused sum (`Σ f(src[0..n] + c)`).
const VCALLS: &[(&str, &str, &str, Func)] = &[
    (
        "einsat_vexp",
        "einsat_vexp_add",
        "einsat_vsum_exp_add",
        Func::Exp,
    ),
    (
        "einsat_vlog",
        "einsat_vlog_add",
        "einsat_vsum_log_add",
        Func::Log,
    ),
    (
        "einsat_vsin",
        "einsat_vsin_add",
        "einsat_vsum_sin_add",
        Func::Sin,
    ),
    (
        "einsat_vcos",
        "einsat_vcos_add",
        "einsat_vsum_cos_add",
        Func::Cos,
    ),
    (
        "einsat_vtanh",
        "einsat_vtanh_add",
        "einsat_vsum_tanh_add",
        Func::Tanh,
    ),
    (
        "einsat_verf",
        "einsat_verf_add",
        "einsat_vsum_erf_add",
        Func::Erf,
    ),
];

/// The max/min reductions of a run in [`crate::vmath`]
/// (`src, n -> f64`), called by the generic loops ([`loops`]).
const RCALLS: &[(&str, RedOp)] = &[("einsat_vmax", RedOp::Max), ("einsat_vmin", RedOp::Min)];

/// Compiled code; the module owns the executable memory and lives as long
/// as the kernel.
pub struct Native {
    module: Option<JITModule>,
    /// One entry per nest of the loop program, in the same order; `None`
    /// for a nest whose code was left out of this compile (`defer` of
    /// `compile`).
    pub entries: Vec<Option<Entry>>,
    /// With more than one nest and none left out: an entry running every
    /// nest not skipped in order, each over its whole outermost range, on
    /// the calling thread (its `lo` and `hi` are ignored).
    pub chain: Option<Entry>,
    /// Per nest: it does nothing in this layout (a column sum's nest that
    /// is not computed ahead, `schedule::with_columns`); not run at all.
    pub skip: Vec<bool>,
    /// For code with nests left out: the same layout's code with every
    /// nest, once the run time has compiled it (`run::kernel`).
    pub complete: OnceLock<std::sync::Arc<Native>>,
}

impl Native {
    /// Whether some nest's code was left out of this compile.
    pub fn partial(&self) -> bool {
        self.entries.iter().any(Option::is_none)
    }
}

impl Drop for Native {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: `entry` points into this module's memory and is only
            // reachable through this `Native`, which is going away; no
            // call into the code can be running (calls borrow the kernel).
            unsafe { m.free_memory() };
        }
    }
}

// SAFETY: after `finalize_definitions` the module is never mutated again; the
// code it owns is immutable and may be called from any thread.
unsafe impl Send for Native {}
unsafe impl Sync for Native {}

/// Debugging overrides from the environment, read once per process (the
/// one place the back end reads the environment): `EINSAT_JIT_DUMP=1`
/// prints each nest's machine code as it is compiled;
/// `EINSAT_JIT_VERIFY=1` runs Cranelift's IR verifier (always on in
/// builds with debug assertions). Neither changes the generated code.
#[derive(Clone, Copy, Debug)]
struct DebugEnv {
    dump: bool,
    verify: bool,
}

fn debug_env() -> DebugEnv {
    static ENV: OnceLock<DebugEnv> = OnceLock::new();
    *ENV.get_or_init(|| DebugEnv {
        dump: std::env::var_os("EINSAT_JIT_DUMP").is_some(),
        verify: cfg!(debug_assertions)
            || std::env::var_os("EINSAT_JIT_VERIFY").is_some_and(|v| v != "0"),
    })
}

/// The host ISA with einsat's Cranelift settings, built once per process
/// (detecting the host's features and building the flags is the same
/// work for every kernel). The settings:
/// - `opt_level=speed` (the e-graph pass: GVN, LICM of pure arithmetic,
///   the placement of the movable loads of [`tiles`]);
/// - inline stack probes: frames larger than a page (the packing buffers
///   of `tiles`) touch every page in order, so a thread's guard page is
///   never jumped over;
/// - Cranelift's IR verifier only in builds with debug assertions or with
///   `EINSAT_JIT_VERIFY=1` ([`DebugEnv`]; `.ci/run` sets it for the tests
///   and `difftest`): it checks einsat's IR without changing the code,
///   and took about a quarter of compile time
///   (`cargo run --release --example compiletime`).
fn host_isa() -> Result<cranelift_codegen::isa::OwnedTargetIsa, String> {
    static ISA: OnceLock<Result<cranelift_codegen::isa::OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(|| {
        let mut flags = settings::builder();
        let set = |f: &mut settings::Builder, k: &str, v: &str| {
            f.set(k, v)
                .map_err(|e| format!("cranelift setting {k}: {e}"))
        };
        set(&mut flags, "opt_level", "speed")?;
        set(&mut flags, "is_pic", "false")?;
        set(&mut flags, "enable_probestack", "true")?;
        set(&mut flags, "probestack_strategy", "inline")?;
        let verify = debug_env().verify;
        set(
            &mut flags,
            "enable_verifier",
            if verify { "true" } else { "false" },
        )?;
        cranelift_native::builder()
            .map_err(|e| format!("host ISA: {e}"))?
            .finish(settings::Flags::new(flags))
            .map_err(|e| format!("host ISA: {e}"))
    })
    .clone()
}

/// A JIT module for the host with the scalar functions' symbols, and
/// their declarations (imported by the generic loops' code).
#[allow(clippy::type_complexity)]
/// The imported scalar functions.
type CallIds = Vec<(Func, FuncId)>;
/// The imported slice kernels, plain, with an addend, and summed.
type VCallIds = Vec<(Func, FuncId, FuncId, FuncId)>;
/// The imported reductions of a run.
type RCallIds = Vec<(RedOp, FuncId)>;

/// The imported moment kernels of [`crate::vmath`]: `Σ x`, `Σ (x + c)²`
/// and the affine maps of a run.
#[derive(Clone, Copy)]
struct MomentIds {
    sum: FuncId,
    sum_sq: FuncId,
    affine: FuncId,
    /// `pow` of two runs and of a run and a constant exponent
    /// (`einsat_vpow`, `einsat_vpow_const`).
    pow: (FuncId, FuncId),
}

type Imports = (JITModule, CallIds, VCallIds, RCallIds, FuncId, MomentIds);

/// `kt`: the slice kernels' number type, `F64` or `F32` (their `_f32`
/// forms, [`crate::vmath`]'s single-precision module).
fn new_module(kt: types::Type) -> Result<Imports, String> {
    let sfx = if kt == types::F32 { "_f32" } else { "" };
    let name_of = |n: &str| format!("{n}{sfx}");
    let isa = host_isa()?;
    let mut jb = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    jb.symbol("einsat_exp", f_exp as *const u8);
    jb.symbol("einsat_log", f_log as *const u8);
    jb.symbol("einsat_sin", f_sin as *const u8);
    jb.symbol("einsat_cos", f_cos as *const u8);
    jb.symbol("einsat_tanh", f_tanh as *const u8);
    jb.symbol("einsat_max", f_max as *const u8);
    jb.symbol("einsat_min", f_min as *const u8);
    jb.symbol("einsat_erf", f_erf as *const u8);
    jb.symbol("einsat_pow", f_pow as *const u8);
    jb.symbol("einsat_vexp", crate::vmath::einsat_vexp as *const u8);
    jb.symbol("einsat_vlog", crate::vmath::einsat_vlog as *const u8);
    jb.symbol("einsat_vsin", crate::vmath::einsat_vsin as *const u8);
    jb.symbol("einsat_vcos", crate::vmath::einsat_vcos as *const u8);
    jb.symbol("einsat_vtanh", crate::vmath::einsat_vtanh as *const u8);
    jb.symbol(
        "einsat_vexp_add",
        crate::vmath::einsat_vexp_add as *const u8,
    );
    jb.symbol(
        "einsat_vlog_add",
        crate::vmath::einsat_vlog_add as *const u8,
    );
    jb.symbol(
        "einsat_vsin_add",
        crate::vmath::einsat_vsin_add as *const u8,
    );
    jb.symbol(
        "einsat_vcos_add",
        crate::vmath::einsat_vcos_add as *const u8,
    );
    jb.symbol(
        "einsat_vtanh_add",
        crate::vmath::einsat_vtanh_add as *const u8,
    );
    for (name, f) in [
        (
            "einsat_vsum_exp_add",
            crate::vmath::einsat_vsum_exp_add as *const u8,
        ),
        (
            "einsat_vsum_log_add",
            crate::vmath::einsat_vsum_log_add as *const u8,
        ),
        (
            "einsat_vsum_sin_add",
            crate::vmath::einsat_vsum_sin_add as *const u8,
        ),
        (
            "einsat_vsum_cos_add",
            crate::vmath::einsat_vsum_cos_add as *const u8,
        ),
        (
            "einsat_vsum_tanh_add",
            crate::vmath::einsat_vsum_tanh_add as *const u8,
        ),
        ("einsat_vmax", crate::vmath::einsat_vmax as *const u8),
        ("einsat_vmin", crate::vmath::einsat_vmin as *const u8),
        ("einsat_vdiv", crate::vmath::einsat_vdiv as *const u8),
        ("einsat_vsum", crate::vmath::einsat_vsum as *const u8),
        (
            "einsat_vsumsq_add",
            crate::vmath::einsat_vsumsq_add as *const u8,
        ),
        ("einsat_vaffine", crate::vmath::einsat_vaffine as *const u8),
        ("einsat_verf", crate::vmath::einsat_verf as *const u8),
        (
            "einsat_verf_add",
            crate::vmath::einsat_verf_add as *const u8,
        ),
        (
            "einsat_vsum_erf_add",
            crate::vmath::einsat_vsum_erf_add as *const u8,
        ),
        ("einsat_vpow", crate::vmath::einsat_vpow as *const u8),
        (
            "einsat_vpow_const",
            crate::vmath::einsat_vpow_const as *const u8,
        ),
    ] {
        jb.symbol(name, f);
    }
    // the `f32` forms (`Precision::F32`), named with `_f32`
    for (name, f) in [
        (
            "einsat_vexp_f32",
            crate::vmath::einsat_vexp_f32 as *const u8,
        ),
        (
            "einsat_vlog_f32",
            crate::vmath::einsat_vlog_f32 as *const u8,
        ),
        (
            "einsat_vsin_f32",
            crate::vmath::einsat_vsin_f32 as *const u8,
        ),
        (
            "einsat_vcos_f32",
            crate::vmath::einsat_vcos_f32 as *const u8,
        ),
        (
            "einsat_vtanh_f32",
            crate::vmath::einsat_vtanh_f32 as *const u8,
        ),
        (
            "einsat_vexp_add_f32",
            crate::vmath::einsat_vexp_add_f32 as *const u8,
        ),
        (
            "einsat_vlog_add_f32",
            crate::vmath::einsat_vlog_add_f32 as *const u8,
        ),
        (
            "einsat_vsin_add_f32",
            crate::vmath::einsat_vsin_add_f32 as *const u8,
        ),
        (
            "einsat_vcos_add_f32",
            crate::vmath::einsat_vcos_add_f32 as *const u8,
        ),
        (
            "einsat_vtanh_add_f32",
            crate::vmath::einsat_vtanh_add_f32 as *const u8,
        ),
        (
            "einsat_vsum_exp_add_f32",
            crate::vmath::einsat_vsum_exp_add_f32 as *const u8,
        ),
        (
            "einsat_vsum_log_add_f32",
            crate::vmath::einsat_vsum_log_add_f32 as *const u8,
        ),
        (
            "einsat_vsum_sin_add_f32",
            crate::vmath::einsat_vsum_sin_add_f32 as *const u8,
        ),
        (
            "einsat_vsum_cos_add_f32",
            crate::vmath::einsat_vsum_cos_add_f32 as *const u8,
        ),
        (
            "einsat_vsum_tanh_add_f32",
            crate::vmath::einsat_vsum_tanh_add_f32 as *const u8,
        ),
        (
            "einsat_verf_f32",
            crate::vmath::einsat_verf_f32 as *const u8,
        ),
        (
            "einsat_verf_add_f32",
            crate::vmath::einsat_verf_add_f32 as *const u8,
        ),
        (
            "einsat_vsum_erf_add_f32",
            crate::vmath::einsat_vsum_erf_add_f32 as *const u8,
        ),
        (
            "einsat_vmax_f32",
            crate::vmath::einsat_vmax_f32 as *const u8,
        ),
        (
            "einsat_vmin_f32",
            crate::vmath::einsat_vmin_f32 as *const u8,
        ),
        (
            "einsat_vdiv_f32",
            crate::vmath::einsat_vdiv_f32 as *const u8,
        ),
        (
            "einsat_vsum_f32",
            crate::vmath::einsat_vsum_f32 as *const u8,
        ),
        (
            "einsat_vsumsq_add_f32",
            crate::vmath::einsat_vsumsq_add_f32 as *const u8,
        ),
        (
            "einsat_vaffine_f32",
            crate::vmath::einsat_vaffine_f32 as *const u8,
        ),
    ] {
        jb.symbol(name, f);
    }
    let mut module = JITModule::new(jb);
    let mut calls: CallIds = Vec::new();
    for (name, f, arity) in CALLS {
        let mut sig = module.make_signature();
        for _ in 0..*arity {
            sig.params.push(AbiParam::new(types::F64));
        }
        sig.returns.push(AbiParam::new(types::F64));
        let id = module
            .declare_function(name, Linkage::Import, &sig)
            .map_err(|e| e.to_string())?;
        calls.push((*f, id));
    }
    let ptr = module.target_config().pointer_type();
    let mut vcalls: VCallIds = Vec::new();
    for (name, name_add, name_sum, f) in VCALLS {
        // (src, dst, n): `dst[0..n] = f(src[0..n])`
        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(ptr));
        sig.params.push(AbiParam::new(ptr));
        sig.params.push(AbiParam::new(types::I64));
        let id = module
            .declare_function(&name_of(name), Linkage::Import, &sig)
            .map_err(|e| e.to_string())?;
        // (src, dst, n, c): `dst[0..n] = f(src[0..n] + c)`
        sig.params.push(AbiParam::new(kt));
        let id_add = module
            .declare_function(&name_of(name_add), Linkage::Import, &sig)
            .map_err(|e| e.to_string())?;
        // (src, n, c) -> f64: `Σ f(src[0..n] + c)`
        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(ptr));
        sig.params.push(AbiParam::new(types::I64));
        sig.params.push(AbiParam::new(kt));
        sig.returns.push(AbiParam::new(kt));
        let id_sum = module
            .declare_function(&name_of(name_sum), Linkage::Import, &sig)
            .map_err(|e| e.to_string())?;
        vcalls.push((*f, id, id_add, id_sum));
    }
    let mut rcalls: RCallIds = Vec::new();
    for (name, op) in RCALLS {
        // (src, n) -> f64: the reduction of `src[0..n]`
        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(ptr));
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(kt));
        let id = module
            .declare_function(&name_of(name), Linkage::Import, &sig)
            .map_err(|e| e.to_string())?;
        rcalls.push((*op, id));
    }
    // (src, dst, n, c): `dst[0..n] = src[0..n] / c`
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(kt));
    let vdiv = module
        .declare_function(&name_of("einsat_vdiv"), Linkage::Import, &sig)
        .map_err(|e| e.to_string())?;
    // (src, n) -> f64: `Σ src[0..n]`
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(kt));
    let sum = module
        .declare_function(&name_of("einsat_vsum"), Linkage::Import, &sig)
        .map_err(|e| e.to_string())?;
    // (src, n, c) -> f64: `Σ (src[0..n] + c)²`
    sig.params.push(AbiParam::new(kt));
    let sum_sq = module
        .declare_function(&name_of("einsat_vsumsq_add"), Linkage::Import, &sig)
        .map_err(|e| e.to_string())?;
    // (src, dst, n, c, d, kind): `dst[0..n] = kind(src[0..n], c, d)`
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(kt));
    sig.params.push(AbiParam::new(kt));
    sig.params.push(AbiParam::new(types::I64));
    let affine = module
        .declare_function(&name_of("einsat_vaffine"), Linkage::Import, &sig)
        .map_err(|e| e.to_string())?;
    // (x, y, dst, n): `dst[0..n] = pow(x[0..n], y[0..n])`
    let mut sig = module.make_signature();
    for _ in 0..3 {
        sig.params.push(AbiParam::new(ptr));
    }
    sig.params.push(AbiParam::new(types::I64));
    let vpow = module
        .declare_function("einsat_vpow", Linkage::Import, &sig)
        .map_err(|e| e.to_string())?;
    // (x, dst, n, c): `dst[0..n] = pow(x[0..n], c)`
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::F64));
    let vpow_const = module
        .declare_function("einsat_vpow_const", Linkage::Import, &sig)
        .map_err(|e| e.to_string())?;
    let moments = MomentIds {
        sum,
        sum_sq,
        affine,
        pow: (vpow, vpow_const),
    };
    Ok((module, calls, vcalls, rcalls, vdiv, moments))
}

/// Where each buffer's strides start in the strides array.
pub(crate) fn stride_starts(p: &LoopProgram) -> Vec<usize> {
    let mut at = Vec::with_capacity(p.bufs.len());
    let mut off = 0usize;
    for buf in &p.bufs {
        at.push(off);
        off += buf.dims.len();
    }
    at
}

/// The entry signature of every nest's function (and the chain's): three
/// pointers (buffers, strides, sizes) and two `i64`s (`lo`, `hi`).
fn entry_signature(sig: &mut cranelift_codegen::ir::Signature, ptr: types::Type) {
    sig.params.clear();
    for _ in 0..3 {
        sig.params.push(AbiParam::new(ptr));
    }
    for _ in 0..2 {
        sig.params.push(AbiParam::new(types::I64));
    }
}

/// Compile a loop program's nests as `plans` say ([`NestPlan`], one per
/// nest in order, all for `layout`), with `opts`' code-size budget,
/// leaving out the nests `defer` marks (as `schedule::defer_native`
/// decided; empty: none): their entries are `None`, and there is no
/// chain. A nest's function is the same whether others are left out or
/// not.
pub fn compile(
    p: &LoopProgram,
    plans: &[NestPlan<'_>],
    layout: &Layout,
    opts: &Options,
    defer: &[bool],
) -> Result<Native, String> {
    let kt = if opts.precision == crate::precision::Precision::F32 {
        types::F32
    } else {
        types::F64
    };
    let (mut module, calls, vcalls, rcalls, vdiv, moments) = new_module(kt)?;
    let tcfg = module.target_config();
    let ptr = tcfg.pointer_type();
    let stride_at = stride_starts(p);
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut ids = Vec::with_capacity(plans.len());
    let mut skip = Vec::with_capacity(plans.len());
    for (k, plan) in plans.iter().enumerate() {
        skip.push(matches!(plan.backend, Backend::Skip));
        if defer.get(k).copied().unwrap_or(false) {
            ids.push(None);
            continue;
        }
        entry_signature(&mut ctx.func.signature, ptr);
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            // every block is sealed as soon as its predecessors are known
            // (see `loops`), so the SSA construction creates block
            // parameters only at loop heads
            b.seal_block(entry);
            let e = {
                let ps = b.block_params(entry);
                EntryParams {
                    bufs: ps[0],
                    strides: ps[1],
                    sizes: ps[2],
                    lo: ps[3],
                    hi: ps[4],
                }
            };
            match &plan.backend {
                Backend::Skip => {
                    b.ins().return_(&[]);
                }
                Backend::Tiles(_) if opts.precision.is_int() => {
                    return Err(
                        "register tiles are written for f64 and f32 (the schedule never plans them in integer formats)"
                            .into(),
                    );
                }
                Backend::Tiles(t) => {
                    let ft = match opts.precision {
                        crate::precision::Precision::F32 => types::F32,
                        _ => types::F64,
                    };
                    tiles::emit(&mut b, p, layout, &stride_at, e, t, plan.poll, ft)
                }
                Backend::Loops(sched) => {
                    let mut funcs = Vec::new();
                    for (f, id) in &calls {
                        funcs.push((*f, module.declare_func_in_func(*id, b.func)));
                    }
                    let mut vfuncs = Vec::new();
                    // (in F32 the slice kernels' `f32` forms)
                    for (f, id, id_add, id_sum) in &vcalls {
                        vfuncs.push(loops::VFunc {
                            f: *f,
                            map: module.declare_func_in_func(*id, b.func),
                            map_add: module.declare_func_in_func(*id_add, b.func),
                            sum_add: module.declare_func_in_func(*id_sum, b.func),
                        });
                    }
                    let vreduce = rcalls
                        .iter()
                        .map(|(op, id)| (*op, module.declare_func_in_func(*id, b.func)))
                        .collect();
                    let at = loops::At {
                        ptr,
                        ft: match opts.precision {
                            crate::precision::Precision::F64 => types::F64,
                            crate::precision::Precision::F32 => types::F32,
                            crate::precision::Precision::I64 => types::I64,
                            crate::precision::Precision::I32 => types::I32,
                        },
                        layout,
                        stride_at: &stride_at,
                        entry: e,
                        funcs,
                        copy_nodes: opts.copy_nodes,
                        vfuncs,
                        vreduce,
                        vdiv: module.declare_func_in_func(vdiv, b.func),
                        vsum: module.declare_func_in_func(moments.sum, b.func),
                        vsum_sq: module.declare_func_in_func(moments.sum_sq, b.func),
                        vaffine: module.declare_func_in_func(moments.affine, b.func),
                        vpow: (
                            module.declare_func_in_func(moments.pow.0, b.func),
                            module.declare_func_in_func(moments.pow.1, b.func),
                        ),
                    };
                    b = loops::emit(b, p, &plan.nest, sched, at, plan.poll, plan.row_sum);
                }
            }
            b.seal_all_blocks();
            b.finalize(tcfg);
        }
        ids.push(Some(define(
            &mut module,
            &mut ctx,
            &format!("nest{k}"),
            Some(k),
        )?));
    }
    let all: Option<Vec<FuncId>> = ids.iter().copied().collect();
    let chain = match all {
        Some(all) if all.len() > 1 => {
            Some(chain(&mut module, &mut ctx, &mut fctx, p, &all, &skip)?)
        }
        _ => None,
    };
    module.finalize_definitions().map_err(|e| e.to_string())?;
    // SAFETY: as for the entries below.
    let chain = chain.map(|id| unsafe {
        std::mem::transmute::<*const u8, Entry>(module.get_finalized_function(id))
    });
    let entries = ids
        .into_iter()
        .map(|id| {
            id.map(|id| {
                let code = module.get_finalized_function(id);
                // SAFETY: `code` was compiled from a function with exactly
                // this signature (three pointers and two i64s, no result).
                unsafe { std::mem::transmute::<*const u8, Entry>(code) }
            })
        })
        .collect();
    Ok(Native {
        module: Some(module),
        entries,
        chain,
        skip,
        complete: OnceLock::new(),
    })
}

/// Declare and define the function built in `ctx` as `name` (local),
/// recording its IR text ([`captured`]) and, with `EINSAT_JIT_DUMP`, printing
/// its machine code (nest `nest`).
fn define(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    name: &str,
    nest: Option<usize>,
) -> Result<FuncId, String> {
    let id = module
        .declare_function(name, Linkage::Local, &ctx.func.signature)
        .map_err(|e| e.to_string())?;
    capture(&ctx.func);
    let dump = nest.is_some() && debug_env().dump;
    if dump {
        ctx.set_disasm(true);
    }
    module
        .define_function(id, ctx)
        .map_err(|e| format!("cranelift: {e:?}"))?;
    if let (true, Some(k)) = (dump, nest) {
        if let Some(c) = ctx.compiled_code().and_then(|c| c.vcode.clone()) {
            eprintln!("; nest {k}\n{c}");
        }
    }
    module.clear_context(ctx);
    Ok(id)
}

/// The chain function: the signature of a nest's entry (`lo`, `hi`
/// unused), calling every nest's entry but those of `skip` in order over
/// the whole range
/// `0..n0` of its outermost loop (`n0` read from the sizes as the caller
/// would resolve it; 1 without a `gen`), so a call whose nests all run on
/// the calling thread costs one indirect call, not one per nest.
fn chain(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    p: &LoopProgram,
    ids: &[FuncId],
    skip: &[bool],
) -> Result<FuncId, String> {
    let ptr = module.target_config().pointer_type();
    entry_signature(&mut ctx.func.signature, ptr);
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let (bp, sp, zp) = {
            let ps = b.block_params(entry);
            (ps[0], ps[1], ps[2])
        };
        let mf = MemFlagsData::trusted();
        let zero = b.ins().iconst(types::I64, 0);
        for ((nest, id), _) in p.nests.iter().zip(ids).zip(skip).filter(|(_, s)| !**s) {
            let callee = module.declare_func_in_func(*id, b.func);
            let n0 = match nest.vars.first().map(|(_, n)| n) {
                None => b.ins().iconst(types::I64, 1),
                Some(SizeRef::Lit(n)) => b.ins().iconst(types::I64, *n),
                Some(SizeRef::Named(k)) => b.ins().load(types::I64, mf, zp, (*k * 8) as i32),
            };
            b.ins().call(callee, &[bp, sp, zp, zero, n0]);
        }
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(module.target_config());
    }
    define(module, ctx, "chain", None)
}

thread_local! {
    /// Where [`capture`] records the Cranelift IR of each function compiled
    /// on this thread (`None`: not recorded), for [`super::clif_text`].
    static CAPTURED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

/// Record `func`'s IR text if this thread asked for it ([`captured`]).
fn capture(func: &cranelift_codegen::ir::Function) {
    CAPTURED.with(|c| {
        if let Some(v) = c.borrow_mut().as_mut() {
            v.push(func.display().to_string());
        }
    });
}

/// Run `f` and return, with its result, the Cranelift IR text of every
/// function it compiled on this thread, in order.
pub(crate) fn captured<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let old = CAPTURED.with(|c| c.replace(Some(Vec::new())));
    let r = f();
    let text = CAPTURED.with(|c| c.replace(old)).unwrap_or_default();
    (r, text)
}
