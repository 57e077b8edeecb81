//! Loop IR to Cranelift IR, compiled with `cranelift-jit` at
//! `opt_level=speed` for the host ISA (`cranelift_native`, so FMA/AVX are
//! used when present).
//!
//! Every nest of the loop program becomes its own native function
//! `extern "C" fn(bufs: *const *mut f64, strides: *const i64,
//! sizes: *const i64, lo: i64, hi: i64)`: the base pointer of every buffer,
//! the strides of every axis of every buffer (in elements, any sign), the
//! named sizes, and the range `lo..hi` of the nest's outermost loop (so the
//! caller can run a nest in pieces, on several threads; a nest without
//! loops ignores it). The code is specialised for a [`Layout`]: an axis the
//! layout marks unit-stride uses the constant 1 instead of the stride it is
//! passed. What a nest uses is loaded once in the entry block, so
//! it is SSA values that Cranelift keeps out of the loops; loop counters
//! and accumulators are SSA variables (registers). Plain indices are never
//! checked; affine ones are (zero padding). Strong zeros follow the
//! interpreter: a failed bracket is a zero that absorbs the other factor of
//! a product, which is then not evaluated. Innermost sums are unrolled
//! with independent accumulators (`fma` into each).

use super::loopir::*;
use crate::syntax::ast::{BinOp, CmpOp, Func};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};

/// Independent accumulators of an innermost sum.
pub const UNROLL: usize = 4;

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

const CALLS: &[(&str, Func, usize)] = &[
    ("einsat_exp", Func::Exp, 1),
    ("einsat_log", Func::Log, 1),
    ("einsat_sin", Func::Sin, 1),
    ("einsat_cos", Func::Cos, 1),
    ("einsat_tanh", Func::Tanh, 1),
    ("einsat_max", Func::Max, 2),
    ("einsat_min", Func::Min, 2),
];

