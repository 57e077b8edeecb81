//! Matrix products inside larger expressions become GEMM stages
//! (`extract::normal`, `Norm::gemm_stage`): an MLP layer, GELU of a
//! product, attention, a centred Gram matrix, batched and nested products.
//! Each program's optimised form has the stages expected, and agrees with
//! the interpreter under the floating-point contract (the difftest oracle)
//! on every value class, and on the JIT with the GEMM library taken at
//! every size.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp;
use einsat::interp::random::ValueClass;
use einsat::jit;
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::testing::difftest::{check, inputs_with_zero, Case, DiffConfig, Verdict};
use einsat::Function;
use rand::SeedableRng;

fn func(src: &str) -> Function {
    einsat::load(src)
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
        .functions
        .remove(0)
}

/// The stages of `src` optimised and compiled with the GEMM library at
/// every size, and the optimised program's text.
fn staged(src: &str) -> (Vec<String>, String) {
    let o = optimize(&func(src), &Options::default()).unwrap();
    let k = jit::compile_with(
        &o.program,
        &jit::Options {
            gemm_min_work: 0,
            ..jit::Options::default()
        },
    )
    .unwrap();
    (k.stages(), print_function(&o.program))
}

fn gemm_count(stages: &[String]) -> usize {
    stages.iter().filter(|s| s.starts_with("gemm")).count()
}

/// Whether `f` on inputs drawn with `rng` (named sizes up to `max`, some of
/// them 0, values of `class`, a random layout) agrees with the contract's
/// oracle through the optimiser and the JIT; the disagreement otherwise.
fn contract_check(
    f: &Function,
    max: usize,
    class: ValueClass,
    cfg: &DiffConfig,
    rng: &mut rand::rngs::StdRng,
) -> Result<(), String> {
    let (sizes, args, layout) = inputs_with_zero(f, max, 0.1, true, class, rng).unwrap();
    let case = Case {
        function: f.clone(),
        sizes,
        args,
        layout,
        class,
    };
    match check(&case, cfg) {
        Verdict::Disagree(d) => Err(format!("{d:?}")),
        Verdict::Agree { .. } => Ok(()),
    }
}

/// `src` agrees with the interpreter (the contract's oracle in the default
/// mode) for every value class and a few sizes, through the optimiser and
/// the JIT, and the JIT with the library at every size agrees within a
/// relative tolerance on moderate values.
fn agrees(src: &str) {
    let f = func(src);
    let cfg = DiffConfig::default();
    for (seed, class) in ValueClass::ALL.into_iter().enumerate() {
        for max in [1usize, 3, 9] {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed as u64 * 31 + max as u64);
            if let Err(d) = contract_check(&f, max, class, &cfg, &mut rng) {
                panic!("{src}\n{class:?} max size {max}: {d}");
            }
        }
    }
    let o = optimize(&f, &Options::default()).unwrap();
    let k = jit::compile_with(
        &o.program,
        &jit::Options {
            gemm_min_work: 0,
            ..jit::Options::default()
        },
    )
    .unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (_, args, _) =
        inputs_with_zero(&f, 24, 0.0, false, ValueClass::Moderate, &mut rng).unwrap();
    let want = interp::run(&f, &args).unwrap();
    let got = k.call(&args).unwrap();
    assert!(
        want.approx_eq(&got, 1e-9, 1e-9),
        "{src}\ninterp {want}\njit {got}"
    );
}

const MLP: &str = "fn mlp(X: [n,k]R, W: [k,m]R, b: [m]R) -> [n,m]R = \
                   gen(i:n, j:m) max(b[j] + sum(l:k) X[i,l] * W[l,j], 0)";
const GELU: &str = "fn g(X: [n,k]R, W: [k,m]R) -> [n,m]R = gen(i:n, j:m) \
                    let h = sum(l:k) X[i,l] * W[l,j] in 0.5 * h * (1 + tanh(0.8 * (h + 0.044715 * h * h * h)))";
const MLP2: &str = "fn mlp2(X: [n,k]R, W1: [k,m]R, b1: [m]R, W2: [m,p]R) -> [n,p]R = \
                    gen(i:n, c:p) sum(j:m) max(b1[j] + sum(l:k) X[i,l] * W1[l,j], 0) * W2[j,c]";
const ATTENTION: &str = "fn att(Q: [s,d]R, K: [s,d]R, V: [s,d]R) -> [s,d]R = \
    let S = gen(i:s, j:s) (sum(l:d) Q[i,l] * K[j,l]) / 8 in \
    let P = gen(i:s) let z = sum(j:s) exp(S[i,j]) in gen(j:s) exp(S[i,j]) / z in \
    gen(i:s, c:d) sum(j:s) P[i,j] * V[j,c]";
const GRAM: &str = "fn gram(X: [n,d]R, r: R) -> [d,d]R = gen(a:d, b:d) sum(i:n) \
                    (X[i,a] - (sum(k:n) X[k,a]) * r) * (X[i,b] - (sum(k:n) X[k,b]) * r)";
