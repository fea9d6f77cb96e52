"""The one exception the command line turns into a one-line message and exit status 2."""


class InputError(Exception):
    """Bad input from the user: a file, a field, a name or an option value."""
