"""The one exception type for mistakes a user can make: bad arguments, files or logs."""


class InputError(ValueError):
    """A user-caused problem; the command line prints its message as one line and exits with status 2.

    The message says what is wrong and what would be valid, for example
    ``"--grid 4,4,3: q*q*d = 48 but --gpus is 64"``.
    """
