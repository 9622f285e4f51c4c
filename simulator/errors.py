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


class ScheduleError(InputError):
    """A schedule that is malformed or cannot run: an undeclared buffer or group, shapes that disagree,
    a handle never waited for, collectives that do not match, a deadlock.

    The message names the first such place, e.g. ``"rank 3 step 7 (wait h2): no asynchronous op with
    handle 'h2' is in flight"``. A schedule file can carry any of these; a generated schedule that
    raises one is a generator bug.
    """
