//! The native engine: normal-form functions compiled with Cranelift to loops
//! over strided `ndarray` buffers.
//!
//! [`compile`] type-checks, lowers to the loop IR ([`loopir`]) and generates
//! machine code ([`codegen`]); kernels are cached by program text.
//! [`Kernel::call`] allocates the result, [`Kernel::call_into`] writes into
//! the caller's buffers. Both check the arguments exactly as the
//! interpreter's call boundary does ([`crate::interp::bind`]: arity, rank,
//! shapes, size names, pairs of arrays for pair parameters) and check the
//! output's shape, before any native code runs: native code only ever
//! touches the buffers it was given, within their shapes.

pub mod codegen;
pub mod dense;
pub mod gemm;
pub mod loopir;

use crate::error::{Error, Result};
use crate::interp::value::checked_elements;
use crate::interp::{self, Boundary, Value};
use crate::syntax::ast::{Function, Size};
use crate::syntax::print_function;
use crate::types;
use loopir::{BufKind, LoopProgram, SizeRef};
use ndarray::{ArrayD, IxDyn};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Options of the native engine (part of the compile cache's key).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Run matrix products on the GEMM library (else generated loops do
    /// all the work).
    pub gemm: bool,
    /// Threads a call may use (0: all cores).
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            gemm: true,
            threads: 0,
        }
    }
}

/// How many layouts a kernel keeps specialised native code for; calls with
/// further layouts run the generic code (every stride read at run time).
pub const MAX_LAYOUTS: usize = 8;

/// A compiled function.
///
/// Native code is specialised for the layout of the buffers it is called
/// with ([`loopir::Layout`]: which axes have unit stride). [`compile`]
/// generates the code for C-order arguments; a call with another layout
/// compiles (once) code for that layout, up to [`MAX_LAYOUTS`] of them, and
/// then falls back to the generic code.
pub struct Kernel {
    func: Function,
    prog: LoopProgram,
    /// Native code per layout; the first is C order.
    natives: Mutex<Vec<(loopir::Layout, Arc<codegen::Native>)>>,
    /// Per nest: the GEMM stage that runs it instead of native code.
    gemm: Vec<Option<gemm::Plan>>,
    opts: Options,
    result: Boundary,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({})", self.func.name)
    }
}

fn cache() -> &'static Mutex<HashMap<String, Arc<Kernel>>> {
    static C: OnceLock<Mutex<HashMap<String, Arc<Kernel>>>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Compile a function in normal form (cached: the same function compiles
/// once).
pub fn compile(f: &Function) -> Result<Arc<Kernel>> {
    compile_with(f, &Options::default())
}

/// Compile with options (cached by program text and options).
pub fn compile_with(f: &Function, opts: &Options) -> Result<Arc<Kernel>> {
    let key = format!("{opts:?}\n{}", print_function(f));
    if let Some(k) = cache()
        .lock()
        .map_err(|_| jit_err("cache poisoned"))?
        .get(&key)
    {
        return Ok(k.clone());
    }
    let k = Arc::new(compile_uncached_with(f, opts)?);
    let mut c = cache().lock().map_err(|_| jit_err("cache poisoned"))?;
    Ok(c.entry(key).or_insert(k).clone())
}

fn jit_err(m: impl Into<String>) -> Error {
    Error::Jit(m.into())
}

/// Compile without the cache.
pub fn compile_uncached(f: &Function) -> Result<Kernel> {
    compile_uncached_with(f, &Options::default())
}

/// Compile with options, without the cache.
pub fn compile_uncached_with(f: &Function, opts: &Options) -> Result<Kernel> {
    // deep programs (long flat chains) get a large stack for lowering
    crate::stack::roomy_for(&f.body, || compile_here(f, opts))
}

fn compile_here(f: &Function, opts: &Options) -> Result<Kernel> {
    let sig = types::check(f).map_err(Error::Type)?;
    let prog = loopir::lower(f).map_err(|m| jit_err(format!("`{}`: {m}", f.name)))?;
    let layout = loopir::Layout::c_order(&prog);
    let native = codegen::compile(&prog, &layout).map_err(jit_err)?;
    let gemm = prog
        .nests
        .iter()
        .map(|n| {
            if opts.gemm {
                gemm::plan(&prog, n)
            } else {
                None
            }
        })
        .collect();
    Ok(Kernel {
        gemm,
        func: f.clone(),
        prog,
        natives: Mutex::new(vec![(layout, Arc::new(native))]),
        opts: opts.clone(),
        result: Boundary::of(&sig.ret),
    })
}

fn resolve(s: &SizeRef, sizes: &[i64]) -> usize {
    match s {
        SizeRef::Lit(n) => *n as usize,
        SizeRef::Named(k) => sizes[*k] as usize,
    }
}

fn leaf<'v>(v: &'v Value, path: &[u8]) -> Option<&'v Value> {
    match (path.first(), v) {
        (None, v) => Some(v),
        (Some(k), Value::Pair(a, b)) => leaf(if *k == 0 { a } else { b }, &path[1..]),
        _ => None,
    }
}

