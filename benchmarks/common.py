"""Helpers the benchmarks share: the names file, the matmul peak, timing, and writing results."""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import struct
import time
import zlib
from pathlib import Path

import torch

from minigpt.common.bundled import BUNDLED_NAMES


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data", type=Path, default=BUNDLED_NAMES, help="names file [default: the bundled names]")
    p.add_argument("--out", type=Path, default=None, help="JSON file for the results [default: print only]")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads [default: torch's choice]; 0: one per free core, as minigpt train chooses",
    )
    p.add_argument(
        "--usual-peak",
        type=float,
        default=None,
        help="this machine's usual float32 matmul GFLOP/s: a peak far below it marks the figures untrusted",
    )
    return p


def setup(args) -> dict:
    if args.threads == 0:
        from minigpt.machine.threads import use_free_cores

        use_free_cores()
    elif args.threads:
        torch.set_num_threads(args.threads)
    return {
        "machine": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads",
        "torch": torch.__version__,
        "data": str(args.data),
    }


def matmul_peak(
    device: str = "cpu", sizes=(256, 512, 1024, 2048), seconds: float = 1.0, dtype: torch.dtype = torch.float32
) -> dict:
    """The best GFLOP/s of square matrix multiplies: the ceiling the efficiency is measured against."""
    best = {}
    for n in sizes:
        a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
        rates = [timed_rate(lambda a=a, b=b: a @ b, 2 * n**3, seconds / len(sizes), device) for _ in range(3)]
        best[n] = max(rates) / 1e9
    top = max(best, key=best.get)
    return {"gflops": round(best[top], 1), "size": top, "by_size": {n: round(v, 1) for n, v in best.items()}}


def shaped_peak(
    rows: int, width: int, device: str = "cpu", seconds: float = 1.0, dtype: torch.dtype = torch.float32
) -> dict:
    """The best GFLOP/s of the matrix multiplies a step of this model makes, at its own shapes: `rows` (a batch's
    positions) by `width` into width, 4 * width (the MLP's first) and back: the ceiling a step could reach."""
    shapes = {"C->C": (width, width), "C->4C": (width, 4 * width), "4C->C": (4 * width, width)}
    best = {}
    for name, (inner, outer) in shapes.items():
        a = torch.randn(rows, inner, device=device, dtype=dtype)
        b = torch.randn(inner, outer, device=device, dtype=dtype)
        rates = [timed_rate(lambda a=a, b=b: a @ b, 2 * rows * inner * outer, seconds / 3, device) for _ in range(3)]
        best[name] = max(rates) / 1e9
    top = max(best, key=best.get)
    return {"gflops": round(best[top], 1), "shape": top, "by_shape": {k: round(v, 1) for k, v in best.items()}}


def timed_rate(fn, work: float, seconds: float, device: str = "cpu") -> float:
    """Work per second of `fn`, run for about `seconds` after a warm-up call."""
    fn()
    sync(device)
    runs, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or runs < 2:
        fn()
        runs += 1
    sync(device)
    return work * runs / (time.perf_counter() - start)


def sync(device) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def median(values):
    return statistics.median(values)


SPREAD_BOUND = 0.15  # repeats further apart than this share of their median are not one measurement
PEAK_DRIFT = 0.15  # nor are figures between matmul peaks that differ by more than this share


def spread(values: list[float]) -> dict:
    """Repeats summed up: the median (of an odd count, a measured value), the lowest and highest, and how far
    apart they are as a share of the median; every value kept."""
    mid = median(values)
    return {
        "median": mid,
        "low": min(values),
        "high": max(values),
        "spread": (max(values) - min(values)) / mid if mid else 0.0,
        "values": values,
    }


def machine_load() -> dict:
    """The load average against the cores: above about half a core busy before a benchmark starts, something
    else is running, and the figures measure the sharing as much as the code."""
    import os

    cores = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return {"load_1min": round(load, 2), "cores": cores}


def untrusted(
    peak_before: dict, peak_after: dict, spreads: dict[str, dict], load: dict, usual_peak: float | None = None
) -> list[str]:
    """Plain reasons the figures are not to be trusted (an empty list when none is known): a busy machine, a
    matmul peak that moved during the run or is far below the machine's usual one, repeats too far apart."""
    reasons = []
    if load["load_1min"] > 0.5:
        reasons.append(f"the machine was busy before the start (load {load['load_1min']} on {load['cores']} cores)")
    before, after = peak_before["gflops"], peak_after["gflops"]
    if abs(before - after) > PEAK_DRIFT * max(before, after):
        reasons.append(f"the matmul peak moved from {before} to {after} GFLOP/s during the run")
    if usual_peak and min(before, after) < (1 - PEAK_DRIFT) * usual_peak:
        reasons.append(f"the matmul peak ({min(before, after)} GFLOP/s) is far below this machine's usual {usual_peak}")
    for what, s in spreads.items():
        if s["spread"] > SPREAD_BOUND:
            reasons.append(
                f"{what}: repeats {s['spread']:.0%} apart (from {s['low']:,.0f} to {s['high']:,.0f}), "
                f"more than {SPREAD_BOUND:.0%}"
            )
    return reasons


def say_trust(reasons: list[str]) -> None:
    if reasons:
        print("\nNOT TO BE TRUSTED: " + "; ".join(reasons) + ". Run again on a quiet machine.")
    else:
        print(
            f"\nrepeats within {SPREAD_BOUND:.0%} of each other, the matmul peak steady, the machine quiet at the start"
        )


def finish(results: dict, out: Path | None) -> None:
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1))
        print(f"wrote {out}")


def table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """A plain text table: columns are (key, header)."""
    cells = [[header for _, header in columns]] + [[str(row.get(key, "")) for key, _ in columns] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def describe_png(path: Path, about: str) -> None:
    """Keep in a PNG what it shows (a Description text chunk after its header), as minigpt's own loss.png does:
    tests/test_docs.py checks the docs' pictures against the run the docs quote."""
    data = path.read_bytes()
    body = b"Description\0" + about.encode("latin-1")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    header_end = 8 + 8 + 13 + 4  # the signature, then IHDR: its length and type, 13 bytes, its CRC
    path.write_bytes(data[:header_end] + chunk + data[header_end:])
