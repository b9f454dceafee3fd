"""The bundled model catalog: real public configs, addressable by HF id or alias.

Why: everything must work offline. `catalogs/models/*.json` each hold a list of
entries {"id", "aliases", "family", "source", "config", ...}; this module only
finds entries, validation lives in the schema test.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.constants import catalog_dir
from ..core.errors import ConfigError
from ..core.jsonio import read_json


def _norm(name: str) -> str:
    return name.strip().lower()


@lru_cache(maxsize=4)
def _load(directory: str) -> tuple[tuple[dict[str, Any], ...], dict[str, int]]:
    entries: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    paths = sorted(Path(directory).glob("*.json")) if Path(directory).is_dir() else []
    if not paths:
        raise _missing(directory, "no *.json files in it" if Path(directory).is_dir() else "no such directory")
    for path in paths:
        data = read_json(path, what="model catalog")
        items = data.get("models") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ConfigError(f"Cannot read model catalog '{path}': expected a list of models.", path)
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("id"), str) \
                    or not isinstance(item.get("config"), dict):
                raise ConfigError(f"Cannot read model catalog '{path}': an entry lacks 'id' or 'config'.", path)
            item = {**item, "_file": str(path)}
            entries.append(item)
            for key in [item["id"], item["id"].split("/")[-1], *item.get("aliases", [])]:
                index.setdefault(_norm(key), len(entries) - 1)
    if not entries:
        raise _missing(directory, "its files list no models")
    return tuple(entries), index


def _missing(directory: str, reason: str) -> ConfigError:
    """A missing or empty bundled catalog is a broken install (or a wrong SPEC_PLANNER_CATALOG), never 'no models'."""
    return ConfigError(f"Cannot read the model catalog from '{directory}': {reason} (expected the bundled "
                       f"catalogs/models/*.json). Reinstall spec-planner, or point SPEC_PLANNER_CATALOG at a "
                       f"directory holding models/ and machines/.", directory)


def entries() -> tuple[dict[str, Any], ...]:
    """All catalog entries, in file order."""
    return _load(str(catalog_dir() / "models"))[0]


def with_tokenizer_family(family: str) -> tuple[dict[str, Any], ...]:
    """The entries whose tokenizer facts name `family`, in file order.

    Why an index: every target of a machine-first report asks for its draft candidates; scanning every
    entry per target made a report quadratic in catalog size (issue #33). Built once per catalog directory.
    """
    return _by_family(str(catalog_dir() / "models")).get(family, ())


@lru_cache(maxsize=4)
def _by_family(directory: str) -> dict[str, tuple[dict[str, Any], ...]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in _load(directory)[0]:
        facts = e.get("tokenizer")
        fam = facts.get("family") if isinstance(facts, dict) else None
        if isinstance(fam, str):
            groups.setdefault(fam, []).append(e)
    return {k: tuple(v) for k, v in groups.items()}


def find(ref: str) -> dict[str, Any] | None:
    """The entry whose id, bare name (after the org) or alias equals `ref` (case-insensitive)."""
    all_entries, index = _load(str(catalog_dir() / "models"))
    i = index.get(_norm(ref))
    return all_entries[i] if i is not None else None


def suggestions(ref: str, limit: int = 3) -> list[str]:
    """Catalog ids that look like `ref`, for 'did you mean' hints."""
    import difflib

    _, index = _load(str(catalog_dir() / "models"))
    close = difflib.get_close_matches(_norm(ref), list(index), n=limit, cutoff=0.6)
    return close
