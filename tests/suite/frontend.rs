//! The front ends: the builder and the parser agree on the notebook programs,
//! size inference works and reports conflicts, and einsum (plain and batched)
//! agrees with a direct evaluation of the contraction.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;
use common::cases;
use einsat::frontend::builder::*;
use einsat::frontend::einsum::{einsum, einsum_batched, parse_batch_args};
use einsat::syntax::{parse_program, print_function};
use einsat::{interp, load, Error, Function, Value};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use std::collections::BTreeMap;

const NOTEBOOK: &str = include_str!("../../examples/notebook.tl");

fn built(name: &str) -> Function {
    match name {
        "axc" => func("axc", |b| {
            let a = b.param("A", "[3,3]R");
            let x = b.param("x", "[3]R");
            let c = b.param("c", "[3]R");
            gen(3, |i| c.at(i) + sum(3, |j| a.at2(i, j) * x.at(j)))
        }),
        "tr" => func("tr", |b| {
            let a = b.param("A", "[3,3]R");
            sum(3, |i| a.at2(i, i))
        }),
        "diag" => func("diag", |b| {
            let x = b.param("x", "[3]R");
            gen(3, |i| gen(3, |j| bracket(i.eq(j)) * x.at(i)))
        }),
        "ab3" => func("ab3", |b| {
            let a = b.param("a", "[3]R");
            let bb = b.param("b", "[3]R");
            let c3 = gen_named("j", 3, |j| {
                pair(pair(a.at(j), bb.at(j)), a.at(j) * bb.at(j))
            });
            let_named("c3", c3, |c3| {
                sum_named("j", 3, |j| {
                    c3.at(j).fst().fst() + c3.at(j).fst().snd() + c3.at(j).snd()
                })
            })
        }),
        "ctrct" => func("ctrct", |b| {
            let d = b.param("D", "[3,3,3]R");
            let a = b.param("a", "[3]R");
            let bb = b.param("b", "[3]R");
            gen(3, |i| {
                sum(3, |j| {
                    let_named("m", sum(3, |k| d.at3(i, j, k) * a.at(k)), |m| m * bb.at(j))
                })
            })
        }),
        "qprod" => func("qprod", |b| {
            let a = b.param("A", "[3,3]R");
            let x = b.param("x", "[3]R");
            sum_named("k", 3, |k| {
                gen_named("i", 3, |i| sum_named("j", 3, |j| a.at2(i, j) * x.at(j))).at(k) * x.at(k)
            })
        }),
        "dprod" => func("dprod", |b| {
            let x = b.param("x", "[3]R");
            let a = b.param("a", "[3]R");
            sum_named("j", 3, |j| {
                sum_named("i", 3, |i| {
                    a.at(j)
                        * gen_named("i", 3, |i2| {
                            gen_named("j", 3, |j2| bracket(i2.eq(j2)) * x.at(i2))
                        })
                        .at2(j, i)
                        * a.at(i)
                })
            })
        }),
        _ => unreachable!(),
    }
    .unwrap()
}

#[test]
fn builder_and_parser_agree_on_the_notebook() {
    let prog = load(NOTEBOOK).unwrap();
    for name in ["axc", "tr", "diag", "ab3", "ctrct", "qprod", "dprod"] {
        let f = built(name);
        assert_eq!(
            &f,
            prog.get(name).unwrap(),
            "{name}:\n{}",
            print_function(&f)
        );
    }
}

#[test]
fn builder_affine_indices_and_predicates() {
    let f = func("band", |b| {
        let a = b.param("A", "[n,n]R");
        let x = b.param("x", "[n]R");
        gen("n", |i| {
            sum("n", |j| {
                bracket((i - 1).le(j) & j.le(i + 1) & !(2 * i).eq(j)) * a.at2(i, j) * x.at(j + 1)
            })
        })
    })
    .unwrap();
    let text = print_function(&f);
    assert!(
        text.contains("[i-1 <= j && j <= i+1 && !(2*i = j)] * A[i, j] * x[j+1]"),
        "{text}"
    );
    assert_eq!(parse_program(&text).unwrap().program.functions[0], f);
}

#[test]
fn binder_sizes_are_inferred() {
    let f = func("mv", |b| {
        let a = b.param("A", "[n,m]R");
        let x = b.param("x", "[m]R");
        gen_auto(|i| sum_auto(|j| a.at2(i, j) * x.at(j)))
    })
    .unwrap();
    assert_eq!(
        einsat::syntax::print_expr(&f.body),
        "gen(i:n) sum(j:m) A[i, j] * x[j]"
    );
    assert_eq!(f.ret, Some(einsat::syntax::parse_type("[n]R").unwrap()));
}

