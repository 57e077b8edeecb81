"""The tests of numpy's and opt_einsum's own suites that einsat is expected
to fail, each with its reason: per suite, (test name pattern, reason); a
pattern is matched (fnmatch) against the test's name with its parameters,
e.g. ``test_different_paths[e]``.
``run_peer_suites.py`` marks them xfail (a listed test that passes is
reported as an unexpected pass)."""

_DTYPES = (
    "object arrays: einsat computes bool, integer, float and complex einsums (each in numpy's "
    "result dtype) and refuses object arrays with DTypeError instead of calling their "
    "Python-level + and *"
)
_PATHS = (
    "the path is einsat's own plan: its planner minimises multiply-adds (numpy and "
    "opt_einsum count a step that sums an index twice) and plans outer products and "
    "single-tensor sums as steps, so it picks other paths than numpy's greedy/optimal "
    "(of lower or equal cost in its own count; in numpy's count within a few percent)"
)
_JAX = (
    "opt_einsum's jax backend (run where jax is installed, skipped elsewhere): einsat's "
    "contract accepts backend= and ignores it, computing numpy arrays: jax arrays are read "
    "as numpy arrays, which jax's tracers under jax.jit (the gradient test) cannot be; a "
    "ContractExpression's constants are einsat's own, not jax arrays in "
    "_evaluated_constants; and a full contraction gives numpy's scalar, as np.einsum does, "
    "where the jax backend converts its result to a 0-d ndarray"
)
_MEMORY = (
    "memory_limit: einsat keeps intermediates within the limit by slicing (recomputing "
    "in loops) where numpy and opt_einsum give up pairwise contraction (one step of all "
    "operands) or raise"
)

EXPECTED = {
    "numpy": [
        ("test_einsum_object_errors", _DTYPES),
        ("test_einsum_sums_object", _DTYPES),
        ("test_object_loop", _DTYPES),
        (
            "test_output_order",
            "einsat's result is a new C-ordered array (order='F' gives Fortran order); "
            "numpy's order='K' follows the operands' memory layout",
        ),
        (
            "test_subscript_range",
            "einsat's interleaved form takes subscripts >= 52 (opt_einsum's symbols, for "
            "networks of many indices) where numpy refuses them",
        ),
        ("test_memory_contraints", _MEMORY),
        ("test_long_paths", _PATHS),
        ("test_edge_paths", _PATHS),
        (
            "test_path_type_input_invalid",
            "a path that leaves tensors uncontracted raises einsat.OptionError (a "
            "ValueError), not RuntimeError",
        ),
        (
            "test_path_type_input",
            "einsum_path(optimize=False) shows einsat's plan (einsat always plans); numpy "
            "shows one step of all operands",
        ),
    ],
    "opt_einsum": [
        ("test_object_arrays_backend*", _DTYPES),
        ("test_jax[[]ijk,ikj[]]", _JAX),
        ("test_jax_with_constants*", _JAX),
        ("test_jax_jit_gradient", _JAX),
        (
            "test_contract_expression_checks",
            "einsat's contract_expression accepts optimize=False (einsat always plans) and "
            "words its shape errors itself (ShapeError, a ValueError)",
        ),
        (
            "test_can_blas_on_healed_broadcast_dimensions",
            "contraction_list's BLAS entry is False: einsat runs its own GEMM stages, "
            "opt_einsum's BLAS classification does not apply",
        ),
        (
            "test_bad_path_option",
            "an unknown optimize= name raises einsat.OptionError (a ValueError), not "
            "KeyError; contract() takes no shapes=",
        ),
        ("test_memory_paths", _MEMORY),
        ("test_dp_errors_when_no_contractions_found", _MEMORY),
        ("test_path_edge_cases[[]dp-eb,cb,fb->cef-order4[]]", _PATHS),
        ("test_path_edge_cases[[]branch-all-dd,fb,be,cdb->cef-order6[]]", _PATHS),
        ("test_path_edge_cases[[]optimal-dd,fb,be,cdb->cef-order[89][]]", _PATHS),
        ("test_path_edge_cases[[]dp-bca,cdb,dbf,afc->-order15[]]", _PATHS),
        ("test_path_edge_cases[[]greedy-dcc,fce,ea,dbf->ab-order16[]]", _PATHS),
        ("test_optimal_edge_cases", _PATHS),
        ("test_greedy_edge_cases", _PATHS),
        (
            "test_sharing_nesting[[]numpy[]]",
            "opt_einsum's shared_intermediates() caches its own intermediates; einsat "
            "compiles each contraction whole and shares nothing through that cache",
        ),
        (
            "test_partial_sharing[[]numpy[]]",
            "opt_einsum's shared_intermediates() caches its own intermediates; einsat "
            "compiles each contraction whole and shares nothing through that cache",
        ),
        (
            "test_chain_sharing[[]numpy-*",
            "opt_einsum's shared_intermediates() caches its own intermediates; einsat "
            "compiles each contraction whole and shares nothing through that cache",
        ),
    ],
}
