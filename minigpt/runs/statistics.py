"""Is a difference between two recipes more than seed noise? Mean and spread, Welch's t-test, and a
paired bootstrap over names, in plain Python and torch (no SciPy).

    welch_p([1.94, 1.93, 1.94], [1.98, 1.99, 1.98])   # two-sided p-value, or None with fewer than 2 runs a side
    welch_interval([1.94, 1.93, 1.94], [1.98, 1.99, 1.98])   # its 95% interval: excludes 0 exactly when p < 0.05
    paired_interval(diffs, tokens)                     # 95% interval over names alone (seeds not resampled)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the annotations' torch: compare imports it; a sweep's table of losses does not
    import torch


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def variance(values: list[float]) -> float:
    """The sample variance (n - 1) of two or more values."""
    m = mean(values)
    return sum((v - m) ** 2 for v in values) / (len(values) - 1)


def sd(values: list[float]) -> float | None:
    """The sample standard deviation (n - 1); None for a single value, which has no spread to measure."""
    if len(values) < 2:
        return None
    return math.sqrt(variance(values))


def correlation(a: list[float], b: list[float]) -> float | None:
    """Pearson's r of two equally long lists; None where either has no spread."""
    ma, mb = mean(a), mean(b)
    da, db = [x - ma for x in a], [y - mb for y in b]
    norm = math.sqrt(sum(x * x for x in da) * sum(y * y for y in db))
    return sum(x * y for x, y in zip(da, db)) / norm if norm > 0 else None


def welch(a: list[float], b: list[float]) -> tuple[float, float, float] | None:
    """Welch's t statistic of mean(a) - mean(b), its standard error and degrees of freedom (Welch-Satterthwaite);
    None when a side has fewer than two values, or neither has any spread."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = variance(a) / len(a), variance(b) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return None
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return (mean(a) - mean(b)) / se, se, df


def welch_p(a: list[float], b: list[float]) -> float | None:
    """Two-sided p-value of Welch's t-test that a and b have the same mean."""
    test = welch(a, b)
    if test is None:
        return None
    t, _, df = test
    return regularized_beta(df / (df + t * t), df / 2, 0.5)  # P(|T| > |t|) for Student's t with df degrees


def welch_interval(a: list[float], b: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """The interval of mean(a) - mean(b) from Welch's test itself: the difference ± t_q × its standard error, t_q
    the quantile of Student's t at the test's degrees of freedom. It leaves out 0 exactly when welch_p < 1 - level,
    so the interval and the p-value never disagree."""
    test = welch(a, b)
    if test is None:
        return None
    _, se, df = test
    q = t_quantile(1 - level, df)
    difference = mean(a) - mean(b)
    return difference - q * se, difference + q * se


def t_quantile(two_sided: float, df: float) -> float:
    """The t > 0 where P(|T| > t) = `two_sided` for Student's t with df degrees (bisection on welch_p's tail)."""
    low, high = 0.0, 1.0
    while regularized_beta(df / (df + high * high), df / 2, 0.5) > two_sided:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        if regularized_beta(df / (df + middle * middle), df / 2, 0.5) > two_sided:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, by its continued fraction (modified Lentz),
    taken on the side where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * beta_fraction(x, a, b) / a
    return 1 - front * beta_fraction(1 - x, b, a) / b


def beta_fraction(x: float, a: float, b: float, tiny: float = 1e-300) -> float:
    """The continued fraction of the incomplete beta function, to about 15 digits."""
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    value = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            value *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return value


DRAWN_AT_ONCE = 2**22  # names drawn in one chunk of resamples: about 100 MB of indices and values


def resample(differences: torch.Tensor, tokens: torch.Tensor, count: int, generator) -> torch.Tensor:
    """`count` bootstrap statistics: the names drawn with replacement, the statistic of each draw."""
    import torch

    drawn = torch.randint(len(differences), (count, len(differences)), generator=generator)
    return differences[drawn].sum(1) / tokens[drawn].sum(1)


def paired_interval(
    differences: torch.Tensor, tokens: torch.Tensor, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """The bootstrap interval of sum(differences) / sum(tokens) over names drawn with replacement.

    `differences[i]` is name i's summed loss under one recipe minus another's, `tokens[i]` its scored tokens:
    the statistic is the difference of the two token-weighted mean losses, and pairing by name removes the
    names' own difficulty from the noise. Seeded, so the same runs give the same interval.
    """
    import torch  # here, not above: a sweep's own process needs mean and sd alone, and starts its workers sooner

    generator = torch.Generator().manual_seed(seed)
    n = len(differences)
    differences, tokens = differences.double(), tokens.double()
    at_once = max(1, DRAWN_AT_ONCE // max(n, 1))  # resamples a chunk: memory stays bounded however many names
    stats = torch.empty(resamples, dtype=torch.float64)  # written in place: no chunk's result outlives its chunk
    for start in range(0, resamples, at_once):
        stats[start : start + at_once] = resample(differences, tokens, min(at_once, resamples - start), generator)
    tail = (1 - level) / 2
    low, high = torch.quantile(stats, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return low, high
