"""What a trained model attends to while reading a name, and what it predicts next.

The model reads the boundary token and then the name's characters; at each position
every head of every layer spreads one unit of attention over that position and the
ones before it. `attention_report` collects those weights; the rest shows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from rich.color import Color
from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text

from minigpt.common.arguments import as_whole_number
from minigpt.common.text import one_line, token_label, token_text
from minigpt.data import Tokenizer
from minigpt.errors import UsageError
from minigpt.files import strict_json
from minigpt.files.atomic_file import write_text
from minigpt.files.names_file import refuse_unseen
from minigpt.formats.checkpoint_checks import check_model
from minigpt.measurements.attribution import logit_attribution
from minigpt.measurements.logit_lens import logit_lens
from minigpt.model import GPT, causal_attention


@dataclass
class AttentionReport:
    name: str
    tokens: list[
        str
    ]  # what the model reads: the boundary token (its mark, common/text.py's boundary_mark), then each character
    weights: torch.Tensor  # [n_layer, n_head, T, T]; row i holds position i's weights over 0..i
    predictions: list[list[tuple[str, float]]]  # per position, the likeliest next tokens
    lens: dict  # each sublayer's guess (measurements/logit_lens.py)
    attribution: dict  # what each part writes toward the actual next token (measurements/attribution.py)
    causal: bool = True  # False: a model trained without the mask, whose rows read every position

    @property
    def boundary(self) -> str:
        return self.tokens[0]

    @property
    def n_layer(self) -> int:
        return self.weights.size(0)

    @property
    def n_head(self) -> int:
        return self.weights.size(1)


def unmasked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The formula without the mask (a model trained with model.causal = false): every position reads all."""
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
    return weights @ v, weights


