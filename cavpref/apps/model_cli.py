"""``cavpref model``: the core's tiny model builders plus the tiny scorers trained on a synthetic world.

The scorers' trainer reads a world (``cavpref.data_prep``), which the core may not import, so the two halves
meet here, in the apps layer: ``tiny-clap`` / ``tiny-clip`` go to ``data_prep.scoring.train_tiny``, every
other name to ``cavpref.models.cli``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from cavpref.data_prep.scoring import train_tiny
    from cavpref.models import cli

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in train_tiny.TRAINERS:
        return train_tiny.main(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(cli._usage())
        print("       cavpref model {" + ",".join(train_tiny.TRAINERS) + "} --world DIR --out DIR [options]")
        return 0 if argv else 2
    return cli.main(argv)
