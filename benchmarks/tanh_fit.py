"""Fit the rational tanh of the compiled forward pass (:mod:`agents.actor_kernels`) and print its coefficients.

tanh(x) is approximated on [0, 9] as ``x * P(x^2) / Q(x^2)`` with ``Q(0) = 1`` (odd, so it holds on [-9, 9]; beyond
9, float32's tanh is +-1 and the kernel clips its input there). The fit is linear least squares on the linearized
error ``x P(u) - tanh(x) Q(u)``, divided by the previous iteration's Q so that it converges to the rational error
(Sanathanan and Koerner's iteration), with weights then grown where the error is largest (Lawson's) to push the fit
toward the smallest maximum error. It prints the coefficients as the kernel holds them and the maximum error of
the float32 evaluation (Horner's rule, as the kernel computes it) on a fine grid.

    python benchmarks/tanh_fit.py --degree 6
"""

from __future__ import annotations

import argparse

import numpy as np

CLIP = 9.0


def fit(degree: int, iterations: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """P's and Q's coefficients (lowest power first, ``Q[0] = 1``), each of ``degree`` in ``u = x^2``."""
    x = np.concatenate([np.linspace(0.0, CLIP, 20_001), np.linspace(0.0, 1.0, 5_001)])
    target, u = np.tanh(x), x * x
    powers = u[:, None] ** np.arange(degree + 1)
    design = np.hstack([x[:, None] * powers, -target[:, None] * powers[:, 1:]])
    weights, q_values = np.full(len(x), 1.0 / len(x)), np.ones(len(x))
    for iteration in range(iterations):
        scale = np.sqrt(weights) / q_values
        solution = np.linalg.lstsq(design * scale[:, None], target * scale, rcond=None)[0]
        p, q = solution[:degree + 1], np.concatenate([[1.0], solution[degree + 1:]])
        q_values = powers @ q
        if iteration >= 20:  # first let the iteration settle on the rational error, then reweight toward minimax
            weights = weights * np.abs(x * (powers @ p) / q_values - target) + 1e-300
            weights /= weights.sum()
    return p, q


def float32_error(p: np.ndarray, q: np.ndarray) -> float:
    """The largest error, against float64's tanh, of the float32 evaluation over [-12, 12]."""
    x = np.linspace(-12.0, 12.0, 2_400_001).astype(np.float32)
    clipped = np.clip(x, np.float32(-CLIP), np.float32(CLIP))
    u = clipped * clipped
    top, bottom = np.zeros_like(u), np.zeros_like(u)
    for c in p[::-1].astype(np.float32):
        top = top * u + c
    for c in q[::-1].astype(np.float32):
        bottom = bottom * u + c
    return float(np.abs((clipped * top / bottom).astype(np.float64) - np.tanh(x.astype(np.float64))).max())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--degree", type=int, default=6, help="degree of P and of Q in x^2")
    args = parser.parse_args(argv)
    p, q = fit(args.degree)
    print("P:", ", ".join(repr(float(c)) for c in p))
    print("Q:", ", ".join(repr(float(c)) for c in q[1:]), "(and Q0 = 1)")
    print(f"max error of the float32 evaluation on [-12, 12]: {float32_error(p, q):.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