const BATCHED: &str = "fn bt(A: [b,n,k]R, B: [b,k,m]R, c: [b]R) -> [b,n,m]R = \
                       gen(p:b, i:n, j:m) c[p] * tanh(sum(l:k) A[p,i,l] * B[p,l,j])";
const SHIFTED: &str = "fn sh(X: [n,k]R, W: [k,m]R) -> [n,m]R = \
                       gen(i:n, j:m) sum(l:k) X[i,l+1] * W[l,j]";
const TRACE: &str = "fn tr(A: [n,k]R, B: [k,n]R, w: [n]R) -> R = \
                     sum(i:n) w[i] * exp(sum(j:n) [i = j] * sum(l:k) A[i,l] * B[l,j])";

#[test]
fn an_mlp_layer_runs_its_product_on_the_gemm_stage() {
    let (stages, text) = staged(MLP);
    assert_eq!(gemm_count(&stages), 1, "{text}\n{stages:?}");
    assert_eq!(stages.len(), 2, "the product, then the epilogue\n{text}");
    agrees(MLP);
}

#[test]
fn gelu_of_a_product_and_a_two_layer_mlp() {
    let (stages, text) = staged(GELU);
    assert_eq!(gemm_count(&stages), 1, "{text}\n{stages:?}");
    agrees(GELU);
    let (stages, text) = staged(MLP2);
    assert_eq!(
        gemm_count(&stages),
        2,
        "both layers' products\n{text}\n{stages:?}"
    );
    agrees(MLP2);
}

#[test]
fn attention_computes_q_k_once_and_both_products_on_the_stage() {
    let (stages, text) = staged(ATTENTION);
    assert_eq!(gemm_count(&stages), 2, "Q·Kᵀ and P·V\n{text}\n{stages:?}");
    assert_eq!(text.matches("Q[").count(), 1, "Q·Kᵀ computed once\n{text}");
    agrees(ATTENTION);
}

/// Attention with the stable softmax (the row maximum subtracted).
const STABLE_ATTENTION: &str = "fn att(Q: [s,d]R, K: [s,d]R, V: [s,d]R) -> [s,d]R = \
    let S = gen(i:s, j:s) (sum(l:d) Q[i,l] * K[j,l]) / 8 in \
    let P = gen(i:s) let mx = max(j:s) S[i,j] in let z = sum(j:s) exp(S[i,j] - mx) in \
    gen(j:s) exp(S[i,j] - mx) / z in \
    gen(i:s, c:d) sum(j:s) P[i,j] * V[j,c]";

#[test]
fn stable_attention_divides_the_product_by_the_row_sums() {
    // the e-graph moves `/ z` out of P·V's sum (`sum-div-out`) and writes
    // Q·Kᵀ once as `Q[i,l] * K[j,l]`, once as `K[j,l] * Q[i,l]` (at two
    // binder depths: two e-classes); the post-pass keys values up to the
    // operands' order of `*` and `+`, so both are one stage, and the
    // s×s probabilities are never divided or stored
    let (stages, text) = staged(STABLE_ATTENTION);
    assert_eq!(gemm_count(&stages), 2, "Q·Kᵀ and P·V\n{text}\n{stages:?}");
    assert_eq!(text.matches("Q[").count(), 1, "Q·Kᵀ computed once\n{text}");
    let division = text
        .lines()
        .find(|l| l.contains(" / t"))
        .unwrap_or_else(|| panic!("no division by a row sum\n{text}"));
    assert!(
        division.contains("gen(i:s, j:d)"),
        "the division is of the s×d product\n{text}"
    );
    agrees(STABLE_ATTENTION);
    // the same value written both ways in one scalar, at two depths
    let both = "fn f(Q: [s,d]R, K: [s,d]R) -> [s,s]R = gen(i:s, j:s) \
        exp((sum(l:d) Q[i,l] * K[j,l]) - max(k:s) sum(m:d) K[k,m] * Q[i,m])";
    let (stages, text) = staged(both);
    assert_eq!(text.matches("Q[").count(), 1, "one product\n{text}");
    assert_eq!(gemm_count(&stages), 1, "{text}\n{stages:?}");
    agrees(both);
}

#[test]
fn a_centred_gram_matrix_materialises_its_centred_factor() {
    let (stages, text) = staged(GRAM);
    assert_eq!(gemm_count(&stages), 1, "{text}\n{stages:?}");
    agrees(GRAM);
}

#[test]
fn batched_and_shifted_products() {
    let (stages, text) = staged(BATCHED);
    assert_eq!(gemm_count(&stages), 1, "{text}\n{stages:?}");
    agrees(BATCHED);
    // the shifted read (zero padding past the end) is materialised first
    let (stages, text) = staged(SHIFTED);
    assert_eq!(gemm_count(&stages), 1, "{text}\n{stages:?}");
    agrees(SHIFTED);
}

