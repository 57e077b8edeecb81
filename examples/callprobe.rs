//! Runs one call path of a small kernel N times, for counting
//! instructions per call under callgrind or `perf stat` (run it with two
//! values of N and divide the difference by the difference of N).
//!
//! `cargo run --release --example callprobe -- PATH N` with PATH one of
//! `dot3-call`, `dot3-call_into`, `dot3-eval_into`, `dot3-eval`,
//! `mv3-call_into`, `mv3-eval_into`, `mv3-eval`.
use einsat::jit::{self, Kernel};
use einsat::Value;
use ndarray::{arr0, array, Array1, ArrayD, IxDyn};
use std::hint::black_box;
use std::sync::Arc;

fn kernel(src: &str) -> Arc<Kernel> {
    let p = einsat::load(src).unwrap();
    jit::compile(&p.functions[0]).unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: callprobe PATH N");
        std::process::exit(2);
    }
    let n: usize = args[2].parse().unwrap();
    let path = args[1].as_str();
    let dot = || kernel("fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]");
    let mv = || kernel("fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]");
    let x = array![1.0, 2.0, 3.0];
    let y = array![0.5, -1.0, 2.0];
    let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.5]];
    let vargs = [
        Value::Array(x.clone().into_dyn()),
        Value::Array(y.clone().into_dyn()),
    ];
    let margs = [
        Value::Array(a.clone().into_dyn()),
        Value::Array(x.clone().into_dyn()),
    ];
    let mut s = 0.0;
    match path {
        "dot3-call" => {
            let k = dot();
            for _ in 0..n {
                if let Value::Real(v) = k.call(black_box(&vargs)).unwrap() {
                    s += v;
                }
            }
        }
        "dot3-call_into" => {
            let k = dot();
            let mut out = Value::Real(0.0);
            for _ in 0..n {
                k.call_into(black_box(&vargs), &mut out).unwrap();
            }
        }
        "dot3-eval_into" => {
            let k = dot();
            let mut r = arr0(0.0);
            for _ in 0..n {
                k.eval_into((black_box(&x), black_box(&y)), &mut r).unwrap();
            }
            s += r[()];
        }
        "dot3-eval" => {
            let k = dot();
            for _ in 0..n {
                s += k.eval::<f64>((black_box(&x), black_box(&y))).unwrap();
            }
        }
        "mv3-call_into" => {
            let k = mv();
            let mut out = Value::Array(ArrayD::zeros(IxDyn(&[3])));
            for _ in 0..n {
                k.call_into(black_box(&margs), &mut out).unwrap();
            }
        }
        "mv3-eval_into" => {
            let k = mv();
            let mut o = Array1::zeros(3);
            for _ in 0..n {
                k.eval_into((black_box(&a), black_box(&x)), &mut o).unwrap();
            }
            s += o[0];
        }
        "mv3-eval" => {
            let k = mv();
            for _ in 0..n {
                let o: Array1<f64> = k.eval((black_box(&a), black_box(&x))).unwrap();
                s += o[0];
            }
        }
        _ => {
            eprintln!("unknown path {path}");
            std::process::exit(2);
        }
    }
    black_box(s);
}
