"""pytest plugin: run numpy's or opt_einsum's own einsum tests against
einsat, by substituting einsat's functions for the library's before the
test modules are imported (``EINSAT_PEER=numpy`` or ``opt_einsum``), and
marking the failures einsat expects (``expected.py``, each with its reason)
as xfail. Used by ``run_peer_suites.py``."""

import fnmatch
import os

import pytest

from expected import EXPECTED


def _substitute(suite):
    import einsat

    if suite == "numpy":
        import numpy as np

        np.einsum = einsat.einsum
        np.einsum_path = einsat.einsum_path
    elif suite == "opt_einsum":
        import opt_einsum as oe
        import opt_einsum.contract as oc

        for mod in (oe, oc):
            mod.contract = einsat.contract
            mod.contract_path = einsat.contract_path
            mod.contract_expression = einsat.contract_expression
    else:
        raise SystemExit("EINSAT_PEER must be numpy or opt_einsum, not %r" % suite)


SUITE = os.environ.get("EINSAT_PEER", "")
_substitute(SUITE)


def _reason(nodeid):
    name = nodeid.split("::")[-1]
    for pattern, reason in EXPECTED.get(SUITE, []):
        if fnmatch.fnmatchcase(name, pattern):
            return reason
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        reason = _reason(item.nodeid)
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
