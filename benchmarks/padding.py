"""How much of a training step is padding: the share of the positions a batch computes that belong to a name.

A batch is as long as its longest name; with train.length_window > 1 (the default, 32) names of like length
share a batch, so little of it is padding. Packing several names into a row (issue 49) can only win back
what this measures, plus whatever a longer row buys.

    python benchmarks/padding.py --data names.txt
"""

from __future__ import annotations

from common import finish, parser, setup, table

from minigpt.data import BatchOrder, Tokenizer

from minigpt.corpus.tokenized import TokenizedNames
from minigpt.files.names_file import read_names


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300, help="batches measured [default: 300]")
    args = p.parse_args()
    info = setup(args)
    names = read_names(args.data)
    data = TokenizedNames(names, Tokenizer.from_names(names), 16)
    rows = []
    for batch, window in ((32, 32), (256, 32), (32, 1), (256, 1)):
        order = BatchOrder(len(data), batch, 1337, True, data.lengths, window)
        used = computed = 0
        for step in range(args.steps):
            lengths = data.lengths[order.indices(step)]
            used, computed = used + int(lengths.sum()), computed + len(lengths) * int(lengths.max())
        rows.append({"batch": batch, "length_window": window, "share": f"{used / computed:.1%}",
                     "tokens": f"{used / args.steps:.0f}"})
    print(table(rows, [("batch", "names a step"), ("length_window", "length_window"),
                       ("share", "a name's positions"), ("tokens", "predicted tokens a step")]))
    finish({**info, "rows": rows}, args.out)

if __name__ == "__main__":
    main()