fn leaf_mut<'v>(v: &'v mut Value, path: &[u8]) -> Option<&'v mut Value> {
    match (path.first(), v) {
        (None, v) => Some(v),
        (Some(k), Value::Pair(a, b)) => leaf_mut(if *k == 0 { a } else { b }, &path[1..]),
        _ => None,
    }
}

fn size_of(s: &Size, sizes: &interp::Sizes) -> Result<usize> {
    match s {
        Size::Lit(n) => Ok(*n),
        Size::Named(x) => sizes
            .get(x)
            .copied()
            .ok_or_else(|| jit_err(format!("size `{x}` is not fixed by the arguments"))),
    }
}

fn alloc(b: &Boundary, sizes: &interp::Sizes) -> Result<Value> {
    Ok(match b {
        Boundary::Pair(a, c) => Value::pair(alloc(a, sizes)?, alloc(c, sizes)?),
        Boundary::Array(dims) if dims.is_empty() => Value::Real(0.0),
        Boundary::Array(dims) => {
            let shape = dims
                .iter()
                .map(|d| size_of(d, sizes))
                .collect::<Result<Vec<_>>>()?;
            checked_elements(&shape)?;
            Value::Array(ArrayD::zeros(IxDyn(&shape)))
        }
    })
}

fn check_out(b: &Boundary, v: &Value, sizes: &interp::Sizes, what: &str) -> Result<()> {
    match (b, v) {
        (Boundary::Pair(a, c), Value::Pair(x, y)) => {
            check_out(a, x, sizes, &format!("{what}.0"))?;
            check_out(c, y, sizes, &format!("{what}.1"))
        }
        (Boundary::Array(d), Value::Real(_)) if d.is_empty() => Ok(()),
        (Boundary::Array(d), Value::Array(a)) => {
            let want = d
                .iter()
                .map(|s| size_of(s, sizes))
                .collect::<Result<Vec<_>>>()?;
            if a.shape() != want.as_slice() {
                return Err(Error::Call(format!(
                    "the output {what} has shape {:?}, but the result has shape {want:?}",
                    a.shape()
                )));
            }
            // (an empty array has no elements to overlap)
            if !a.is_empty()
                && a.shape()
                    .iter()
                    .zip(a.strides())
                    .any(|(n, s)| *n > 1 && *s == 0)
            {
                return Err(Error::Call(format!(
                    "the output {what} has overlapping elements (a zero stride)"
                )));
            }
            Ok(())
        }
        (Boundary::Pair(..), _) => Err(Error::Call(format!(
            "the output {what} must be a pair (the result is a tuple)"
        ))),
        (Boundary::Array(_), _) => Err(Error::Call(format!(
            "the output {what} must be an array, not {}",
            match v {
                Value::Pair(..) => "a pair",
                Value::Real(_) => "a number",
                Value::Array(_) => "an array",
            }
        ))),
    }
}

impl Kernel {
    /// The function this kernel runs.
    pub fn function(&self) -> &Function {
        &self.func
    }

    /// The loop program the kernel was generated from.
    pub fn loop_program(&self) -> &LoopProgram {
        &self.prog
    }

    /// Native code for `layout` (compiled on first use).
    fn native(&self, layout: loopir::Layout) -> Result<Arc<codegen::Native>> {
        let mut natives = self
            .natives
            .lock()
            .map_err(|_| jit_err("kernel poisoned"))?;
        if let Some((_, n)) = natives.iter().find(|(l, _)| *l == layout) {
            return Ok(n.clone());
        }
        let layout = if natives.len() >= MAX_LAYOUTS {
            loopir::Layout::generic(&self.prog)
        } else {
            layout
        };
        if let Some((_, n)) = natives.iter().find(|(l, _)| *l == layout) {
            return Ok(n.clone());
        }
        let n = Arc::new(codegen::compile(&self.prog, &layout).map_err(jit_err)?);
        natives.push((layout, n.clone()));
        Ok(n)
    }

    /// Per nest, in execution order: how it runs — `gemm M×N×K` (with
    /// `batch B` for batched products) for a GEMM stage, `native` for
    /// generated code. A GEMM stage may still run natively on a call where
    /// it degenerates (see [`gemm`]).
    pub fn stages(&self) -> Vec<String> {
        self.gemm
            .iter()
            .map(|g| {
                g.as_ref()
                    .map_or("native".to_string(), |g| g.describe().to_string())
            })
            .collect()
    }

    /// How many layouts native code has been generated for.
    pub fn layouts_compiled(&self) -> usize {
        self.natives.lock().map(|n| n.len()).unwrap_or(0)
    }

    /// Run on `args`, allocating the result.
    pub fn call(&self, args: &[Value]) -> Result<Value> {
        let sizes = interp::bind(&self.func, args)?;
        let mut out = alloc(&self.result, &sizes)?;
        self.run(args, &mut out, &sizes)?;
        Ok(out)
    }

