//! The builder's scoping: an index (or `let` variable) used outside the
//! closure of the binder that made it is an error, never a silent capture;
//! given names that would capture are errors; indices and expressions work
//! across threads.

use einsat::frontend::builder::*;
use einsat::syntax::{parse_program, print_expr, print_function};
use einsat::{interp, Error, Function, Value};
use ndarray::{arr1, arr2};

fn frontend_error(r: einsat::Result<Function>) -> String {
    match r {
        Err(Error::Frontend(m)) => m,
        Err(e) => panic!("expected a front-end error, got {e}"),
        Ok(f) => panic!("expected an error, got {}", print_function(&f)),
    }
}

/// `gen(i:3) (sum(j:3) x[j]) * sum(j:3) A[i,j]` with the second sum's `j`
/// being the first sum's index, smuggled out of its closure.
#[test]
fn an_index_escaping_into_a_sibling_sum_is_an_error() {
    let m = frontend_error(func("bad", |b| {
        let a = b.param("A", "[3,3]R");
        let x = b.param("x", "[3]R");
        gen(3, |i| {
            let mut escaped = None;
            let s1 = sum(3, |j| {
                escaped = Some(j);
                x.at(j)
            });
            let j = escaped.unwrap();
            s1 * sum(3, |_k| a.at2(i, j))
        })
    }));
    assert!(
        m.contains("index `j` is used outside the `sum` that made it"),
        "{m}"
    );
    // the same program written correctly builds and means what it says
    let f = func("good", |b| {
        let a = b.param("A", "[3,3]R");
        let x = b.param("x", "[3]R");
        gen(3, |i| sum(3, |j| x.at(j)) * sum(3, |j| a.at2(i, j)))
    })
    .unwrap();
    let a = arr2(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]);
    let x = arr1(&[1.0, 10.0, 100.0]);
    let r = interp::run(
        &f,
        &[
            Value::Array(a.clone().into_dyn()),
            Value::Array(x.clone().into_dyn()),
        ],
    )
    .unwrap();
    let want: Vec<f64> = (0..3).map(|i| x.sum() * a.row(i).sum()).collect();
    assert_eq!(r, Value::Array(arr1(&want).into_dyn()));
}

#[test]
fn escaping_expressions_and_variables_are_errors_too() {
    // an expression holding a sum's index, used after the sum
    let m = frontend_error(func("bad", |b| {
        let x = b.param("x", "[3]R");
        let mut escaped = None;
        let s = sum(3, |j| {
            escaped = Some(x.at(j));
            x.at(j)
        });
        s + escaped.unwrap()
    }));
    assert!(m.contains("used outside the `sum` that made it"), "{m}");
    // a gen's index used after the gen
    let m = frontend_error(func("bad", |b| {
        let x = b.param("x", "[3]R");
        let mut escaped = None;
        let g = gen(3, |i| {
            escaped = Some(i);
            x.at(i)
        });
        sum(3, |k| g.at(k) * x.at(escaped.unwrap()))
    }));
    assert!(m.contains("used outside the `gen` that made it"), "{m}");
    // a let variable used outside its let
    let m = frontend_error(func("bad", |b| {
        let x = b.param("x", "[3]R");
        let mut escaped = None;
        let l = let_(x.clone(), |t| {
            escaped = Some(t.clone());
            sum(3, |i| t.at(i))
        });
        l + sum(3, |i| escaped.clone().unwrap().at(i))
    }));
    assert!(m.contains("used outside the `let` that made it"), "{m}");
    // an index of another function altogether
    let mut stolen = None;
    let _ = func("first", |b| {
        let x = b.param("x", "[3]R");
        sum(3, |i| {
            stolen = Some(i);
            x.at(i)
        })
    })
    .unwrap();
    let m = frontend_error(func("second", |b| {
        let x = b.param("x", "[3]R");
        sum(3, |_| x.at(stolen.unwrap()))
    }));
    assert!(m.contains("its binder is not part of this function"), "{m}");
}

#[test]
fn given_names_that_would_capture_are_errors() {
    // the inner sum named like the outer gen, whose index it uses
    let m = frontend_error(func("bad", |b| {
        let a = b.param("A", "[3,3]R");
        gen_named("i", 3, |i| sum_named("i", 3, |j| a.at2(i, j)))
    }));
    assert!(m.contains("hides the outer `i`"), "{m}");
    // a let named like the parameter its value's body uses
    let m = frontend_error(func("bad", |b| {
        let x = b.param("x", "[3]R");
        let_named("x", num(2.0), |t| sum(3, |i| t * x.at(i)))
    }));
    assert!(m.contains("hides the `x`"), "{m}");
    // shadowing that captures nothing is fine (the notebook's dprod)
    let f = func("ok", |b| {
        let x = b.param("x", "[3]R");
        sum_named("i", 3, |i| {
            x.at(i) * gen_named("i", 3, |i2| x.at(i2) * 2.0).at(i)
        })
    })
    .unwrap();
    assert_eq!(
        print_expr(&f.body),
        "sum(i:3) x[i] * (gen(i:3) x[i] * 2)[i]"
    );
}

#[test]
fn automatic_names_avoid_given_ones() {
    // the outer gen is named by depth (`i`) unless an inner binder asked for
    // `i`; the program must mean the same either way
    let f = func("f", |b| {
        let a = b.param("A", "[3,3]R");
        gen(3, |i| sum_named("i", 3, |k| a.at2(i, k)))
    })
    .unwrap();
    let text = print_function(&f);
    assert_eq!(parse_program(&text).unwrap().program.functions[0], f);
    let a = arr2(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]);
    let r = interp::run(&f, &[Value::Array(a.into_dyn())]).unwrap();
    assert_eq!(
        r,
        Value::Array(arr1(&[6.0, 15.0, 24.0]).into_dyn()),
        "{text}"
    );
    // a sum built outside the gen it is used in is named by where it ends up
    let f = func("g", |b| {
        let x = b.param("x", "[3]R");
        let total = sum(3, |j| x.at(j));
        gen(3, |i| x.at(i) / total.clone())
    })
    .unwrap();
    assert_eq!(print_expr(&f.body), "gen(i:3) x[i] / sum(j:3) x[j]");
}

/// Before, names were interned per thread and an `Ix` used on another
/// thread panicked with `index out of bounds`.
#[test]
fn indices_and_expressions_work_across_threads() {
    let f = func("axc", |b| {
        let a = b.param("A", "[3,3]R");
        let x = b.param("x", "[3]R");
        let c = b.param("c", "[3]R");
        gen(3, |i| {
            // the index goes to another thread, which builds the sum
            let (a, x) = (a.clone(), x.clone());
            let s = std::thread::spawn(move || sum(3, |j| a.at2(i, j) * x.at(j)))
                .join()
                .unwrap();
            c.at(i) + s
        })
    })
    .unwrap();
    assert_eq!(
        print_expr(&f.body),
        "gen(i:3) c[i] + sum(j:3) A[i, j] * x[j]"
    );
    // functions built on several threads at once are all the same
    let handles: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                (0..50)
                    .map(|_| {
                        func("mv", |b| {
                            let a = b.param("A", "[n,m]R");
                            let x = b.param("x", "[m]R");
                            gen_auto(|i| sum_auto(|j| a.at2(i, j) * x.at(j)))
                        })
                        .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let want = einsat::load("fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i, j] * x[j]")
        .unwrap();
    for h in handles {
        for f in h.join().unwrap() {
            assert_eq!(&f, want.get("mv").unwrap());
        }
    }
}
