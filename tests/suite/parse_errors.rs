//! The parser's and type checker's error messages (issue 27): malformed
//! programs, each with every error it must report, at its line:column, with
//! its exact text. A message that changes is a visible change of what
//! users read: update the snapshot on purpose.

/// Every error of `src` as `(line, column, message)`, in source order.
fn errors_of(src: &str) -> Vec<(usize, usize, String)> {
    match einsat::load_named(src, "t.tl") {
        Ok(_) => Vec::new(),
        Err(einsat::Error::Parse(d) | einsat::Error::Type(d)) => d
            .diagnostics
            .iter()
            .map(|x| {
                let (l, c) = x.line_col(src).expect("source errors have positions");
                (l, c, x.message.clone())
            })
            .collect(),
        Err(e) => panic!("not a source error: {e}"),
    }
}

/// An expected error: line, column, message.
type Expected = (usize, usize, &'static str);

/// `(source, [(line, column, message)])`.
const CASES: &[(&str, &[Expected])] = &[
    (
        "fn f(x: [n]R) -> R = sum(i:n) x[i\nfn g(x: R) -> R = x",
        &[
            (1, 32, "`[` is never closed: expected `]` to close an index, found `fn` at 2:1"),
        ],
    ),
    (
        "fn f(x: R) -> R = x +",
        &[
            (1, 21, "expected an expression after `+`, found end of input at 1:22"),
        ],
    ),
    (
        "fn f(x: R) -> R = x * * 2",
        &[
            (1, 23, "expected an expression, found `*`"),
        ],
    ),
    (
        "fn f(x: R) -> R = sigmoid(x)",
        &[
            (1, 19, "unknown function `sigmoid`: the language has no `sigmoid`; write it as `1 / (1 + exp(-x))` (the functions are `sqrt`, `exp`, `log`, `sin`, `cos`, `tanh`, `abs`, `max`, `min`, `erf`, `pow`)"),
        ],
    ),
    (
        "fn f(x: R) -> R = expp(x)",
        &[
            (1, 19, "unknown function `expp` (did you mean `exp`?) (the functions are `sqrt`, `exp`, `log`, `sin`, `cos`, `tanh`, `abs`, `max`, `min`, `erf`, `pow`; a product is written with `*`)"),
        ],
    ),
    (
        "fn f(x: R) -> R = relu(x)",
        &[
            (1, 19, "unknown function `relu`: the language has no `relu`; write it as `max(x, 0)` (the functions are `sqrt`, `exp`, `log`, `sin`, `cos`, `tanh`, `abs`, `max`, `min`, `erf`, `pow`)"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n) y[i]",
        &[
            (1, 31, "unknown name `y`"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n) x[j]",
        &[
            (1, 31, "unknown index `j`"),
        ],
    ),
    (
        "fn f(x: [n]R) -> [m]R = gen(i:n) x[i]",
        &[
            (1, 18, "size `m` in the result type is not bound by any parameter"),
            (1, 18, "the body of `f` has type [n]R but the declared result type is [m]R"),
        ],
    ),
    (
        "fn f(x: R) -> R = (x + 1",
        &[
            (1, 19, "`(` is never closed: expected `)` to close a parenthesis, found end of input at 1:25"),
        ],
    ),
    (
        "fn f(x: R) -> R = (x + 1\n  * 2\nfn g(y: R) -> R = y",
        &[
            (1, 19, "`(` is never closed: expected `)` to close a parenthesis, found `fn` at 3:1"),
        ],
    ),
    (
        "fn f(x: [n]R -> R = x[0]",
        &[
            (1, 14, "expected `)` to close the parameter list, found `->`"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i n) x[i]",
        &[
            (1, 28, "expected `:` between the index name and its range, found `n`"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n x[i]",
        &[
            (1, 30, "expected `)` to close the binders of `sum`, found `x`"),
        ],
    ),
    (
        "fn f(x R) -> R = x",
        &[
            (1, 8, "expected `:` after the parameter name, found `R`"),
        ],
    ),
    (
        "fn (x: R) -> R = x",
        &[
            (1, 4, "expected a function name, found `(`"),
        ],
    ),
    (
        "fn f(x: R) -> R x",
        &[
            (1, 17, "expected `=` before the function body, found `x`"),
        ],
    ),
    (
        "fn f(x: R) -> R = let y = x y",
        &[
            (1, 29, "expected `in` after the bound value of `let`, found `y`"),
        ],
    ),
    (
        "fn f(x: R) -> R = let = x in x",
        &[
            (1, 23, "expected a name after `let`, found `=`"),
        ],
    ),
    (
        "fn f(x: R) -> R = x $ 2",
        &[
            (1, 21, "unexpected character `$`"),
        ],
    ),
    (
        "fn f(x: R) -> R = 1e400 * x",
        &[
            (1, 19, "number `1e400` is too large for an f64"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n) [i < n * x[i]",
        &[
            (1, 36, "index expressions must be affine: one side of `*` must be an integer"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n) [i <] * x[i]",
        &[
            (1, 35, "expected an index expression, found `]`"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n) x[i.5]",
        &[
            (1, 34, "expected `]` to close an index, found `.`"),
        ],
    ),
    (
        "fn f(x: (R, R)) -> R = x.2",
        &[
            (1, 26, "expected `0` or `1` after `.` (a pair projection), found `2`"),
        ],
    ),
    (
        "fn f(x: R) -> R = max(x)",
        &[
            (1, 19, "`max` takes 2 arguments, not 1"),
        ],
    ),
    (
        "fn f(x: R) -> R = exp(x, x)",
        &[
            (1, 19, "`exp` takes 1 argument, not 2"),
        ],
    ),
    (
        "fn f(x: R) -> R = eps[x]",
        &[
            (1, 19, "`eps` takes 2 or 3 indices, not 1"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n) x[i] fn g(y: R) -> R = y $",
        &[
            (1, 56, "unexpected character `$`"),
        ],
    ),
    (
        "fn f(x: R) -> R = x\nfn f(y: R) -> R = y",
        &[
            (2, 4, "function `f` is defined twice"),
        ],
    ),
    (
        "fn f(x: [n]R, x: [n]R) -> R = x[0]",
        &[
            (1, 15, "parameter `x` is declared twice"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = x",
        &[
            (1, 18, "the body of `f` has type [n]R but the declared result type is R"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n) x",
        &[
            (1, 31, "`sum` adds numbers, but its body has type [n]R"),
        ],
    ),
    (
        "fn f(xs: [n]R) -> R = sum(i:n) x[i]",
        &[
            (1, 32, "unknown name `x`"),
        ],
    ),
    (
        "fn f(values: [n]R) -> R = sum(i:n) valeus[i]",
        &[
            (1, 36, "unknown name `valeus` (did you mean `values`?)"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n) x[i, i]",
        &[
            (1, 31, "`[i]` indexes a tensor, but the expression has type R"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:m) x[i]",
        &[
            (1, 22, "size `m` is not bound by any parameter (every size name must occur in a parameter's type)"),
            (1, 31, "index `i` ranges over m but axis 0 of `x` has size n"),
        ],
    ),
    (
        "fn f(x: [count]R) -> R = sum(i:cuont) x[i]",
        &[
            (1, 26, "size `cuont` is not bound by any parameter (did you mean `count`?) (every size name must occur in a parameter's type)"),
            (1, 39, "index `i` ranges over cuont but axis 0 of `x` has size count"),
        ],
    ),
    (
        "fn f(x: R) -> R = x(2)",
        &[
            (1, 19, "unknown function `x` (the functions are `sqrt`, `exp`, `log`, `sin`, `cos`, `tanh`, `abs`, `max`, `min`, `erf`, `pow`; a product is written with `*`)"),
        ],
    ),
    (
        "fn f(x: [n]R) -> R = sum(i:n) x[i]]",
        &[
            (1, 35, "unexpected `]` after the function body (a binder extends as far right as possible; an operator or `)` may be missing)"),
        ],
    ),
];

#[test]
fn every_malformed_program_reports_each_error_where_it_is() {
    assert!(CASES.len() >= 30);
    let mut wrong = Vec::new();
    for (src, want) in CASES {
        let got = errors_of(src);
        let want: Vec<(usize, usize, String)> = want
            .iter()
            .map(|(l, c, m)| (*l, *c, m.to_string()))
            .collect();
        if got != want {
            wrong.push(format!("{src:?}\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn one_run_reports_the_errors_of_every_function() {
    // a syntax error in one function, a type error in another, a misspelt
    // name in a third: all three at once, in source order
    let src =
        "fn a(x: R) -> R = x +\nfn b(x: [n]R) -> R = sum(i:n) y[i]\nfn c(x: R) -> R = x * * 2\n";
    let got = errors_of(src);
    let lines: Vec<usize> = got.iter().map(|e| e.0).collect();
    assert_eq!(lines, vec![1, 2, 3], "{got:?}");
    assert!(matches!(einsat::load(src), Err(einsat::Error::Parse(_))));
}

#[test]
fn the_rendered_error_points_at_the_unclosed_bracket() {
    let src = "fn f(x: [n]R) -> R =\n  sum(i:n) x[i\n\nfn g(y: R) -> R = y\n";
    let e = einsat::load_named(src, "f.tl").unwrap_err().to_string();
    assert!(
        e.starts_with("f.tl:2:13: error: `[` is never closed"),
        "{e}"
    );
    assert!(e.contains("found `fn` at 4:1"), "{e}");
    // the caret line underlines the bracket
    assert!(
        e.contains("    2 |   sum(i:n) x[i\n      |             ^"),
        "{e}"
    );
}

#[test]
fn misspelt_names_get_a_suggestion_and_short_names_do_not() {
    let e = errors_of("fn f(weights: [n]R) -> R = sum(i:n) wieghts[i]");
    assert!(e[0].2.ends_with("(did you mean `weights`?)"), "{e:?}");
    let e = errors_of("fn f(x: [n]R) -> R = sum(i:n) y[i]");
    assert_eq!(e[0].2, "unknown name `y`");
    let e = errors_of("fn f(x: R) -> R = X");
    assert_eq!(e[0].2, "unknown name `X` (did you mean `x`?)");
}
