"""Runs compared: grouped by recipe, each group's seeds summed up, every group against a baseline.

    comparison = compare(["runs/a1", "runs/a2", "runs/b1", "runs/b2"])
    comparison.verdicts()   # ["b is better than a by 0.046 ± 0.003 nats (p = 0.001, 2 and 2 seeds)"]
    comparison.to_json()    # what `minigpt compare --json` prints

A group is the runs whose recipes are equal but for train.seed, trained by the same code (the core's
digest: an edited core is another experiment) and whose compute is alike: runs of one recipe whose steps
lie more than COMPUTE_SPREAD apart (a time limit on a busy machine) are split by their steps, unless
`pool`. A run of the same recipe, seed and code as another in its group is a repeat, counted once. Its
score is each run's best validation loss (or, with `data`, its loss on that one file). Against the baseline
group, one verdict: Welch's t-test over the seeds and the 95% interval from that same test, where both groups
have two or more; a bootstrap interval over names alone (seeds not resampled) is shown beside it, labelled so,
never as the verdict. Where the runs took unequal steps, the loss at the largest step every run evaluated gives
the answer at equal steps (or says why there is none).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from minigpt.common.arguments import as_path, as_paths
from minigpt.common.text import as_text, range_text
from minigpt.errors import UsageError
from minigpt.files.names_file import read_names
from minigpt.files.run_records import METRICS, read_metrics, series
from minigpt.formats.checkpoint import Checkpoint, held_out, load_checkpoint
from minigpt.formats.recipes import flat_config, recipe_differences
from minigpt.measurements.name_losses import name_losses
from minigpt.runs.new_names import is_new, sample
from minigpt.runs.run_directory import training_now
from minigpt.runs.statistics import mean, paired_interval, sd, welch, welch_interval, welch_p
from minigpt.runs.study_folder import trial_state

SIGNIFICANT = 0.05  # the p-value below which a verdict calls a difference more than seed noise
COMPUTE_SPREAD = 1.5  # runs of one recipe whose steps lie further apart than this are not seeds of one experiment


@dataclass
class RunScore:
    """One run as compared: where it is, its recipe, its score and how it got there."""

    path: Path  # as given
    checkpoint: Checkpoint  # its best.pt
    recipe: dict  # "section.key" -> value, the seed left out, the training names in (run_identity)
    score: float  # best validation loss, or the loss on --data
    steps: int
    seconds: float  # wall-clock time of the run, evaluations included
    curve: list[dict]  # metrics.jsonl, each record once
    per_name: torch.Tensor | None = None  # summed loss of each scored name
    said: list[str] = field(default_factory=list)  # what its records hold that a reader must know

    def last_recorded(self, key: str):
        """What its records last say of `key` (None where none does: a run older than the key)."""
        return next((r[key] for r in reversed(self.curve) if key in r), None)

    @property
    def tokens(self) -> int | None:
        return self.last_recorded("tokens")  # trained on, by its last log

    @property
    def threads(self) -> int | None:
        return self.last_recorded("threads")  # as its last start, or resume, recorded them

    def compute_text(self) -> str:
        """Its steps, tokens, threads and time, as a table line shows them."""
        count = self.tokens
        tokens = "" if count is None else f", {count / 1e6:.2f}M tokens" if count >= 1e6 else f", {count:,} tokens"
        threads = f", {self.threads} thread{'s' * (self.threads != 1)}" if self.threads is not None else ""
        return f"{self.steps:,} steps{tokens}{threads}, {self.seconds:.1f} s"


@dataclass
class Group:
    label: str
    runs: list[RunScore]
    p: float | None = None  # Welch's test against the baseline
    interval: tuple[float, float] | None = None  # its 95% interval of the difference, over seeds
    names_only: tuple[float, float] | None = None  # 95% bootstrap interval over names alone, paired by name
    samples: list[str] = field(default_factory=list)  # a few names from its first run (seed 0)
    new_share: float | None = None  # the share of 200 names from it that are not training names

    @property
    def scores(self) -> list[float]:
        return [r.score for r in self.runs]

    @property
    def mean(self) -> float:
        return mean(self.scores)

    @property
    def sd(self) -> float | None:
        return sd(self.scores)

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "runs": [as_text(r.path) for r in self.runs],
            "seeds": [r.checkpoint.config.train.seed for r in self.runs],
            "scores": self.scores,
            "mean": self.mean,
            "sd": self.sd,
            "steps": mean([r.steps for r in self.runs]),
            "seconds": mean([r.seconds for r in self.runs]),
            "run_steps": [r.steps for r in self.runs],
            "run_tokens": [r.tokens for r in self.runs],
            "run_threads": [r.threads for r in self.runs],
            "p": self.p,
            "interval": list(self.interval) if self.interval else None,
            "names_only_interval": list(self.names_only) if self.names_only else None,
            "samples": self.samples,
            "new_share": self.new_share,
        }


@dataclass
class Comparison:
    groups: list[Group]  # the baseline first
    differs: dict[str, list]  # each recipe key that differs between groups: its value in each group
    scored: str  # what the scores are: "best validation loss" or a file's loss
    no_interval: str = ""  # why there is no paired interval, when there is none
    notes: list[str] = field(default_factory=list)
    equal_steps: str = ""  # the loss at the largest step every run evaluated, or why there is none

    @property
    def baseline(self) -> Group:
        return self.groups[0]

    def verdicts(self) -> list[str]:
        return [verdict(group, self.baseline) for group in self.groups[1:]] + (
            [self.equal_steps] if self.equal_steps else []
        )

    def to_json(self) -> dict:
        return {
            "scored": self.scored,
            "baseline": self.baseline.label,
            "groups": [g.to_json() for g in self.groups],
            "differs": self.differs,
            "verdicts": self.verdicts(),
            "no_interval": self.no_interval or None,
            "notes": self.notes,
            "equal_steps": self.equal_steps or None,
        }


def verdict(group: Group, baseline: Group) -> str:
    """One line in words: which is better and by how much, or that seed noise could explain the difference."""
    difference = group.mean - baseline.mean
    test = welch(group.scores, baseline.scores)
    spread = f" ± {test[1]:.3f} (standard error)" if test else ""
    seeds = f"{len(group.runs)} and {len(baseline.runs)} seed{'s' if len(baseline.runs) > 1 else ''}"
    interval = f"; 95% interval [{group.interval[0]:+.3f}, {group.interval[1]:+.3f}]" if group.interval else ""
    if group.p is None:
        why = (
            "one seed a side cannot tell a gain from seed noise"
            if test is None and min(len(group.runs), len(baseline.runs)) < 2
            else "no spread to test"
        )
        return (
            f"{group.label} scores {difference:+.3f} nats against {baseline.label}, untested ({seeds}: {why}{interval})"
        )
    if group.p >= SIGNIFICANT:
        needed = seeds_to_tell(group, baseline)
        few = (
            (
                f": {seeds} are too few to tell a difference of this size from seed noise; about {needed:,} seeds "
                f"a side would"
            )
            if needed is not None and needed > min(len(group.runs), len(baseline.runs))
            else ""
        )
        return (
            f"{group.label} and {baseline.label} are within seed noise of each other: {difference:+.3f}{spread} "
            f"nats (p = {group.p:.3g}, {seeds}{interval}){few}"
        )
    better = "better" if difference < 0 else "worse"
    return (
        f"{group.label} is {better} than {baseline.label} by {abs(difference):.3f}{spread} nats "
        f"(p = {group.p:.3g}, {seeds}{interval})"
    )


def seeds_to_tell(group: Group, baseline: Group) -> int | None:
    """About how many seeds a side would tell the two groups' difference from seed noise at p = 0.05, at the
    spread they show: n = 2 (2 sd / difference)^2, two standard errors of a difference of two means of n."""
    spreads = [s for s in (group.sd, baseline.sd) if s is not None]
    difference = abs(group.mean - baseline.mean)
    if not spreads or difference == 0:
        return None
    pooled = math.sqrt(sum(s * s for s in spreads) / len(spreads))
    return max(2, math.ceil(2 * (2 * pooled / difference) ** 2))


def read_run(path: Path) -> RunScore:
    """A run directory's best checkpoint, recipe and records, each checked before it is counted."""
    if not Path(path).is_dir():
        raise UsageError(f"{path} is not a run directory (compare takes the folders `minigpt train` writes)")
    ckpt = load_checkpoint(path)
    if ckpt.best_val_loss is None:
        raise UsageError(
            f"{path}: the run has no validation loss to compare (it held out no validation names); "
            f"pass --data FILE to score every run on one names file"
        )
    if math.isnan(ckpt.best_val_loss):
        raise UsageError(
            f"{path}: its best validation loss is not a number (the run diverged), so it cannot be compared"
        )
    curve = read_metrics(path)
    if not curve:
        raise UsageError(f"{Path(path) / METRICS}: it holds no records, so the run's steps and time are unknown")
    seen, once = set(), []  # each record once, in its order: a line repeated would draw the curve twice
    for record in curve:
        key = hash(json.dumps(record, sort_keys=True))
        if key not in seen:
            seen.add(key)
            once.append(record)
    run = RunScore(
        path,
        ckpt,
        run_identity(ckpt),
        ckpt.best_val_loss,
        max(r["step"] for r in curve),
        max(r.get("elapsed", 0.0) for r in curve),
        once,
    )
    run.said = records_notes(path, curve, len(curve) - len(once))
    return run