/// Compiled code; the module owns the executable memory and lives as long
/// as the kernel.
pub struct Native {
    module: Option<JITModule>,
    /// One entry per nest of the loop program, in the same order.
    pub entries: Vec<Entry>,
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

/// Compile a loop program for buffers laid out as `layout` says.
pub fn compile(p: &LoopProgram, layout: &Layout) -> Result<Native, String> {
    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| {
        f.set(k, v)
            .map_err(|e| format!("cranelift setting {k}: {e}"))
    };
    set(&mut flags, "opt_level", "speed")?;
    set(&mut flags, "is_pic", "false")?;
    let isa = cranelift_native::builder()
        .map_err(|e| format!("host ISA: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| format!("host ISA: {e}"))?;
    let mut jb = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    jb.symbol("einsat_exp", f_exp as *const u8);
    jb.symbol("einsat_log", f_log as *const u8);
    jb.symbol("einsat_sin", f_sin as *const u8);
    jb.symbol("einsat_cos", f_cos as *const u8);
    jb.symbol("einsat_tanh", f_tanh as *const u8);
    jb.symbol("einsat_max", f_max as *const u8);
    jb.symbol("einsat_min", f_min as *const u8);
    let mut module = JITModule::new(jb);
    let tcfg = module.target_config();
    let ptr = tcfg.pointer_type();

    let mut calls: Vec<(Func, FuncId)> = Vec::new();
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

    // where each buffer's strides start in the strides array
    let mut stride_at = Vec::with_capacity(p.bufs.len());
    let mut off = 0usize;
    for buf in &p.bufs {
        stride_at.push(off);
        off += buf.dims.len();
    }

    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut ids = Vec::with_capacity(p.nests.len());
    for (k, nest) in p.nests.iter().enumerate() {
        ctx.func.signature.params.clear();
        for _ in 0..3 {
            ctx.func.signature.params.push(AbiParam::new(ptr));
        }
        for _ in 0..2 {
            ctx.func.signature.params.push(AbiParam::new(types::I64));
        }
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let (bp, sp, zp, lo, hi) = {
                let ps = b.block_params(entry);
                (ps[0], ps[1], ps[2], ps[3], ps[4])
            };
            if let Some(plan) = super::dense::plan(p, nest, layout) {
                let e = super::dense::EntryParams {
                    bufs: bp,
                    strides: sp,
                    sizes: zp,
                    lo,
                    hi,
                };
                super::dense::emit(&mut b, p, nest, layout, &stride_at, e, &plan);
                b.seal_all_blocks();
                b.finalize(tcfg);
            } else {
                let mf = MemFlagsData::trusted();
                let mut used = vec![false; p.bufs.len()];
                nest_bufs(nest, &mut used);
                let mut bases = Vec::with_capacity(p.bufs.len());
                let mut strides = Vec::with_capacity(p.bufs.len());
                for (bi, buf) in p.bufs.iter().enumerate() {
                    if !used[bi] {
                        bases.push(None);
                        strides.push(vec![]);
                        continue;
                    }
                    bases.push(Some(b.ins().load(ptr, mf, bp, (bi * 8) as i32)));
                    let mut s = Vec::new();
                    for a in 0..buf.dims.len() {
                        s.push(if layout.is_unit(bi, a) {
                            b.ins().iconst(types::I64, 1)
                        } else {
                            b.ins()
                                .load(types::I64, mf, sp, ((stride_at[bi] + a) * 8) as i32)
                        });
                    }
                    strides.push(s);
                }
                let sizes: Vec<Value> = (0..p.sizes.len())
                    .map(|k| b.ins().load(types::I64, mf, zp, (k * 8) as i32))
                    .collect();
                let mut funcs = Vec::new();
                for (f, id) in &calls {
                    funcs.push((*f, module.declare_func_in_func(*id, b.func)));
                }
                let vars: Vec<Variable> =
                    (0..p.n_vars).map(|_| b.declare_var(types::I64)).collect();
                let mut g = Gen {
                    b,
                    bases,
                    strides,
                    sizes,
                    vars,
                    funcs,
                    mf,
                    range: (lo, hi),
                };
                g.nest(nest);
                g.b.ins().return_(&[]);
                g.b.seal_all_blocks();
                g.b.finalize(tcfg);
            }
        }
        let id = module
            .declare_function(&format!("nest{k}"), Linkage::Local, &ctx.func.signature)
            .map_err(|e| e.to_string())?;
        module
            .define_function(id, &mut ctx)
            .map_err(|e| format!("cranelift: {e:?}"))?;
        module.clear_context(&mut ctx);
        ids.push(id);
    }
    module.finalize_definitions().map_err(|e| e.to_string())?;
    let entries = ids
        .into_iter()
        .map(|id| {
            let code = module.get_finalized_function(id);
            // SAFETY: `code` was compiled from a function with exactly this
            // signature (three pointers and two i64s, no result).
            unsafe { std::mem::transmute::<*const u8, Entry>(code) }
        })
        .collect();
    Ok(Native {
        module: Some(module),
        entries,
    })
}

/// Mark the buffers a nest reads or writes.
fn nest_bufs(n: &Nest, used: &mut [bool]) {
    fn walk(s: &S, used: &mut [bool]) {
        match s {
            S::Load(b, _) => used[*b] = true,
            S::Num(_) | S::Bracket(_) | S::Eps(_) => {}
            S::Bin(_, a, b) => {
                walk(a, used);
                walk(b, used);
            }
            S::Neg(a) | S::Sum(_, _, a) => walk(a, used),
            S::Call(_, args) => args.iter().for_each(|a| walk(a, used)),
        }
    }
    used[n.buf] = true;
    walk(&n.body, used);
}

struct Gen<'a> {
    b: FunctionBuilder<'a>,
    /// Base pointers of the buffers the nest uses.
    bases: Vec<Option<Value>>,
    strides: Vec<Vec<Value>>,
    sizes: Vec<Value>,
    vars: Vec<Variable>,
    funcs: Vec<(Func, cranelift_codegen::ir::FuncRef)>,
    mf: MemFlagsData,
    /// The range of the nest's outermost loop.
    range: (Value, Value),
}

impl Gen<'_> {
    fn size(&mut self, s: &SizeRef) -> Value {
        match s {
            SizeRef::Lit(n) => self.b.ins().iconst(types::I64, *n),
            SizeRef::Named(k) => self.sizes[*k],
        }
    }

