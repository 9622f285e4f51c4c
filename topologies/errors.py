"""The exceptions of the topologies package: ``TopologyError``, and ``PlacementDoesNotFit`` for one arrangement."""

from simulator.errors import InputError, NotApplicable

__all__ = ["TopologyError", "PlacementDoesNotFit"]


class TopologyError(InputError):
    """A preset, topology file, graph or placement that cannot be used; the message names the problem.

    It is an ``InputError`` (a ``ValueError``), so ``tpsim`` prints it as one line and exits with status 2::

        raise TopologyError('unknown preset "dgx-z", known: a100-4gpu, dgx-a100, ...')
    """


class PlacementDoesNotFit(TopologyError, NotApplicable):
    """A placement that cannot hold one arrangement: more ranks than GPUs, a grid it cannot use, a file
    listing another number of GPUs.

    Also a ``NotApplicable``, so ``tpsim predict`` lists the arrangement as skipped with this reason
    instead of stopping; a placement that is wrong whatever the arrangement (an unknown name, an
    unreadable file, a GPU given twice) stays a plain ``TopologyError``::

        raise PlacementDoesNotFit("placement depth-major needs a grid [q,q,d]")
    """
