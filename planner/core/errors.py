"""Every error the planner raises on purpose.

Why one module: the CLI maps the whole `PlannerError` tree to exit code 2 with a
one-line message, so anything a user can cause (bad file, bad flag, offline miss)
must be one of these. Each also inherits the builtin it specialises, so library
callers can catch `ValueError` / `FileNotFoundError` / `ConnectionError` as usual.
Messages follow: what failed, where, expected vs got, how to fix it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .constants import TORCH_PIN


def one_line(text: str) -> str:
    """`text` with every non-printable character escaped (`\\n`, `\\x1b`, `\\ud800`): one printable line.

    Why: messages quote values from hostile files (a tensor name, a policy string); a newline or an
    ANSI escape in one must not forge extra lines in a CI log or drive the terminal.
    """
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class PlannerError(Exception):
    """Root of all planner errors; the CLI prints `str(err)` and exits 2. Messages are kept to one line."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(one_line(a) if isinstance(a, str) else a for a in args))


class UsageError(PlannerError, ValueError):
    """A flag or argument value the planner cannot use (e.g. `--context -1`)."""


class SourceError(PlannerError):
    """A model source (file, directory, repo id) could not be read."""

    def __init__(self, msg: str, path: str | Path | None = None) -> None:
        super().__init__(msg)
        self.path = str(path) if path is not None else None


class ModelNotFound(SourceError, FileNotFoundError):
    """Nothing matches a model reference: not a path, not in the catalog or cache."""


class HeaderError(SourceError, ValueError):
    """A safetensors / GGUF header is truncated, oversized or inconsistent."""


class ConfigError(SourceError, ValueError):
    """config.json (or another JSON/TOML input) is missing, malformed or implausible."""

    def __init__(self, msg: str, path: str | Path | None = None, key: str | None = None) -> None:
        super().__init__(msg, path)
        self.key = key


class UnsupportedArchitecture(ConfigError):
    """A `model_type` we cannot size, even with the standard-key fallback."""

    def __init__(self, model_type: str, supported: Sequence[str], missing: Sequence[str],
                 path: str | Path | None = None) -> None:
        msg = (f"Cannot size model_type '{model_type}' from '{path}': it is not one of the supported "
               f"architectures and the standard keys {', '.join(missing)} are missing. "
               f"Supported: {', '.join(sorted(supported))}.")
        super().__init__(msg, path, key="model_type")
        self.model_type = model_type


class IncompatiblePair(PlannerError, ValueError):
    """Raised by callers that require a compatible pair; carries the named differences."""

    def __init__(self, msg: str, differences: Sequence[str] = ()) -> None:
        super().__init__(msg)
        self.differences = list(differences)


class OfflineError(PlannerError, ConnectionError):
    """The model is not cached or catalogued and the network is off or unreachable."""


class EndpointError(PlannerError, ConnectionError):
    """A serving engine's endpoint (`planner bench --endpoint`) is down, too slow, or answers something else."""


class MachineError(PlannerError, ValueError):
    """A machine name, file or detection result the planner cannot use."""


class ProfileError(PlannerError, ValueError):
    """A probe profile or imported benchmark file cannot be read."""


class LlamaCppUnavailable(PlannerError, ImportError):
    """The llama.cpp probe backend needs llama-cpp-python and it is not installed."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"Cannot run the {what}: llama-cpp-python is not installed (expected the 'llama_cpp' module). "
            f"Install it with 'pip install spec-planner[llamacpp]' (it compiles llama.cpp, a few minutes).")


class TorchUnavailable(PlannerError, ImportError):
    """A command needs torch (probe/bench) and it is not installed."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"Cannot run the {what}: torch is not installed. Install it with "
            f"'pip install {TORCH_PIN}' (CPU build; then 'pip install spec-planner[probe]').")