def records_notes(path: Path, curve: list[dict], repeated: int) -> list[str]:
    """What a reader of a run's figures must know of its records: lines repeated (counted once), validation losses
    that are not numbers (left out of its curve), and a training that holds the run now (its figures are of now)."""
    notes, shown = [], as_text(path)
    if repeated:
        notes.append(f"{shown}'s {METRICS} repeats {repeated:,} line{'s' * (repeated > 1)}: each counted once")
    broken = [r["step"] for r in curve if isinstance(r.get("val_loss"), float) and not math.isfinite(r["val_loss"])]
    if broken:
        notes.append(
            f"{shown}'s {METRICS} holds a validation loss that is not a number at step{'s' * (len(broken) > 1)} "
            f"{', '.join(f'{s:,}' for s in broken[:3])}: left out of its curve"
        )
    pid = training_now(Path(path))
    if pid is not None:
        notes.append(f"{shown} is still training (process {pid}): its figures are the ones it has reached so far")
    return notes


def run_identity(ckpt: Checkpoint) -> dict:
    """What makes runs seeds of one experiment: the recipe, flat, without the seed that tells seeds apart, the
    names it was trained on (runs of one recipe on other data are never one group) and the code that trained
    it (the core's digest; "unknown" for a run older than the record). train.auto_scale is left out too: a run
    records the keys it trained with, and the flag only says whether scaling changed any of them."""
    left_out = ("train.seed", "train.auto_scale")
    recipe = {key: value for key, value in flat_config(ckpt.config).items() if key not in left_out}
    core = recorded if isinstance(recorded := ckpt.code.get("core"), str) else "unknown"
    return {**recipe, "data.trained_on": trained_on(ckpt.data), "code.core": core[:8]}


