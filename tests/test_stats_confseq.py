"""The anytime-valid confidence sequence (stats/confseq.py) against an independent reference."""

from __future__ import annotations

import pytest

from evalsite.stats.confseq import confidence_sequence, decide, family_alpha


def test_bad_inputs_name_the_culprit():
    with pytest.raises(ValueError, match="values: 1 outside"):
        confidence_sequence([0.0, 1.5], alpha=0.05)
    with pytest.raises(ValueError, match="alpha"):
        confidence_sequence([0.0], alpha=1.0)
    with pytest.raises(ValueError, match="pairs"):
        family_alpha(0.05, 0)
    with pytest.raises(ValueError, match="margin"):
        decide(-0.1, 0.1, margin=-1.0)


def test_decisions():
    assert decide(0.01, 0.2, margin=None) == "separated"
    assert decide(-0.2, -0.01, margin=0.05) == "separated"
    assert decide(-0.04, 0.04, margin=0.05) == "equivalent"
    assert decide(-0.04, 0.06, margin=0.05) is None
    assert family_alpha(0.05, 3) == pytest.approx(0.05 / 3)
