"""The exceptions the command line turns into a one-line message: bad input (exit status 2), a measurement
that cannot be right (exit status 1); and the exit of an interrupted run."""


class InputError(Exception):
    """Bad input from the user: a file, a field, a name or an option value."""


class MeasurementError(Exception):
    """A timing whose figures cannot all be right (a rate above the peak measured beside it)."""


class Interrupted(SystemExit):
    """The run was interrupted: SIGINT (exit status 130), SIGTERM (143) or SIGHUP (129). What runs inside it (an
    example that docs runs) stops with it; its own exit is never taken for the example's."""