def trained_on(data: dict) -> str:
    """`names.txt 3f2a9c1e`: the training file's name and its names' digest (the file may have changed since)."""
    digest = data.get("train_digest") or "unknown"
    return f"{Path(data['path']).name} {digest[:8]}" if data.get("path") else digest[:8]


def group_runs(
    runs: list[RunScore], baseline: Path, pool: bool = False
) -> tuple[list[Group], dict[str, list], list[str]]:
    """Runs of equal recipes (but the seed) as groups, the baseline's first and the rest in the order first
    seen, each labelled by what tells it from the others; each differing key's value in each group; and what
    was said of a recipe's runs of unequal compute (split by their steps, or with `pool` pooled)."""
    by_recipe: dict[str, list[RunScore]] = {}
    for run in sorted(runs, key=lambda r: r.path != baseline):  # stable: the baseline's group comes first
        by_recipe.setdefault(json.dumps(run.recipe, sort_keys=True), []).append(run)
    members, said = [], []
    for runs_of_recipe in by_recipe.values():
        kept, repeats = without_repeats(runs_of_recipe)
        members.append(kept)
        said += repeats
    differs = recipe_differences([m[0].recipe for m in members])
    named = [run_stems(m) for m in members]
    if all(len(stems) == 1 for stems in named) and len({min(stems) for stems in named}) == len(members):
        labels = [min(stems) for stems in named]
    else:
        labels = [group_label(m[0].recipe, differs) for m in members]
    groups = []
    for label, runs_of_recipe in zip(labels, members):
        parts = [runs_of_recipe] if pool else by_compute(runs_of_recipe, baseline)
        steps = [r.steps for r in runs_of_recipe]
        if max(steps) > COMPUTE_SPREAD * min(steps):
            spread = f"{label}'s runs took {min(steps):,} to {max(steps):,} steps, more than {COMPUTE_SPREAD:g}x apart"
            said.append(
                f"{spread}: pooled as seeds of one group, as --pool asks"
                if pool
                else f"{spread}: not seeds of one experiment, so compared as {len(parts)} groups by their "
                f"compute (--pool pools them)"
            )
        groups += [
            Group(label if len(parts) == 1 else f"{label} ({range_text([r.steps for r in part])} steps)", part)
            for part in parts
        ]
    return groups, differs, said


