"""Exceptions shared by every stage."""


class UserError(ValueError):
    """Bad input from the user (arguments, files, data): the message names the argument and what was
    expected. The CLI prints it as one line and exits with code 2."""