    /// Run on `args`, writing the result into `out`, which must have exactly
    /// the result's shape (a pair of buffers for a tuple result; any
    /// strides).
    pub fn call_into(&self, args: &[Value], out: &mut Value) -> Result<()> {
        let sizes = interp::bind(&self.func, args)?;
        check_out(&self.result, out, &sizes, "buffer")?;
        self.run(args, out, &sizes)
    }

    fn run(&self, args: &[Value], out: &mut Value, sizes: &interp::Sizes) -> Result<()> {
        let p = &self.prog;
        let svals: Vec<i64> = p
            .sizes
            .iter()
            .map(|n| {
                sizes
                    .get(n)
                    .map(|&v| v as i64)
                    .ok_or_else(|| jit_err(format!("size `{n}` is not fixed by the arguments")))
            })
            .collect::<Result<_>>()?;
        let mut temps: Vec<Vec<f64>> = Vec::new();
        let mut ptrs: Vec<*mut f64> = Vec::with_capacity(p.bufs.len());
        let mut strides: Vec<i64> = Vec::new();
        // per buffer, per axis: unit stride (an axis of at most one
        // element is only ever read at 0, so any stride is as good as 1)
        let mut unit: Vec<Vec<bool>> = Vec::with_capacity(p.bufs.len());
        for buf in &p.bufs {
            let first = strides.len();
            let dims: Vec<usize> = buf.dims.iter().map(|d| resolve(d, &svals)).collect();
            match &buf.kind {
                BufKind::Param { param, path } => {
                    let v = leaf(&args[*param], path)
                        .ok_or_else(|| jit_err(format!("argument `{}` is malformed", buf.name)))?;
                    match v {
                        Value::Array(a) => {
                            if a.shape() != dims.as_slice() {
                                return Err(Error::Call(format!(
                                    "argument `{}` has shape {:?}, expected {dims:?}",
                                    buf.name,
                                    a.shape()
                                )));
                            }
                            ptrs.push(a.as_ptr() as *mut f64);
                            strides.extend(a.strides().iter().map(|&s| s as i64));
                        }
                        Value::Real(x) if dims.is_empty() => ptrs.push(x as *const f64 as *mut f64),
                        _ => {
                            return Err(Error::Call(format!(
                                "argument `{}` does not match its type",
                                buf.name
                            )))
                        }
                    }
                }
                BufKind::Temp => {
                    let n = checked_elements(&dims)?;
                    let mut v = vec![0.0; n.max(1)];
                    ptrs.push(v.as_mut_ptr());
                    temps.push(v);
                    // C order
                    let mut s = vec![0i64; dims.len()];
                    let mut acc = 1i64;
                    for k in (0..dims.len()).rev() {
                        s[k] = acc;
                        acc *= dims[k].max(1) as i64;
                    }
                    strides.extend(s);
                }
                BufKind::Out { path } => {
                    let v = leaf_mut(out, path)
                        .ok_or_else(|| jit_err("the output does not match the result"))?;
                    match v {
                        Value::Array(a) => {
                            if a.shape() != dims.as_slice() {
                                return Err(Error::Call(format!(
                                    "the output has shape {:?}, expected {dims:?}",
                                    a.shape()
                                )));
                            }
                            strides.extend(a.strides().iter().map(|&s| s as i64));
                            ptrs.push(a.as_mut_ptr());
                        }
                        Value::Real(x) if dims.is_empty() => ptrs.push(x as *mut f64),
                        _ => return Err(jit_err("the output does not match the result")),
                    }
                }
            }
            unit.push(
                strides[first..]
                    .iter()
                    .zip(&dims)
                    .map(|(s, d)| *s == 1 || *d <= 1)
                    .collect(),
            );
        }
        // (temporaries are C order: their last stride is 1)
        let native = self.native(loopir::Layout { unit })?;
        for (k, (nest, entry)) in p.nests.iter().zip(&native.entries).enumerate() {
            if let Some(g) = &self.gemm[k] {
                // SAFETY: as below (the library gets the same pointers and
                // strides; the output never aliases an argument).
                if unsafe { g.run(&ptrs, &strides, &svals, self.opts.threads) } {
                    continue;
                }
            }
            let hi = nest
                .vars
                .first()
                .map_or(1, |(_, n)| resolve(n, &svals) as i64);
            // SAFETY: every pointer is the first element of a live buffer
            // whose shape was checked against the buffer's declared dims,
            // with its own strides (an axis assumed unit-stride by the
            // layout has stride 1 or at most one element); the generated
            // code indexes plain indices within their (equal) ranges and
            // checks every other index, and runs the outermost loop over
            // `0..hi`, its whole range, so all accesses stay inside the
            // buffers. `temps`, `args` and `out` outlive the call.
            unsafe {
                entry(ptrs.as_ptr(), strides.as_ptr(), svals.as_ptr(), 0, hi);
            }
        }
        drop(temps);
        Ok(())
    }
}

/// Compile (cached) and run.
pub fn run(f: &Function, args: &[Value]) -> Result<Value> {
    compile(f)?.call(args)
}