def without_repeats(runs: list[RunScore]) -> tuple[list[RunScore], list[str]]:
    """A recipe's runs (equal in recipe, data and code) with one run of each seed: another of the same seed
    repeats it (a fixed number of steps repeats it exactly), so it is no second seed; and what was said of it."""
    first: dict[int, RunScore] = {}
    for run in runs:
        first.setdefault(run.checkpoint.config.train.seed, run)
    repeats = [run for run in runs if first[run.checkpoint.config.train.seed] is not run]
    return [run for run in runs if run not in repeats], [
        f"{as_text(run.path)} repeats {as_text(first[run.checkpoint.config.train.seed].path)} (the same recipe, seed "
        f"{run.checkpoint.config.train.seed} and code): a repeat, not another seed, so it is counted once"
        for run in repeats
    ]


def by_compute(runs: list[RunScore], baseline: Path) -> list[list[RunScore]]:
    """A recipe's runs in parts of like compute: by their steps, a new part where a run took more than
    COMPUTE_SPREAD times the fewest steps of the part before; the baseline's part first."""
    parts: list[list[RunScore]] = []
    for run in sorted(runs, key=lambda r: r.steps):
        if parts and run.steps <= COMPUTE_SPREAD * parts[-1][0].steps:
            parts[-1].append(run)
        else:
            parts.append([run])
    return sorted(parts, key=lambda part: all(r.path != baseline for r in part))


def at_equal_steps(groups: list[Group]) -> str:
    """Where the runs took unequal steps: each group's mean loss at the largest step every run evaluated, against
    the baseline's; or why there is no such step. Nothing where every run took the same steps."""
    runs = [r for g in groups for r in g.runs]
    if len({r.steps for r in runs}) == 1:
        return ""
    evaluated = {r.path: dict(series(r.curve, "val_loss")) for r in runs}
    shared = set.intersection(*(set(losses) for losses in evaluated.values())) - {0}
    if not shared:
        fewest = min(runs, key=lambda r: r.steps)
        return (
            f"no answer at equal steps: no step was evaluated by every run (the shortest, "
            f"{as_text(fewest.path.name)}, stopped at {fewest.steps:,}); time-limited runs of this version "
            f"evaluate at steps 64, 128, 256, ..., which any two share"
        )
    at = max(shared)
    means = [mean([evaluated[r.path][at] for r in g.runs]) for g in groups]
    base = groups[0]
    against = "; ".join(f"{g.label} {m:.4f} ({m - means[0]:+.4f})" for g, m in zip(groups[1:], means[1:]))
    clock = any(r.checkpoint.config.train.time_limit > 0 for r in runs)
    schedule = (
        (
            " (a time-limited run's learning rate follows its clock: one the machine slowed is further "
            "down its schedule at the same step)"
        )
        if clock
        else ""
    )
    return (
        f"at equal steps (step {at:,}, which every run reached and evaluated): {base.label} {means[0]:.4f}; "
        f"{against}{schedule}"
    )


def run_stems(runs: list[RunScore]) -> set[str]:
    """The runs' directory names without their seed (`drop0lr2x-s3` → `drop0lr2x`, `trial-4-seed-1337` → `trial-4`)."""
    return {
        re.sub(r"[-_.]?(s|seed)[-_]?\d+$", "", as_text(r.path.resolve().name)) or as_text(r.path.name) for r in runs
    }


def group_label(recipe: dict, differs: dict) -> str:
    """`dropout=0 lr=0.006`: the keys that tell this group from the others (their short names where unique), for
    groups that their directories' names do not tell apart."""
    if not differs:
        return "all runs"
    short = {key: key.split(".", 1)[1] for key in differs}
    if len(set(short.values())) < len(short):
        short = {key: key for key in differs}
    return " ".join(f"{short[key]}={recipe.get(key)}" for key in differs)


