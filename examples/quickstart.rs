//! The Rust API in five minutes: `cargo run --release --example quickstart`.
//!
//! One program three ways (text, the builder, an einsum string), optimised
//! and JIT-compiled, called on ndarray arrays and views; then what a mistake
//! looks like. Every step checks its result, so the example fails loudly if
//! the API stops doing what it shows.

use einsat::ndarray::{array, Array1, Array2};

fn main() -> Result<(), einsat::Error> {
    // 1. From text: parse, type-check, optimise and compile in one call.
    let src = "
        # y = A (B x): the optimiser never forms the matrix product A B
        fn abx(A: [n,k]R, B: [k,m]R, x: [m]R) -> [n]R =
          gen(i:n) sum(j:k, l:m) A[i,j] * B[j,l] * x[l]
    ";
    let kernel = einsat::compile_str(src, "abx", &einsat::opt::Options::default())?;
    let a: Array2<f64> = array![[1.0, 2.0], [3.0, 4.0]];
    let b: Array2<f64> = array![[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]];
    let x: Array1<f64> = array![1.0, 2.0, 3.0];
    let y: Array1<f64> = kernel.eval((&a, &b, &x))?;
    assert_eq!(y, array![14.0, 32.0]);
    println!("abx = {y}");

    // What the optimiser did: the program it chose, in the surface syntax.
    let prog = einsat::load(src)?;
    let f = prog.get("abx").expect("defined above");
    let o = einsat::opt::optimize(f, &einsat::opt::Options::default())?;
    println!(
        "written:\n{f}optimised (cost {} -> {}):\n{}",
        o.cost_before, o.cost_after, o.program
    );
    assert!(o.cost_after < o.cost_before);

    // 2. The same with the builder: binders take closures.
    use einsat::frontend::builder::*;
    let built = func("abx", |fb| {
        let a = fb.param("A", "[n,k]R");
        let b = fb.param("B", "[k,m]R");
        let x = fb.param("x", "[m]R");
        gen("n", |i| {
            sum("k", |j| sum("m", |l| a.at2(i, j) * b.at2(j, l) * x.at(l)))
        })
    })?;
    let k2 = einsat::jit::compile(&einsat::opt::optimize(&built, &Default::default())?.program)?;
    // views are read in place: a transposed copy of A, seen through .t()
    let at = a.t().to_owned();
    let y2: Array1<f64> = k2.eval((at.t(), &b, &x))?;
    assert_eq!(y2, y);

    // 3. An einsum string (numpy's grammar) becomes the same kind of program.
    let e = einsat::frontend::einsum::einsum("ij,jl,l->i")?;
    let k3 = einsat::jit::compile(&einsat::opt::optimize(&e, &Default::default())?.program)?;
    let y3: Array1<f64> = k3.eval((&a, &b, &x))?;
    assert_eq!(y3, y);

    // Mistakes are typed errors with the text's line:column, never a panic.
    let err = einsat::compile_str(
        "fn f(x: [n]R) -> R = sum(i:n) y[i]",
        "f",
        &Default::default(),
    )
    .unwrap_err();
    println!("a mistake reads:\n{err}");
    assert!(err.to_string().contains("unknown name `y`"));
    let err = kernel.eval::<Array1<f64>>((&a, &x, &x)).unwrap_err();
    println!("a wrong argument reads: {err}");

    // A typed handle checks the argument count and ranks once, here; a
    // call with the wrong ones then does not compile.
    let abx = kernel
        .clone()
        .typed::<(Array2<f64>, Array2<f64>, Array1<f64>), Array1<f64>>()?;
    assert_eq!(abx.eval((&a, &b, &x))?, y);
    let err = kernel
        .typed::<(Array2<f64>, Array1<f64>), f64>()
        .unwrap_err();
    println!("a handle that does not fit reads: {err}");
    Ok(())
}