    fn base(&self, buf: usize) -> Value {
        self.bases[buf].expect("the nest's buffers are loaded in its entry block")
    }

    fn f64c(&mut self, x: f64) -> Value {
        self.b.ins().f64const(x)
    }

    /// `for var in 0..n { body }`.
    fn for_loop(&mut self, var: usize, n: &SizeRef, body: &mut dyn FnMut(&mut Self)) {
        let n = self.size(n);
        let zero = self.b.ins().iconst(types::I64, 0);
        self.for_range(var, zero, n, body)
    }

    /// `for var in lo..hi { body }`.
    fn for_range(&mut self, var: usize, lo: Value, n: Value, body: &mut dyn FnMut(&mut Self)) {
        let v = self.vars[var];
        self.b.def_var(v, lo);
        let head = self.b.create_block();
        let body_b = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let i = self.b.use_var(v);
        let c = self.b.ins().icmp(IntCC::SignedLessThan, i, n);
        self.b.ins().brif(c, body_b, &[], exit, &[]);
        self.b.switch_to_block(body_b);
        body(self);
        let i = self.b.use_var(v);
        let i1 = self.b.ins().iadd_imm_s(i, 1);
        self.b.def_var(v, i1);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
    }

    fn nest(&mut self, n: &Nest) {
        self.nest_from(n, 0);
    }

    fn nest_from(&mut self, n: &Nest, k: usize) {
        if k == n.vars.len() {
            let (v, _) = self.scalar(&n.body);
            let mut off = self.b.ins().iconst(types::I64, 0);
            for (a, (var, _)) in n.vars.iter().enumerate() {
                let i = self.b.use_var(self.vars[*var]);
                let t = self.b.ins().imul(i, self.strides[n.buf][a]);
                off = self.b.ins().iadd(off, t);
            }
            let bytes = self.b.ins().ishl_imm_s(off, 3);
            let base = self.base(n.buf);
            let addr = self.b.ins().iadd(base, bytes);
            self.b.ins().store(self.mf, v, addr, 0);
            return;
        }
        let (var, size) = n.vars[k].clone();
        if k == 0 {
            // the caller's range of the outermost loop
            let (lo, hi) = self.range;
            self.for_range(var, lo, hi, &mut |g| g.nest_from(n, k + 1));
        } else {
            self.for_loop(var, &size, &mut |g| g.nest_from(n, k + 1));
        }
    }

    fn aff(&mut self, a: &Aff) -> Value {
        let mut acc = self.b.ins().iconst(types::I64, a.constant);
        for (v, c) in &a.terms {
            let x = self.b.use_var(self.vars[*v]);
            let t = if *c == 1 {
                x
            } else {
                self.b.ins().imul_imm_s(x, *c)
            };
            acc = self.b.ins().iadd(acc, t);
        }
        acc
    }

    fn pred(&mut self, p: &P) -> Value {
        match p {
            P::Cmp(op, a, b) => {
                let (x, y) = (self.aff(a), self.aff(b));
                let cc = match op {
                    CmpOp::Eq => IntCC::Equal,
                    CmpOp::Ne => IntCC::NotEqual,
                    CmpOp::Lt => IntCC::SignedLessThan,
                    CmpOp::Le => IntCC::SignedLessThanOrEqual,
                    CmpOp::Gt => IntCC::SignedGreaterThan,
                    CmpOp::Ge => IntCC::SignedGreaterThanOrEqual,
                };
                self.b.ins().icmp(cc, x, y)
            }
            P::And(a, b) => {
                let (x, y) = (self.pred(a), self.pred(b));
                self.b.ins().band(x, y)
            }
            P::Or(a, b) => {
                let (x, y) = (self.pred(a), self.pred(b));
                self.b.ins().bor(x, y)
            }
            P::Not(a) => {
                let x = self.pred(a);
                self.b.ins().icmp_imm_s(IntCC::Equal, x, 0)
            }
        }
    }