#[test]
fn conflicting_or_missing_sizes_are_errors() {
    let e = func("bad", |b| {
        let x = b.param("x", "[3]R");
        let y = b.param("y", "[4]R");
        sum_auto(|i| x.at(i) * y.at(i))
    })
    .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("index `i` is used with size 3 on `x` and size 4 on `y`"),
        "{m}"
    );
    let e = func("bad", |b| {
        let x = b.param("x", "[3]R");
        sum_auto(|i| x.at(i + 1))
    })
    .unwrap_err();
    assert!(
        e.to_string().contains("cannot infer the size of index `i`"),
        "{e}"
    );
    let e = func("bad", |b| b.param("x", "[3R")).unwrap_err();
    assert!(matches!(e, Error::Frontend(_)), "{e}");
    // a type error in a built program is reported as one
    let e = func("bad", |b| {
        let x = b.param("x", "[3]R");
        sum(4, |i| x.at(i))
    })
    .unwrap_err();
    assert!(matches!(e, Error::Type(_)), "{e}");
}

#[test]
fn einsum_programs_print_and_parse_back() {
    for spec in [
        "ij,jk->ik",
        "ij,jk",
        "ii->",
        "ii->i",
        "i,i",
        ",i->i",
        "ijk,k->ij",
        "ba",
    ] {
        let f = einsum(spec).unwrap();
        let text = print_function(&f);
        assert_eq!(
            parse_program(&text).unwrap().program.functions[0],
            f,
            "{spec}: {text}"
        );
    }
    let f = einsum("ij,jk->ik").unwrap();
    assert_eq!(
        print_function(&f),
        "fn einsum(A: [ni,nj]R, B: [nj,nk]R) -> [ni,nk]R =\n  gen(i:ni, k:nk) sum(j:nj) A[i, j] * B[j, k]\n"
    );
    // implicit output: letters seen once, alphabetically
    assert_eq!(
        einsat::syntax::print_expr(&einsum("ba").unwrap().body),
        "gen(a:na, b:nb) A[b, a]"
    );
}

#[test]
fn einsum_errors() {
    for (spec, needle) in [
        ("...ij->ij", "ellipsis"),
        ("ij->k", "does not appear"),
        ("ij->ii", "appears twice"),
        ("i->j->k", "more than once"),
        ("i1,j", "not an index letter"),
    ] {
        let e = einsum(spec).unwrap_err().to_string();
        assert!(e.contains(needle), "{spec}: {e}");
    }
}

/// opt_einsum's symbol `i` (`oe.get_symbol`): the 52 ASCII letters, then
/// characters from U+00C0 on, skipping the surrogates.
fn symbol(i: u32) -> char {
    const BASE: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    if i < 52 {
        BASE[i as usize] as char
    } else if i >= 55296 {
        char::from_u32(i + 2048).unwrap()
    } else {
        char::from_u32(i + 140).unwrap()
    }
}

#[test]
fn einsum_index_letters_beyond_ascii() {
    // letters and non-letters (U+00D7 ×, U+00F7 ÷) beyond ASCII are index
    // letters; each is written as an identifier, and the program parses back
    let f = einsum("i×,×÷->i÷").unwrap();
    let text = print_function(&f);
    assert_eq!(
        text,
        "fn einsum(A: [ni,nu00D7]R, B: [nu00D7,nu00F7]R) -> [ni,nu00F7]R =\n  gen(i:ni, u00F7:nu00F7) sum(u00D7:nu00D7) A[i, u00D7] * B[u00D7, u00F7]\n"
    );
    assert_eq!(parse_program(&text).unwrap().program.functions[0], f);
    // it computes the product
    let a = ArrayD::from_shape_vec(IxDyn(&[2, 3]), (0..6).map(f64::from).collect()).unwrap();
    let b = ArrayD::from_shape_vec(IxDyn(&[3, 2]), (0..6).map(f64::from).collect()).unwrap();
    let want = a
        .clone()
        .into_dimensionality::<ndarray::Ix2>()
        .unwrap()
        .dot(&b.clone().into_dimensionality::<ndarray::Ix2>().unwrap());
    let got = interp::run(&f, &[Value::Array(a), Value::Array(b)]).unwrap();
    assert!(got.approx_eq(&Value::Array(want.into_dyn()), 1e-12, 1e-12));
    // implicit output: by code point, as numpy and opt_einsum sort
    assert_eq!(
        einsat::syntax::print_expr(&einsum("Àb").unwrap().body),
        "gen(b:nb, u00C0:nu00C0) A[u00C0, b]"
    );
    // a ring of 300 matrices, its letters opt_einsum's symbols 0..300
    let terms: Vec<String> = (0..300)
        .map(|k| format!("{}{}", symbol(k), symbol((k + 1) % 300)))
        .collect();
    let f = einsum(&format!("{}->", terms.join(","))).unwrap();
    assert_eq!(f.params.len(), 300);
    // ASCII punctuation and digits keep numpy's errors; whitespace and
    // control characters beyond ASCII are not letters either
    for (spec, needle) in [
        ("i1,j", "`1` is not an index letter"),
        ("i#,j", "`#` is not an index letter"),
        ("ij->i\u{85}", "whitespace (U+0085)"),
        ("i\u{2003}j", "whitespace (U+2003)"),
        ("i\u{9f}j", "is not an index letter"),
    ] {
        let e = einsum(spec).unwrap_err().to_string();
        assert!(e.contains(needle), "{spec:?}: {e}");
    }
}

