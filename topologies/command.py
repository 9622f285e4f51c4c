"""``tpsim topology``: show, list and save interconnect topologies.

- ``tpsim topology show NAME|FILE [--json] [--png out.png]``: GPUs, nodes, link kinds, per-GPU injection
  and bisection bandwidth; ``--json`` prints the same as JSON (at least ``gpus``, ``nodes``,
  ``bisection_GBps``); ``--png`` draws the graph.
- ``tpsim topology list``: the presets, one line each.
- ``tpsim topology save NAME|FILE OUT.(yaml|json|graphml)``: write a topology to a file, e.g. a preset
  to edit into a custom one.

Example::

    $ tpsim topology show dgx-a100:2 --json | python -c "import json,sys; print(json.load(sys.stdin)['gpus'])"
    16
"""

from __future__ import annotations

import argparse
import json

from simulator.guard import add_force_argument, watch_topologies
from topologies.draw import draw_topology
from topologies.errors import TopologyError
from topologies.loader import FILE_SUFFIXES, load_topology, save_topology
from topologies.presets import PRESETS
from topologies.summary import format_summary, summarize

__all__ = ["register"]


def register(subparsers) -> None:
    """Add the ``topology`` sub-command (cheap: the work is imported inside the handlers)."""
    parser = subparsers.add_parser("topology", help="show, list and save interconnect topologies",
                                   description="Show, list and save interconnect topologies.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    show = actions.add_parser("show", help="GPUs, nodes, link kinds, injection and bisection bandwidth",
                              description="A topology's GPUs, nodes, link kinds, per-GPU injection and bisection "
                                          "bandwidth.")
    show.add_argument("topology", metavar="NAME|FILE", help="a preset (dgx-a100, dgx-a100:16, ...), a cluster "
                      "(server=dgx-h100,servers=16,oversubscription=2) or a topology file")
    show.add_argument("--calibration", metavar="FILE",
                      help="a calibration profile (tpsim calibrate --profile, or the topology file it "
                           "wrote) applied to the topology: fitted link rates and latencies carry to any "
                           "topology of the same node kind")
    show.add_argument("--json", action="store_true", help="print JSON instead of text")
    show.add_argument("--png", metavar="OUT.png", help="also draw the graph to this PNG")
    add_force_argument(show)
    show.set_defaults(func=_show)
    listing = actions.add_parser("list", help="the named presets", description="The named presets, one a line.")
    listing.set_defaults(func=_list)
    save = actions.add_parser("save", help="write a topology to a .yaml, .json or .graphml file",
                              description="Write a topology to a file, e.g. a preset to edit into a custom one; "
                                          "--topology loads the file anywhere in tpsim.")
    save.add_argument("topology", metavar="NAME|FILE",
                      help="a preset (dgx-a100, dgx-a100:16, ...; `tpsim topology list`) or a topology file")
    save.add_argument("--calibration", metavar="FILE",
                      help="a calibration profile applied before saving (the same node kind, or one error line)")
    save.add_argument("out", metavar="OUT", help=f"the file to write; its suffix picks the format: "
                                                 f"{', '.join(FILE_SUFFIXES)}")
    add_force_argument(save)
    save.set_defaults(func=_save)


def _show(args: argparse.Namespace) -> int:
    with watch_topologies("tpsim topology show", args.force, show=True):
        G = load_topology(args.topology, args.calibration)
    if args.png and not args.png.lower().endswith(".png"):
        raise TopologyError(f"--png {args.png}: the file name must end in .png")
    summary = summarize(G)
    if args.png:
        draw_topology(G, args.png)
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0


def _list(args: argparse.Namespace) -> int:
    width = max(len(name) for name in PRESETS)
    for name, preset in PRESETS.items():
        print(f"{name:<{width}}  {preset.summary:<52}  {name}:{preset.suffix} = {preset.suffix_help}")
    return 0


def _save(args: argparse.Namespace) -> int:
    with watch_topologies("tpsim topology save", args.force):
        G = load_topology(args.topology, args.calibration)
    save_topology(G, args.out)
    print(f"wrote {args.out}")
    return 0