#[test]
fn products_under_guards_and_small_products_keep_their_values() {
    // a guard reads the product's diagonal only: no stage of its own
    let (_, text) = staged(TRACE);
    assert!(!text.contains("gen(i:n, j:n) sum"), "{text}");
    agrees(TRACE);
    // sizes fixed small: no stage of its own (below the work threshold)
    let small = "fn s(A: [2,3]R, B: [3,2]R, c: [2]R) -> [2,2]R = gen(i:2, j:2) c[i] + sum(l:3) A[i,l] * B[l,j]";
    let (_, text) = staged(small);
    assert_eq!(text.matches("let").count(), 0, "{text}");
    agrees(small);
    // a matrix-vector product over plain loads is a stage (the library's
    // GEMV), then its epilogue
    let mv = "fn mv(A: [n,k]R, x: [k]R, c: [n]R) -> [n]R = gen(i:n) c[i] + sum(l:k) A[i,l] * x[l]";
    let (stages, text) = staged(mv);
    assert_eq!(gemm_count(&stages), 1, "{text}\n{stages:?}");
    agrees(mv);
    // so is one inside another sum (x·A·y: the matrix-vector product,
    // then a dot product), which the scheduler alone left in loops
    let bil = "fn b(x: [n]R, A: [n,k]R, y: [k]R) -> R = sum(i:n, j:k) x[i] * A[i,j] * y[j]";
    let (stages, text) = staged(bil);
    assert_eq!(gemm_count(&stages), 1, "{text}\n{stages:?}");
    agrees(bil);
    // a matrix-vector product whose matrix factor is computed keeps its
    // fused loop: materialising the factor would cost the product's memory
    // traffic again
    let centred = "fn mc(A: [n,k]R, m: [k]R, x: [n]R, y: [k]R) -> R = sum(i:n) x[i] * sum(l:k) (A[i,l] - m[l]) * y[l]";
    let (_, text) = staged(centred);
    assert_eq!(text.matches("let").count(), 0, "{text}");
    agrees(centred);
}

#[test]
fn staging_is_deterministic() {
    for src in [MLP, GELU, MLP2, ATTENTION, GRAM, BATCHED] {
        let a = staged(src).1;
        for _ in 0..3 {
            assert_eq!(staged(src).1, a);
        }
    }
}

/// Random products in random surroundings: factors that are plain loads,
/// transposed loads, shifted reads, centred or scaled operands or calls;
/// epilogues that add a bias, apply a function, square, sum again or
/// guard; every one staged (the threshold at 0) agrees with the
/// interpreter under the contract on every value class, through the
/// optimiser and the JIT.
#[test]
fn random_products_in_random_surroundings_agree() {
    use rand::Rng;
    let lhs = [
        "X[i,l]",
        "X[i,l+1]",
        "(X[i,l] - y[l])",
        "(2 * X[i,l])",
        "exp(X[i,l])",
        "(X[i,l] - sum(q:k) X[i,q])",
    ];
    let rhs = [
        "W[l,j]",
        "W[l,j-1]",
        "(W[l,j] + y[l])",
        "abs(W[l,j])",
        "(W[l,j] / 3)",
    ];
    let epi = [
        "S",
        "b[j] + S",
        "max(b[j] + S, 0)",
        "tanh(S) * b[j]",
        "S * S",
        "[i < j] * S",
        "exp(S) / (1 + S * S)",
    ];
    let mut cfg = DiffConfig::default();
    cfg.opt.gemm_stage_min_work = 0.0;
    let mut rng = rand::rngs::StdRng::seed_from_u64(2026);
    let mut staged_programs = 0;
    for case_no in 0..120u64 {
        let a = lhs[rng.gen_range(0..lhs.len())];
        let b = rhs[rng.gen_range(0..rhs.len())];
        let e = epi[rng.gen_range(0..epi.len())];
        let product = format!("(sum(l:k) {a} * {b})");
        let body = e.replace('S', &product);
        let body = if rng.gen_bool(0.3) {
            format!("gen(i:n) sum(j:m) {body}")
        } else {
            format!("gen(i:n, j:m) {body}")
        };
        let src = format!("fn f(X: [n,k]R, W: [k,m]R, y: [k]R, b: [m]R) -> _ = {body}")
            .replace(" -> _", "");
        let f = func(&src);
        let o = optimize(&f, &cfg.opt).unwrap();
        staged_programs += usize::from(print_function(&o.program).contains("let"));
        let class = ValueClass::ALL[case_no as usize % ValueClass::ALL.len()];
        for max in [2usize, 5] {
            if let Err(d) = contract_check(&f, max, class, &cfg, &mut rng) {
                panic!(
                    "{src}
{class:?}: {d}"
                );
            }
        }
    }
    assert!(
        staged_programs >= 60,
        "only {staged_programs} of 120 programs staged"
    );
}