/// Direct evaluation of an einsum over all index assignments.
fn direct(
    inputs: &[Vec<char>],
    output: &[char],
    sizes: &BTreeMap<char, usize>,
    arrays: &[ArrayD<f64>],
) -> ArrayD<f64> {
    let letters: Vec<char> = sizes.keys().copied().collect();
    let out_shape: Vec<usize> = output.iter().map(|c| sizes[c]).collect();
    let mut out = ArrayD::zeros(IxDyn(&out_shape));
    let total: usize = letters.iter().map(|c| sizes[c]).product();
    for mut flat in 0..total {
        let mut val = BTreeMap::new();
        for c in &letters {
            val.insert(*c, flat % sizes[c]);
            flat /= sizes[c];
        }
        let mut prod = 1.0;
        for (subs, a) in inputs.iter().zip(arrays) {
            let ix: Vec<usize> = subs.iter().map(|c| val[c]).collect();
            prod *= a[IxDyn(&ix)];
        }
        let oix: Vec<usize> = output.iter().map(|c| val[c]).collect();
        out[IxDyn(&oix)] += prod;
    }
    out
}

fn to_value(a: ArrayD<f64>) -> Value {
    if a.ndim() == 0 {
        Value::Real(a[IxDyn(&[])])
    } else {
        Value::Array(a)
    }
}

/// (spec, operand subscripts, output subscripts, sizes, seed).
type Case = (
    String,
    Vec<Vec<char>>,
    Vec<char>,
    BTreeMap<char, usize>,
    u64,
);

fn arb_einsum() -> impl Strategy<Value = Case> {
    let operand = prop::collection::vec(prop::sample::select(vec!['a', 'b', 'c', 'd']), 0..4);
    (
        prop::collection::vec(operand, 1..4),
        any::<bool>(),
        any::<u64>(),
        prop::collection::vec(1usize..4, 4),
    )
        .prop_map(|(inputs, explicit, seed, sz)| {
            let mut used: Vec<char> = inputs.iter().flatten().copied().collect();
            used.sort();
            used.dedup();
            let sizes: BTreeMap<char, usize> = used
                .iter()
                .map(|c| (*c, sz[(*c as u8 - b'a') as usize]))
                .collect();
            let ins: Vec<String> = inputs.iter().map(|o| o.iter().collect()).collect();
            let (spec, output) = if explicit {
                // a seeded subset of the used letters, in a seeded order
                let mut out: Vec<char> = used
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| (seed >> k) & 1 == 1)
                    .map(|(_, c)| *c)
                    .collect();
                if (seed >> 10) & 1 == 1 {
                    out.reverse();
                }
                (
                    format!("{}->{}", ins.join(","), out.iter().collect::<String>()),
                    out,
                )
            } else {
                let all: Vec<char> = inputs.iter().flatten().copied().collect();
                let out: Vec<char> = used
                    .iter()
                    .copied()
                    .filter(|c| all.iter().filter(|d| *d == c).count() == 1)
                    .collect();
                (ins.join(","), out)
            };
            (spec, inputs, output, sizes, seed)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(1000)))]

    #[test]
    fn einsum_agrees_with_direct_evaluation((spec, inputs, output, sizes, seed) in arb_einsum()) {
        let f = einsum(&spec).unwrap();
        let mut state = seed | 1;
        let mut next = || { state ^= state << 13; state ^= state >> 7; state ^= state << 17; (state % 1000) as f64 / 250.0 - 2.0 };
        let arrays: Vec<ArrayD<f64>> = inputs.iter().map(|subs| {
            let shape: Vec<usize> = subs.iter().map(|c| sizes[c]).collect();
            let n: usize = shape.iter().product();
            ArrayD::from_shape_vec(IxDyn(&shape), (0..n).map(|_| next()).collect()).unwrap()
        }).collect();
        let want = to_value(direct(&inputs, &output, &sizes, &arrays));
        let args: Vec<Value> = arrays.into_iter().map(to_value).collect();
        let got = interp::run(&f, &args).unwrap();
        prop_assert!(got.approx_eq(&want, 1e-9, 1e-12), "{}: {} vs {}", spec, got, want);
    }
}

