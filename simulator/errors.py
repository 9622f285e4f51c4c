"""The exceptions for mistakes a user can make: ``InputError``, and ``NotApplicable`` for arrangements."""


class InputError(ValueError):
    """A user-caused problem; the command line prints its message as one line and exits with status 2.

    The message says what is wrong and what would be valid, for example
    ``"--grid 4,4,3: q*q*d = 48 but --gpus is 64"``.
    """


class NotApplicable(InputError):
    """An arrangement that does not apply to a workload: sizes that do not divide, a grid it cannot use.

    A single command prints it like any ``InputError``; ``tpsim predict`` turns it, and only it, into a
    skipped row with the message as the reason, e.g. ``"summa25d on [4,4,4]: M=100 must be divisible by
    d*q = 16"``.
    """