def score_names(runs: list[RunScore], data: Path | None) -> tuple[list[str] | None, str, str]:
    """The names every run is scored on, what they are, and (when there are none) why."""
    if data is not None:
        return read_names(data), f"loss on names file {as_text(data)}", ""
    digests = {r.checkpoint.data.get("val_digest") for r in runs}
    if len(digests) > 1 or None in digests:
        raise UsageError(
            "the runs were validated on different names, so their losses do not compare; pass --data "
            "FILE to score every run on one names file"
        )
    names, why = held_out(runs[0].checkpoint)
    return names, "best validation loss", why


def compare(
    paths: Sequence[str | Path], baseline: str | Path | None = None, data: str | Path | None = None, pool: bool = False
) -> Comparison:
    """Read, group and test the runs at `paths`; `baseline` (one of them, or another run) is the group every
    other is measured against (default: the first run's). `pool`: runs of one recipe are one group however
    unequal their compute (said in a note)."""
    run_dirs = as_paths(paths, "compare's runs")
    baseline = as_path(baseline, "the baseline run") if baseline is not None else None
    data = as_path(data, "the names file (data)") if data is not None else None
    if baseline is not None:  # a run is one run however its path is spelled: the baseline is the listed one
        listed = {p.resolve(): p for p in run_dirs}
        baseline = listed.get(baseline.resolve(), baseline)
        if baseline not in run_dirs:
            run_dirs.insert(0, baseline)
    if len(set(p.resolve() for p in run_dirs)) < len(run_dirs):
        raise UsageError("a run is given twice; each counts once")
    states = {p: trial_state(p) for p in run_dirs}  # a sweep's trial that was pruned, failed or stopped: its state
    unfinished = [p for p in run_dirs if states[p]]
    run_dirs = [p for p in run_dirs if not states[p]]
    if len(run_dirs) < 2:
        raise UsageError(
            "compare needs two runs or more"
            + (
                f" that a sweep did not prune, fail or stop ({as_text(unfinished[0])}: {states[unfinished[0]]})"
                if unfinished
                else ""
            )
        )
    runs = [read_run(p) for p in run_dirs]
    refuse_unmasked(runs)
    names, scored, no_interval = score_names(runs, data)
    if names is not None:
        scored_tokens = {run.path: score_run(run, names, scored, rescored=data is not None) for run in runs}
        tokens = same_tokens(scored_tokens, runs)
    groups, differs, split = group_runs(runs, baseline if baseline is not None else run_dirs[0], pool)
    for group in groups[1:]:
        group.p = welch_p(group.scores, groups[0].scores)
        group.interval = welch_interval(group.scores, groups[0].scores)
        if names is not None:
            group.names_only = paired_interval(group_mean(group) - group_mean(groups[0]), tokens)
    for group in groups:
        group.samples, group.new_share = group_samples(group)
    left_out = (
        [
            f"left out {len(unfinished)} run{'s' * (len(unfinished) > 1)} of sweep trials that did not finish "
            f"({', '.join(as_text(p.name) for p in unfinished[:3])}{', …' * (len(unfinished) > 3)}): "
            f"a pruned or stopped run's best loss is no trial's score"
        ]
        if unfinished
        else []
    )
    records = [note for run in runs for note in run.said]
    return Comparison(
        groups,
        differs,
        scored,
        no_interval,
        left_out + records + split + caveats(runs, differs, data),
        at_equal_steps(groups),
    )


# Two runs' scores compare when each is a loss of a model trained with the causal mask, over the same
# tokens of the same names: refuse_unmasked, score_names (the same names) and same_tokens say why not.


def refuse_unmasked(runs: list[RunScore]) -> None:
    """A model trained without the mask read each character it predicts: its loss measures no prediction."""
    unmasked = [run for run in runs if not run.checkpoint.config.model.causal]
    if unmasked:
        raise UsageError(
            f"{as_text(unmasked[0].path)} was trained without the causal mask (model.causal = false): "
            f"it read each character it was to predict, so its loss measures no prediction and "
            f"compares with no other run's"
        )


