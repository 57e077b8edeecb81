//! Compiling a function into a [`Kernel`]: the pipeline's driver
//! (type check, [`lower`], [`schedule`], [`emit`]), with the global
//! cache in front ([`super::cache`]). Owns the order of the stages only; it must not make any stage's
//! decisions.

use super::cache::cache;
use super::jit_err;
use super::kernel::Kernel;
use crate::error::{Error, Result};
use crate::jit::ir::{nodes_beyond, Layout};
use crate::jit::lower::lower;
use crate::jit::options::{Options, MAX_NEST_NODES};
use crate::jit::{emit, schedule};
use crate::syntax::ast::Function;
use crate::syntax::print_function;
use crate::types;
use std::sync::Arc;

/// Compile a function in normal form with the default options (cached: see
/// [`compile_with`] and [`cache_key`]).
pub fn compile(f: &Function) -> Result<Arc<Kernel>> {
    compile_with(f, &Options::default())
}

/// The key of `f` compiled with `opts` in the kernel cache: the options
/// (`{opts:?}`), a newline, and the function as
/// [`crate::syntax::print_function`] prints it. So two functions that print
/// the same (the same name, parameters and body, whatever the source's
/// layout or comments) share a kernel, and anything that changes the
/// printed text — renaming the function, a parameter or an index, another
/// size — or any option compiles a new one.
pub fn cache_key(f: &Function, opts: &Options) -> String {
    format!("{opts:?}\n{}", print_function(f))
}

/// Compile with options, cached: the global cache keeps at most
/// [`CACHE_CAPACITY`](crate::jit::CACHE_CAPACITY) kernels keyed by [`cache_key`] (program text and
/// options), least recently used out first; [`clear_cache`](crate::jit::clear_cache) empties it and
/// [`cache_len`](crate::jit::cache_len) counts it. A kernel evicted while a caller holds its `Arc`
/// stays valid.
pub fn compile_with(f: &Function, opts: &Options) -> Result<Arc<Kernel>> {
    let key = cache_key(f, opts);
    if let Some(k) = cache()?.get(&key) {
        return Ok(k);
    }
    let k = Arc::new(compile_uncached_with(f, opts)?);
    Ok(cache()?.insert(key, k))
}

/// Compile without the cache.
pub fn compile_uncached(f: &Function) -> Result<Kernel> {
    compile_uncached_with(f, &Options::default())
}

/// Compile with options, without the cache.
pub fn compile_uncached_with(f: &Function, opts: &Options) -> Result<Kernel> {
    opts.check()?;
    // deep programs (long flat chains) get a large stack for lowering
    crate::stack::roomy_for(&f.body, || compile_here(f, opts))
}

fn compile_here(f: &Function, opts: &Options) -> Result<Kernel> {
    let sig = types::check(f).map_err(Error::types)?;
    if opts.precision == crate::precision::Precision::F32 && cfg!(target_endian = "big") {
        return Err(jit_err("F32 kernels need a little-endian target"));
    }
    if opts.precision.is_int() {
        crate::types::integral(f, None, opts.precision).map_err(Error::types)?;
        if cfg!(target_endian = "big") {
            return Err(jit_err("integer kernels need a little-endian target"));
        }
    }
    let mut prog = lower(f).map_err(|m| jit_err(format!("`{}`: {m}", f.name)))?;
    for (k, nest) in prog.nests.iter().enumerate() {
        if let Some(n) = nodes_beyond(&nest.body, MAX_NEST_NODES) {
            return Err(jit_err(format!(
                "`{}`: loop nest {k} has {n} operations, more than the {MAX_NEST_NODES} the JIT compiles into one native function; the interpreter can run it",
                f.name
            )));
        }
    }
    schedule::prepare(&mut prog, opts);
    let layout = Layout::c_order(&prog);
    let plans = schedule::plan_program(&prog, &layout, opts);
    // (the native code of GEMM stages waits for a call that runs it)
    let defer = schedule::deferred(&prog, &plans, opts);
    let native = emit::compile(&prog, &plans, &layout, opts, &defer).map_err(jit_err)?;
    let gemm = plans.into_iter().map(|p| p.gemm).collect();
    Ok(Kernel::new(f, prog, &sig.ret, layout, native, gemm, opts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jit::emit::captured;

    fn func(src: &str) -> Function {
        crate::load(src).unwrap().functions.remove(0)
    }

    /// A GEMM stage's native code is left out of the first compile when
    /// sizes come with the call, and compiled with it when literal sizes
    /// make every call native; the code left out is the same code.
    #[test]
    fn gemm_native_code_waits_for_a_call_that_needs_it() {
        let opts = Options::default();
        let named = func(
            "fn f(X: [n,k]R, W: [k,m]R, b: [m]R) -> [n,m]R = \
             let H = gen(i:n, j:m) sum(l:k) X[i,l] * W[l,j] in gen(i:n, j:m) max(b[j] + H[i,j], 0)",
        );
        let (k, first) = captured(|| compile_uncached_with(&named, &opts));
        let k = k.unwrap();
        let partial = k.c_order_native().unwrap();
        assert!(partial.partial());
        assert!(partial.chain.is_none());
        let left_out: Vec<bool> = partial.entries.iter().map(Option::is_none).collect();
        assert_eq!(left_out.len(), 2);
        assert!(left_out[0] && !left_out[1], "{left_out:?}");
        let (full, all) = captured(|| k.complete(&partial));
        let full = full.unwrap();
        assert!(!full.partial() && full.chain.is_some());
        // (nest 1's function, then the chain)
        assert_eq!(all.len(), 3);
        assert_eq!(first, all[1..2]);
        // compiled once
        assert!(Arc::ptr_eq(&k.complete(&partial).unwrap(), &full));
        // without the GEMM stage nothing is left out
        let no_gemm = Options {
            gemm: false,
            ..Options::default()
        };
        let k = compile_uncached_with(&named, &no_gemm).unwrap();
        assert!(!k.c_order_native().unwrap().partial());
        // literal sizes: a small product always runs natively
        let literal =
            func("fn f(X: [4,4]R, W: [4,4]R) -> [4,4]R = gen(i:4, j:4) sum(l:4) X[i,l] * W[l,j]");
        let k = compile_uncached_with(&literal, &opts).unwrap();
        assert!(k.stages()[0].starts_with("gemm"), "{:?}", k.stages());
        assert!(!k.c_order_native().unwrap().partial());
    }
}
