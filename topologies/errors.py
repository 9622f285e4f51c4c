"""The one exception the topologies package raises for anything a user can get wrong."""

from simulator.errors import InputError

__all__ = ["TopologyError"]


class TopologyError(InputError):
    """A preset, topology file, graph or placement that cannot be used; the message names the problem.

    It is an ``InputError`` (a ``ValueError``), so ``tpsim`` prints it as one line and exits with status 2::

        raise TopologyError('unknown preset "dgx-z", known: a100-4gpu, dgx-a100, ...')
    """