    fn load(&mut self, buf: usize, ixs: &[Ix]) -> Value {
        let mut off = self.b.ins().iconst(types::I64, 0);
        let mut ok: Option<Value> = None;
        for (a, ix) in ixs.iter().enumerate() {
            let i = self.aff(&ix.aff);
            if ix.checked {
                // 0 <= i < dim, as one unsigned comparison
                let d = self.size(&ix.dim);
                let c = self.b.ins().icmp(IntCC::UnsignedLessThan, i, d);
                ok = Some(match ok {
                    None => c,
                    Some(o) => self.b.ins().band(o, c),
                });
            }
            let t = self.b.ins().imul(i, self.strides[buf][a]);
            off = self.b.ins().iadd(off, t);
        }
        let base = self.base(buf);
        match ok {
            None => {
                let bytes = self.b.ins().ishl_imm_s(off, 3);
                let addr = self.b.ins().iadd(base, bytes);
                self.b.ins().load(types::F64, self.mf, addr, 0)
            }
            Some(c) => {
                let inb = self.b.create_block();
                let merge = self.b.create_block();
                let r = self.b.append_block_param(merge, types::F64);
                let zero = self.f64c(0.0);
                self.b.ins().brif(c, inb, &[], merge, &[zero.into()]);
                self.b.switch_to_block(inb);
                let bytes = self.b.ins().ishl_imm_s(off, 3);
                let addr = self.b.ins().iadd(base, bytes);
                let x = self.b.ins().load(types::F64, self.mf, addr, 0);
                self.b.ins().jump(merge, &[x.into()]);
                self.b.switch_to_block(merge);
                r
            }
        }
    }

