"""Statistics for comparing arms on shared items: pure computation over numpy arrays, no I/O.

Inputs are item × arm matrices (or item × repeat matrices for one arm); every result is a
frozen dataclass that names the method it used, and every random step is seeded with
``numpy.random.default_rng(seed)``. See docs/reference/statistics.md.
"""

from evalsite.stats.paired import (
    EXACT_LIMIT,
    McNemarResult,
    SignFlipResult,
    holm,
    mcnemar_exact,
    sign_flip_test,
)

__all__ = [
    "EXACT_LIMIT",
    "McNemarResult",
    "SignFlipResult",
    "holm",
    "mcnemar_exact",
    "sign_flip_test",
]