#[test]
fn batched_einsum_shares_inputs() {
    let args = parse_batch_args("A,x;B*C,x").unwrap();
    assert_eq!(
        args,
        vec![
            vec![vec!["A".to_string()], vec!["x".to_string()]],
            vec![
                vec!["B".to_string(), "C".to_string()],
                vec!["x".to_string()]
            ],
        ]
    );
    let f = einsum_batched("ij,j->i", &args).unwrap();
    let names: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["A", "x", "B", "C"]);
    let m = |v: &[f64]| Value::Array(ArrayD::from_shape_vec(IxDyn(&[2, 2]), v.to_vec()).unwrap());
    let a = m(&[1.0, 2.0, 3.0, 4.0]);
    let b = m(&[0.5, 1.0, -1.0, 2.0]);
    let c = m(&[2.0, 2.0, 1.0, 3.0]);
    let x = Value::Array(ndarray::arr1(&[1.0, -1.0]).into_dyn());
    let got = interp::run(&f, &[a, x, b, c]).unwrap();
    // A x = [-1, -1]; (B∘C) x = [1*1 - 2*1, -1 - 6] = [-1, -7]
    let want = Value::pair(
        Value::Array(ndarray::arr1(&[-1.0, -1.0]).into_dyn()),
        Value::Array(ndarray::arr1(&[-1.0, -7.0]).into_dyn()),
    );
    assert!(got.approx_eq(&want, 1e-12, 0.0), "{got}");
    // three outputs nest to the right
    let three = einsum_batched("i->", &parse_batch_args("a;b;c").unwrap()).unwrap();
    assert_eq!(
        three.ret,
        Some(einsat::syntax::parse_type("(R, (R, R))").unwrap())
    );
    // errors
    assert!(einsum_batched("ij,j->i", &parse_batch_args("A,x;x,A").unwrap()).is_err());
    assert!(einsum_batched("ij,j->i", &parse_batch_args("A").unwrap()).is_err());
    assert!(parse_batch_args("A*,x").is_err());
}

/// Issue 22: numpy's einsum skips spaces between subscripts and refuses
/// other whitespace (`numpy.einsum("ij,\tjk->ik", …)`: "invalid subscript
/// '\t'"), and `->`/`...` split by a space; the front end does the same,
/// with the column and an excerpt in the error.
#[test]
fn einsum_specs_allow_spaces_only() {
    let plain = einsum("ij,jk->ik").unwrap();
    for spec in [" ij, jk -> ik ", "i j,j k->i k", "ij ,jk->ik"] {
        assert_eq!(einsum(spec).unwrap(), plain, "{spec:?}");
    }
    assert_eq!(einsum("ij,jk->").unwrap(), einsum("ij,jk-> ").unwrap());
    for (spec, needle) in [
        ("ij,\tjk->ik", "a tab (U+0009) in the spec: numpy's grammar allows only spaces between subscripts (column 4 of `ij,\\tjk->ik`)"),
        ("ij,jk\n->ik", "a newline (U+000A) in the spec"),
        ("ij,jk->ik\r", "a carriage return (U+000D)"),
        ("ij,\u{a0}jk->ik", "whitespace (U+00A0)"),
        ("ij,jk- >ik", "`-` appears only as part of `->` (column 6"),
        ("ij,jk>ik", "`>` appears only as part of `->` (column 6"),
        ("i. ..j", "`.` appears only as part of `...` (column 2"),
        ("i1,j", "`1` is not an index letter (a-z, A-Z, or a character beyond ASCII) (column 2 of `i1,j`)"),
        ("ij->ii", "output index `i` appears twice (column 6"),
        ("ij->k", "does not appear in any operand (column 5"),
        ("ij->i,j", "the output has no `,`"),
        ("i->j->k", "`->` appears more than once (column 5"),
        ("i\u{1}j", "`\\u{1}` is not an index letter"),
    ] {
        let e = einsum(spec).unwrap_err().to_string();
        assert!(e.contains(needle), "{spec:?}: {e}");
    }
    // a long spec is quoted as an excerpt around the error
    let long = format!("{}1", "a".repeat(1 << 20));
    let e = einsum(&long).unwrap_err().to_string();
    assert!(e.len() < 200, "{} bytes", e.len());
    assert!(e.contains("(column 1048577 of `…aaa"), "{e}");
}

