//! Rewrite rules for users: load a rule file or folder (checked for
//! soundness on load), check rules on random instances, and hand them to the
//! optimiser through [`crate::opt::Options::rules`].
//!
//! The rule format is described in `docs/rules.md`; every rule carries a
//! floating-point class ([`FpClass`], `docs/fp-contract.md`), which the
//! check on load verifies; the built-in rules are [`builtin_rules`].
//!
//! ```
//! use einsat::rules::{parse_rules, parse_rules_with, RuleCheck};
//! // a sound rule loads
//! let mine = parse_rules("mine.rules", "mul-two [exact]: (* 2 ?a) => (+ ?a ?a)\n").unwrap();
//! let opts = einsat::opt::Options {
//!     rules: Some([einsat::rules::builtin_rules(), mine].concat()),
//!     ..Default::default()
//! };
//! # let _ = opts;
//! // an unsound one is refused with a counterexample, unless the check is skipped
//! let bad = "bad [exact]: (+ ?a ?b) => (* ?a ?b)\n";
//! let e = parse_rules("bad.rules", bad).unwrap_err();
//! assert!(matches!(e, einsat::Error::UnsoundRule { .. }), "{e}");
//! assert_eq!(parse_rules_with("bad.rules", bad, &RuleCheck::skip()).unwrap().len(), 1);
//! ```

pub use crate::egraph::check::{check_rule, check_rules, RuleCheck, RuleReport};
pub use crate::egraph::load::{
    load_rules_dir, load_rules_dir_with, load_rules_file, parse_rules, parse_rules_with,
};
pub use crate::egraph::rules::{builtin_rules, FpClass, Rule};
