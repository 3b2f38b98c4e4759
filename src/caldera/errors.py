"""Errors a user can act on. The CLI prints them as one line and exits 2."""


class CalderaError(Exception):
    """Base for errors caused by user input (manifests, configs, flags)."""


class InputError(CalderaError):
    """A manifest or object is malformed: names the source, the object and the problem."""

    def __init__(self, message: str, source: str | None = None, obj: str | None = None):
        self.source = source
        self.obj = obj
        self.problem = message
        where = ": ".join(p for p in (source, obj) if p)
        super().__init__(f"{where}: {message}" if where else message)


class ConfigError(CalderaError):
    """A scheduler configuration is invalid: names the file, the field and the fix."""