/// `...` (numpy's broadcast axes) is the einsum front end's: Rust, the CLI
/// and Python expand it in one place (`expand_ellipsis`).
#[test]
fn ellipsis_expands_for_known_ranks() {
    use einsat::frontend::einsum::{einsum_ranked, expand_ellipsis};
    let e = expand_ellipsis("...ij,...jk->...ik", &[4, 3]).unwrap();
    assert_eq!(e.explicit, "ABij,Bjk->ABik");
    assert_eq!(
        e.labels,
        vec![vec!['A', 'B', 'i', 'j'], vec!['B', 'j', 'k']]
    );
    // implicit output: the axes under `...` first, then the letters seen once
    assert_eq!(
        expand_ellipsis("i...,j", &[2, 1]).unwrap().explicit,
        "iA,j->Aij"
    );
    // fresh letters skip the spec's own
    assert_eq!(
        expand_ellipsis("A...->A...", &[2]).unwrap().explicit,
        "AB->AB"
    );
    // no ellipsis: the explicit spec of the same einsum
    assert_eq!(
        expand_ellipsis("ij,jk", &[2, 2]).unwrap().explicit,
        "ij,jk->ik"
    );
    // a batched product computes what numpy's does
    let f = einsum_ranked("...ij,...jk->...ik", &[3, 3]).unwrap();
    let a = ArrayD::from_shape_fn(vec![2, 2, 3], |ix| (ix[0] * 6 + ix[1] * 3 + ix[2]) as f64);
    let b = ArrayD::from_shape_fn(vec![2, 3, 2], |ix| (ix[0] + ix[1] * 2 + ix[2]) as f64 - 2.0);
    let r = einsat::interp::run(&f, &[to_value(a.clone()), to_value(b.clone())]).unwrap();
    let Value::Array(r) = r else { panic!("{r:?}") };
    for k in 0..2 {
        let want = a
            .index_axis(ndarray::Axis(0), k)
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap()
            .dot(
                &b.index_axis(ndarray::Axis(0), k)
                    .into_dimensionality::<ndarray::Ix2>()
                    .unwrap(),
            );
        assert_eq!(r.index_axis(ndarray::Axis(0), k), want.into_dyn());
    }
}

#[test]
fn ellipsis_errors_say_whether_spec_or_operands() {
    use einsat::frontend::einsum::{einsum, einsum_ranked, expand_ellipsis};
    let e = expand_ellipsis("...ij", &[1]).unwrap_err();
    assert!(e.operands, "{e:?}");
    assert_eq!(
        e.message,
        "operand 0 has 1 axes but its subscripts `...ij` name 2"
    );
    let e = expand_ellipsis("ij,jk", &[2]).unwrap_err();
    assert!(e.operands);
    assert_eq!(e.message, "the spec has 2 operands but 1 was given");
    let e = expand_ellipsis("...i,...j->ij", &[2, 2]).unwrap_err();
    assert!(e.operands);
    assert!(e.message.contains("no `...`"), "{}", e.message);
    let e = expand_ellipsis("i..j", &[2]).unwrap_err();
    assert!(!e.operands);
    assert_eq!(e.byte, Some(1));
    let e = expand_ellipsis("ij->jj", &[2]).unwrap_err();
    assert_eq!((e.operands, e.byte), (false, Some(5)));
    assert!(e.message.contains("appears twice"));
    // as a crate error: the column and an excerpt
    let e = einsum_ranked("ij->jj", &[2]).unwrap_err().to_string();
    assert_eq!(
        e,
        "einsum: output index `j` appears twice (column 6 of `ij->jj`)"
    );
    // without ranks, `...` is refused with where to give them
    let e = einsum("...ij").unwrap_err().to_string();
    assert!(
        e.contains("an ellipsis (`...`) needs the operands' ranks"),
        "{e}"
    );
}