    fn eps(&mut self, ks: &[Aff]) -> Value {
        let vals: Vec<Value> = ks.iter().map(|a| self.aff(a)).collect();
        let n = vals.len() as i64;
        let mut ok = self.b.ins().iconst(types::I8, 1);
        for &v in &vals {
            let c = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, v, n);
            ok = self.b.ins().band(ok, c);
        }
        // (b - a) for two indices; (a-b)(b-c)(c-a)/2 for three
        let num = if vals.len() == 2 {
            self.b.ins().isub(vals[1], vals[0])
        } else {
            let x = self.b.ins().isub(vals[0], vals[1]);
            let y = self.b.ins().isub(vals[1], vals[2]);
            let z = self.b.ins().isub(vals[2], vals[0]);
            let xy = self.b.ins().imul(x, y);
            let xyz = self.b.ins().imul(xy, z);
            self.b.ins().sshr_imm_s(xyz, 1)
        };
        let zero = self.b.ins().iconst(types::I64, 0);
        let r = self.b.ins().select(ok, num, zero);
        self.b.ins().fcvt_from_sint(types::F64, r)
    }

    fn call(&mut self, f: Func, args: &[Value]) -> Value {
        match f {
            Func::Sqrt => self.b.ins().sqrt(args[0]),
            Func::Abs => self.b.ins().fabs(args[0]),
            _ => {
                let fr = self
                    .funcs
                    .iter()
                    .find(|(g, _)| *g == f)
                    .map(|(_, r)| *r)
                    .expect("every other function is imported");
                let inst = self.b.ins().call(fr, args);
                self.b.inst_results(inst)[0]
            }
        }
    }

    /// Whether `s` may evaluate to a strong zero.
    fn strong(s: &S) -> bool {
        match s {
            S::Bracket(_) => true,
            S::Neg(a) | S::Sum(_, _, a) => Self::strong(a),
            S::Bin(BinOp::Mul, a, b) => Self::strong(a) || Self::strong(b),
            S::Bin(BinOp::Div, a, _) => Self::strong(a),
            S::Bin(BinOp::Add | BinOp::Sub, a, b) => Self::strong(a) && Self::strong(b),
            _ => false,
        }
    }

    /// The value of `s`, and its strong-zero flag (an `i8`) when it may be
    /// one.
    fn scalar(&mut self, s: &S) -> (Value, Option<Value>) {
        match s {
            S::Num(x) => (self.f64c(*x), None),
            S::Load(buf, ixs) => (self.load(*buf, ixs), None),
            S::Bracket(p) => {
                let c = self.pred(p);
                let one = self.f64c(1.0);
                let zero = self.f64c(0.0);
                let v = self.b.ins().select(c, one, zero);
                let f = self.b.ins().icmp_imm_s(IntCC::Equal, c, 0);
                (v, Some(f))
            }
            S::Eps(ks) => (self.eps(ks), None),
            S::Neg(a) => {
                let (x, f) = self.scalar(a);
                let n = self.b.ins().fneg(x);
                match f {
                    None => (n, None),
                    Some(f) => {
                        let zero = self.f64c(0.0);
                        (self.b.ins().select(f, zero, n), Some(f))
                    }
                }
            }
            S::Call(func, args) => {
                let vs: Vec<Value> = args.iter().map(|a| self.scalar(a).0).collect();
                (self.call(*func, &vs), None)
            }
            S::Bin(op, a, b) => self.bin(*op, a, b),
            S::Sum(var, n, body) => self.sum(*var, n, body),
        }
    }

    fn arith(&mut self, op: BinOp, x: Value, y: Value) -> Value {
        match op {
            BinOp::Add => self.b.ins().fadd(x, y),
            BinOp::Sub => self.b.ins().fsub(x, y),
            BinOp::Mul => self.b.ins().fmul(x, y),
            BinOp::Div => self.b.ins().fdiv(x, y),
        }
    }

    fn bin(&mut self, op: BinOp, a: &S, b: &S) -> (Value, Option<Value>) {
        // a + b*c with no strong zeros about: one fused multiply-add
        if op == BinOp::Add && !Self::strong(a) && !Self::strong(b) {
            if let S::Bin(BinOp::Mul, x, y) = b {
                let va = self.scalar(a).0;
                let vx = self.scalar(x).0;
                let vy = self.scalar(y).0;
                return (self.b.ins().fma(vx, vy, va), None);
            }
        }
        let (x, fx) = self.scalar(a);
        if let (Some(fx), BinOp::Mul | BinOp::Div) = (fx, op) {
            // a strong zero on the left: the right is not evaluated
            let rest = self.b.create_block();
            let merge = self.b.create_block();
            let rv = self.b.append_block_param(merge, types::F64);
            let rf = self.b.append_block_param(merge, types::I8);
            let zero = self.f64c(0.0);
            let one = self.b.ins().iconst(types::I8, 1);
            self.b
                .ins()
                .brif(fx, merge, &[zero.into(), one.into()], rest, &[]);
            self.b.switch_to_block(rest);
            let (y, fy) = self.scalar(b);
            let v = self.arith(op, x, y);
            let (v, f) = match (op, fy) {
                (BinOp::Mul, Some(fy)) => {
                    let zero = self.f64c(0.0);
                    (self.b.ins().select(fy, zero, v), fy)
                }
                _ => (v, self.b.ins().iconst(types::I8, 0)),
            };
            self.b.ins().jump(merge, &[v.into(), f.into()]);
            self.b.switch_to_block(merge);
            return (rv, Some(rf));
        }
        let (y, fy) = self.scalar(b);
        let v = self.arith(op, x, y);
        match op {
            BinOp::Mul => match fy {
                Some(fy) => {
                    let zero = self.f64c(0.0);
                    (self.b.ins().select(fy, zero, v), Some(fy))
                }
                None => (v, None),
            },
            BinOp::Div => (v, None),
            BinOp::Add | BinOp::Sub => match (fx, fy) {
                (Some(p), Some(q)) => (v, Some(self.b.ins().band(p, q))),
                _ => (v, None),
            },
        }
    }

    /// Whether `s` holds a `sum` (only innermost sums are unrolled).
    fn has_sum(s: &S) -> bool {
        match s {
            S::Sum(..) => true,
            S::Bin(_, a, b) => Self::has_sum(a) || Self::has_sum(b),
            S::Neg(a) => Self::has_sum(a),
            S::Call(_, args) => args.iter().any(Self::has_sum),
            _ => false,
        }
    }

    /// `acc + body` (one `fma` when the body is a product).
    fn accumulate(&mut self, acc: Variable, body: &S) {
        let r = match body {
            S::Bin(BinOp::Mul, x, y) => {
                let vx = self.scalar(x).0;
                let vy = self.scalar(y).0;
                let a = self.b.use_var(acc);
                self.b.ins().fma(vx, vy, a)
            }
            _ => {
                let v = self.scalar(body).0;
                let a = self.b.use_var(acc);
                self.b.ins().fadd(a, v)
            }
        };
        self.b.def_var(acc, r);
    }

    /// An innermost sum without strong zeros, unrolled by [`UNROLL`] with
    /// independent accumulators, so consecutive terms do not wait for each
    /// other's additions; the remainder runs one term at a time.
    fn sum_unrolled(&mut self, var: usize, n: &SizeRef, body: &S) -> Value {
        let nv = self.size(n);
        let zero = self.f64c(0.0);
        let accs: Vec<Variable> = (0..UNROLL)
            .map(|_| {
                let a = self.b.declare_var(types::F64);
                self.b.def_var(a, zero);
                a
            })
            .collect();
        let base = self.b.declare_var(types::I64);
        let z = self.b.ins().iconst(types::I64, 0);
        self.b.def_var(base, z);
        let v = self.vars[var];
        // main loop: while base + UNROLL <= n
        let head = self.b.create_block();
        let body_b = self.b.create_block();
        let tail_head = self.b.create_block();
        let tail_body = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let i = self.b.use_var(base);
        let last = self.b.ins().iadd_imm_s(i, UNROLL as i64);
        let c = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, last, nv);
        self.b.ins().brif(c, body_b, &[], tail_head, &[]);
        self.b.switch_to_block(body_b);
        for (u, acc) in accs.iter().enumerate() {
            let i = self.b.use_var(base);
            let iu = self.b.ins().iadd_imm_s(i, u as i64);
            self.b.def_var(v, iu);
            self.accumulate(*acc, body);
        }
        let i = self.b.use_var(base);
        let i1 = self.b.ins().iadd_imm_s(i, UNROLL as i64);
        self.b.def_var(base, i1);
        self.b.ins().jump(head, &[]);
        // remainder
        self.b.switch_to_block(tail_head);
        let i = self.b.use_var(base);
        let c = self.b.ins().icmp(IntCC::SignedLessThan, i, nv);
        self.b.ins().brif(c, tail_body, &[], exit, &[]);
        self.b.switch_to_block(tail_body);
        let i = self.b.use_var(base);
        self.b.def_var(v, i);
        self.accumulate(accs[0], body);
        let i = self.b.use_var(base);
        let i1 = self.b.ins().iadd_imm_s(i, 1);
        self.b.def_var(base, i1);
        self.b.ins().jump(tail_head, &[]);
        self.b.switch_to_block(exit);
        let vals: Vec<Value> = accs.iter().map(|a| self.b.use_var(*a)).collect();
        let mut level = vals;
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|c| {
                    if c.len() == 2 {
                        self.b.ins().fadd(c[0], c[1])
                    } else {
                        c[0]
                    }
                })
                .collect();
        }
        level[0]
    }

    fn sum(&mut self, var: usize, n: &SizeRef, body: &S) -> (Value, Option<Value>) {
        if !Self::strong(body) && !Self::has_sum(body) {
            return (self.sum_unrolled(var, n, body), None);
        }
        let acc = self.b.declare_var(types::F64);
        let zero = self.f64c(0.0);
        self.b.def_var(acc, zero);
        let strong = Self::strong(body);
        let all = if strong {
            let nv = self.size(n);
            let v = self.b.declare_var(types::I8);
            let pos = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, nv, 0);
            self.b.def_var(v, pos);
            Some(v)
        } else {
            None
        };
        self.for_loop(var, n, &mut |g| match body {
            // acc += x * y as one fma
            S::Bin(BinOp::Mul, x, y) if !strong => {
                let vx = g.scalar(x).0;
                let vy = g.scalar(y).0;
                let a = g.b.use_var(acc);
                let r = g.b.ins().fma(vx, vy, a);
                g.b.def_var(acc, r);
            }
            _ => {
                let (v, f) = g.scalar(body);
                let a = g.b.use_var(acc);
                let r = g.b.ins().fadd(a, v);
                g.b.def_var(acc, r);
                if let (Some(all), Some(f)) = (all, f) {
                    let s = g.b.use_var(all);
                    let s = g.b.ins().band(s, f);
                    g.b.def_var(all, s);
                }
            }
        });
        let r = self.b.use_var(acc);
        let f = all.map(|v| self.b.use_var(v));
        (r, f)
    }
}
