//! Random arguments that fit a function's signature: what the rule check on
//! load ([`crate::egraph::check::RuleCheck`]) runs both sides of a rule on,
//! and what `einsat::testing` re-exports.

use crate::error::Result;
use crate::interp::value::{checked_elements, resolve, Boundary, Sizes, Value};
use crate::syntax::ast::*;
use ndarray::{ArrayD, IxDyn};
use rand::Rng;

fn random_boundary(b: &Boundary, sizes: &Sizes, rng: &mut impl Rng) -> Result<Value> {
    match b {
        Boundary::Array(s) if s.is_empty() => Ok(Value::Real(rng.gen_range(-2.0..2.0))),
        Boundary::Array(s) => {
            let shape: Vec<usize> = s.iter().map(|n| resolve(n, sizes)).collect::<Result<_>>()?;
            let len = checked_elements(&shape)?;
            let data: Vec<f64> = (0..len).map(|_| rng.gen_range(-2.0..2.0)).collect();
            Ok(Value::Array(
                ArrayD::from_shape_vec(IxDyn(&shape), data).expect("length matches shape"),
            ))
        }
        Boundary::Pair(a, b) => Ok(Value::pair(
            random_boundary(a, sizes, rng)?,
            random_boundary(b, sizes, rng)?,
        )),
    }
}

/// Random arguments for `f` (values uniform in [-2, 2), C order) with the
/// named sizes taken from `sizes`.
pub fn random_inputs(f: &Function, sizes: &Sizes, rng: &mut impl Rng) -> Result<Vec<Value>> {
    f.params
        .iter()
        .map(|p| random_boundary(&Boundary::of(&p.ty), sizes, rng))
        .collect()
}