def same_tokens(scored: dict[Path, torch.Tensor], runs: list[RunScore]) -> torch.Tensor:
    """The scored tokens of each name, the same for every run; runs whose block sizes cut the names differently
    score other tokens of them, and are refused."""
    first = runs[0]
    for run in runs[1:]:
        if not torch.equal(scored[run.path], scored[first.path]):
            sizes = (first.checkpoint.config.model.block_size, run.checkpoint.config.model.block_size)
            raise UsageError(
                f"{as_text(first.path)} and {as_text(run.path)} score different tokens of the same names "
                f"(block sizes {sizes[0]} and {sizes[1]} cut long names at other places), so their "
                f"losses do not compare"
            )
    return scored[first.path]


def caveats(runs: list[RunScore], differs: dict, data) -> list[str]:
    """What a reader of the verdicts must know: runs trained on other names, runs that ended still improving."""
    notes = []
    if "code.core" in differs:
        notes.append(
            f"the groups were trained by different code (the core's files differ: "
            f"{', '.join(sorted({str(v) for v in differs['code.core']}))}): a difference may be the code's, "
            f"and runs of other code are never pooled as seeds of one recipe"
        )
    if "train.precision" in differs:
        notes.append(
            f"the groups were trained in different arithmetic (train.precision "
            f"{', '.join(sorted({str(v) for v in differs['train.precision']}))}): never pooled as seeds "
            f"of one recipe"
        )
    if "data.trained_on" in differs:
        notes.append(
            f"the groups were trained on different names; each run is scored on {as_text(data)}, so their "
            f"losses compare"
            if data is not None
            else "the groups were trained on different names and validated on the same ones"
        )
    improving = [r for r in runs if still_improving(r.curve)]
    if improving:
        low, high = min(r.steps for r in improving), max(r.steps for r in improving)
        steps = f"{low:,} to {high:,}" if low < high else f"{high:,}"
        notes.append(
            f"{len(improving)} of {len(runs)} runs were still improving at their last evaluation: a verdict "
            f"says which is better within {steps} steps, not which is better trained longer"
        )
    return notes + unequal_compute(runs)


def unequal_compute(runs: list[RunScore]) -> list[str]:
    """Runs of a time limit take as many steps as the machine gives them: when their steps differ by more than
    a tenth, the machine may have decided what the recipe seems to, so say so (the answer at equal steps
    follows the verdicts)."""
    steps = [r.steps for r in runs]
    if max(steps) <= 1.1 * min(steps):
        return []
    return [
        f"the runs took {min(steps):,} to {max(steps):,} steps (their time limits, or the machine, gave them "
        f"unequal compute): a difference in loss may be one of steps, not of recipe"
    ]


def still_improving(curve: list[dict]) -> bool:
    """Whether a run's last validation loss is its best: it ended before it stopped getting better."""
    losses = [v for _, v in series(curve, "val_loss")]
    return len(losses) > 1 and losses[-1] <= min(losses)


def score_run(run: RunScore, names: list[str], scored: str, rescored: bool) -> torch.Tensor:
    """Each name's summed loss under the run's model (`run.per_name`), and the run's score on them when they are
    another file's (`rescored`); the names' scored tokens are returned."""
    try:
        scores = name_losses(run.checkpoint.model, run.checkpoint.tokenizer, names, what=scored)
    except UsageError as e:
        raise UsageError(f"{run.path}: {e}") from None  # which run cannot read the names
    tokens = torch.tensor([n for _, n, _ in scores], dtype=torch.float64)
    run.per_name = torch.tensor([n * loss for _, n, loss in scores], dtype=torch.float64)
    if rescored:
        run.score = float(run.per_name.sum() / tokens.sum())
        if not math.isfinite(run.score):
            raise UsageError(
                f"{run.path}: its loss on {scored.removeprefix('loss on names file ')} is not a number "
                f"(the model diverged), so it cannot be compared"
            )
    return tokens


def group_mean(group: Group) -> torch.Tensor:
    """Each name's summed loss, averaged over the group's seeds."""
    return torch.stack([r.per_name for r in group.runs if r.per_name is not None]).mean(0)


def group_samples(group: Group, shown: int = 6, drawn: int = 200, seed: int = 0) -> tuple[list[str], float]:
    """A few names from the group's first run, and the share of `drawn` names that are not training names
    (a cut name counts as not new: it is no whole name)."""
    ckpt = group.runs[0].checkpoint
    names = sample(ckpt, num=drawn, seed=seed)
    new = sum(is_new(name, ckpt) for name in names)
    return names[:shown], new / len(names)
