"""Independent references the tests check the package's statistics against."""

from __future__ import annotations


def holm_by_hand(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, written out from the definition."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for step, index in enumerate(order):
        running = max(running, (len(p_values) - step) * p_values[index])
        adjusted[index] = min(1.0, running)
    return adjusted