@torch.no_grad()
def forward_with_weights(model: GPT, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's logits [B, T, vocab] and every layer's attention weights [n_layer, B, n_head, T, T]."""
    maps: list[torch.Tensor] = []

    def attend_and_record(q, k, v):  # a layer's attention step, the formula written out, keeping its weights
        y, weights = causal_attention(q, k, v) if model.config.causal else unmasked_attention(q, k, v)
        maps.append(weights)
        return y

    logits, _ = model(tokens, attend=[attend_and_record] * model.config.n_layer)
    return logits, torch.stack(maps)


@torch.no_grad()
def attention_report(model: GPT, tokenizer: Tokenizer, name: str, top: int = 3) -> AttentionReport:
    check_model(model, tokenizer)
    if not isinstance(name, str):
        raise UsageError(f"attention_report reads a name (a string), got {type(name).__name__}")
    as_whole_number(top, "attention_report's top (the likeliest characters shown)", 1)
    longest = model.config.block_size - 1
    if len(name) > longest:
        raise UsageError(f"'{name}' is {len(name)} characters; this model reads at most {longest}")
    refuse_unseen(name, tokenizer.unseen, f"'{name}'")
    ids = [tokenizer.bos] + tokenizer.encode(name)
    model.eval()
    logits, maps = forward_with_weights(model, torch.tensor([ids], device=model.lm_head.weight.device))
    probs = torch.softmax(logits[0].float(), dim=-1).cpu()  # [T, vocab]
    best = torch.topk(probs, min(top, probs.size(-1)), dim=-1)
    predictions = [
        [(token_label(tokenizer, i), p) for i, p in zip(row_ids.tolist(), row_probs.tolist())]
        for row_ids, row_probs in zip(best.indices, best.values)
    ]
    weights = maps[:, 0].float().cpu()  # [n_layer, n_head, T, T]
    lens = logit_lens(model, tokenizer, ids, top)
    attribution = logit_attribution(model, tokenizer, ids)
    return AttentionReport(
        name, [token_label(tokenizer, i) for i in ids], weights, predictions, lens, attribution, model.config.causal
    )


def select(report: AttentionReport, layer: int | None, head: int | None) -> list[tuple[int, int]]:
    """The (layer, head) pairs to show; None means all of them."""
    for value, count, what in ((layer, report.n_layer, "layer"), (head, report.n_head, "head")):
        if value is not None and not 0 <= value < count:
            raise UsageError(f"--{what} {value} is out of range: the model has {count} {what}s (0..{count - 1})")
    layers = range(report.n_layer) if layer is None else [layer]
    heads = range(report.n_head) if head is None else [head]
    return [(l, h) for l in layers for h in heads]


def heat_style(w: float) -> Style:
    """Dark blue for 0 through teal to yellow for 1, with readable text on top."""
    w = min(max(w, 0.0), 1.0)
    stops = [(0.0, (13, 8, 135)), (0.5, (33, 145, 140)), (1.0, (253, 231, 37))]
    for (x0, c0), (x1, c1) in zip(stops, stops[1:]):
        if w <= x1:
            f = (w - x0) / (x1 - x0)
            rgb = tuple(int(a + f * (b - a)) for a, b in zip(c0, c1))
            break
    return Style(color="black" if w > 0.55 else "white", bgcolor=Color.from_rgb(*rgb))


def heatmap(report: AttentionReport, layer: int, head: int) -> Table:
    """Rows: the position that looks; columns: the positions it looks at. The future stays blank."""
    # title and caption at the left: a map wider than the terminal is cut at its right edge, they are not
    table = Table(
        title=f"layer {layer}, head {head}",
        caption=f"{report.boundary} is the boundary token",
        show_edge=False,
        padding=(0, 0),
        pad_edge=False,
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("", justify="right", style="bold")
    for token in report.tokens:
        table.add_column(Text(token_text(token)), justify="center", min_width=5)  # Text: a name's "[" is not markup
    for i, token in enumerate(report.tokens):
        read = i + 1 if report.causal else len(report.tokens)  # the positions row i reads
        cells = [Text(f"{w:.2f}", style=heat_style(w)) for w in report.weights[layer, head, i, :read].tolist()]
        table.add_row(Text(f"{token_text(token)} "), *cells, *[""] * (len(report.tokens) - read))
    return table


def position_bars(report: AttentionReport, layer: int, head: int, position: int, width: int = 40) -> Group:
    """One row of the matrix as bars: how much `position` attends to each position."""
    check_position(report, position)
    lines = [
        Text(
            f"layer {layer}, head {head}: position {position} ('{token_text(report.tokens[position])}') attends to",
            style="bold",
        )
    ]
    for j, token in enumerate(report.tokens):
        if j > position and report.causal:  # the future: the causal mask hides it, which is not a weight of 0 it chose
            lines.append(Text(f"{j:>3} {token_text(token):>6} ") + Text("masked (a later position)", style="dim"))
            continue
        w = report.weights[layer, head, position, j].item()
        lines.append(
            Text(f"{j:>3} {token_text(token):>6} ") + Text("█" * round(w * width), style="cyan") + Text(f" {w:.3f}")
        )
    return Group(*lines)


def check_position(report: AttentionReport, position: int) -> None:
    if not 0 <= position < len(report.tokens):
        raise UsageError(
            f"--position {position} is out of range: '{report.name}' has positions 0..{len(report.tokens) - 1}"
        )


def attribution_bars(report: AttentionReport, position: int, width: int = 16) -> Group:
    """Why the actual next token at `position`: its logit split into what each part writes toward it,
    largest first, as bars to the right (toward it) or left (away from it)."""
    check_position(report, position)
    found = report.attribution["positions"][position]
    terms = sorted(zip(report.attribution["parts"], found["parts"]), key=lambda pt: -pt[1])
    largest = max(abs(term) for _, term in terms) or 1.0
    scale = f" (the final norm's scale, 1/rms, is {found['scale']:.3f})" if found["scale"] != 1.0 else ""
    lines = [
        Text(
            f"position {position}: why '{token_text(found['target'])}' after '{one_line(found['read'])}': its logit "
            f"{found['logit']:.3f} is the sum of what each part writes toward it{scale}",
            style="bold",
        )
    ]
    name_width = max(len(name) for name, _ in terms)
    for name, term in terms:
        bar = round(abs(term) / largest * width)
        left, right = (" " * (width - bar) + "█" * bar, "") if term < 0 else (" " * width, "█" * bar)
        lines.append(
            Text(f"{name:>{name_width}} ")
            + Text(left, style="red")
            + Text("│")
            + Text(f"{right:<{width}}", style="green")
            + Text(f" {term:+.3f}")
        )
    return Group(*lines)


def predictions_table(report: AttentionReport) -> Table:
    """A position a row, each of the likeliest next tokens in a column of its own: in one cell, a narrow
    terminal wrapped a probability onto a line apart from its character."""
    table = Table(
        title="what the model predicts next (probability)",
        caption=f"{report.boundary} next: the name ends",
        show_edge=False,
    )
    table.add_column("pos", justify="right")
    table.add_column("after reading")
    ranks = max((len(best) for best in report.predictions), default=0)
    for rank in range(ranks):
        table.add_column(("1st", "2nd", "3rd")[rank] if rank < 3 else f"{rank + 1}th", no_wrap=True)
    for i, best in enumerate(report.predictions):
        read = "".join(t for t in report.tokens[1 : i + 1]) or report.boundary
        cells = [Text(f"{token_text(t)} {p:.3f}") for t, p in best]
        table.add_row(str(i), Text(one_line(read)), *cells, *[""] * (ranks - len(cells)))
    return table


def lens_table(report: AttentionReport) -> Table:
    """Stages down, positions across: each stage's likeliest next token and its probability, and below it
    the stage's probability of the actual next token, both in percent."""
    lens = report.lens
    table = Table(
        title="each layer's guess at the next token (the logit lens)",
        box=None,
        padding=(0, 1, 0, 0),
        caption="per cell: the likeliest next token and its %; below, the % on the actual next. "
        "Only the last row is the model's prediction; earlier rows read the stream as if it were the last.",
    )
    table.add_column("after", no_wrap=True)
    for position in lens["positions"]:
        table.add_column(
            Text(f"{token_text(position['read'][-1])}→{token_text(position['next'])}"), justify="center", no_wrap=True
        )
    percent = lambda p: f"{round(100 * p):>2}"  # noqa: E731
    for s, stage in enumerate(lens["stages"]):
        cells = [
            Text(
                f"{token_text(pos['stages'][s]['top'][0]['token'])} {percent(pos['stages'][s]['top'][0]['prob'])}\n"
                f"  {percent(pos['stages'][s]['next_prob'])}"
            )
            for pos in lens["positions"]
        ]
        short = "emb" if stage == "embeddings" else stage.replace("layer ", "L").replace(" attention", " attn")
        table.add_row(short, *cells, end_section=True)
    return table


def to_json(report: AttentionReport, pairs: list[tuple[int, int]] | None = None) -> dict:
    """The report as JSON; `pairs`: only these (layer, head) attention maps (`select`'s)."""
    pairs = pairs if pairs is not None else select(report, None, None)
    return {
        "name": report.name,
        "tokens": report.tokens,
        "boundary": report.boundary,
        "causal": report.causal,
        "attention": [{"layer": l, "head": h, "weights": report.weights[l, h].tolist()} for l, h in pairs],
        "predictions": [
            {"position": i, "token": token, "next": [{"token": t, "prob": p} for t, p in best]}
            for i, (token, best) in enumerate(zip(report.tokens, report.predictions))
        ],
        "lens": report.lens,
        "attribution": report.attribution,
    }


def write_json(report: AttentionReport, path: Path, pairs: list[tuple[int, int]] | None = None) -> None:
    write_text(path, strict_json.dumps(to_json(report, pairs), indent=1))


def write_png(report: AttentionReport, path: Path, pairs: list[tuple[int, int]]) -> None:
    """A grid of heatmaps, one per layer (rows) and head (columns)."""
    draw_grid(report, path, pairs)


def draw_grid(report: AttentionReport, target, pairs: list[tuple[int, int]]) -> None:
    """`write_png`'s grid drawn as a PNG into `target`: a path or a file object (a notebook's picture)."""
    from minigpt.views.plotting import import_pyplot, save_figure

    plt = import_pyplot()
    layers = sorted({l for l, _ in pairs})
    heads = sorted({h for _, h in pairs})
    size = 0.35 * len(report.tokens) + 1.2
    fig, axes = plt.subplots(len(layers), len(heads), figsize=(size * len(heads), size * len(layers)), squeeze=False)
    labels = report.tokens
    future = torch.ones(len(labels), len(labels), dtype=torch.bool).triu(1) & report.causal
    for r, l in enumerate(layers):
        for c, h in enumerate(heads):
            ax = axes[r][c]
            cells = report.weights[l, h].masked_fill(future, float("nan")).tolist()
            image = ax.imshow(cells, cmap="viridis", vmin=0, vmax=1)
            ax.set_title(f"layer {l}, head {h}", fontsize=9)
            ax.set_xticks(range(len(labels)), labels, fontsize=8)
            ax.set_yticks(range(len(labels)), labels, fontsize=8)
            if r == len(layers) - 1:
                ax.set_xlabel("attends to", fontsize=8)
            if c == 0:
                ax.set_ylabel("reading", fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    fig.suptitle(f"attention while reading '{report.name}' ({report.boundary} is the boundary token)")
    save_figure(plt, fig, target)
