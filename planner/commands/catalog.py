"""`planner catalog`: the bundled models."""

from __future__ import annotations

from ..core.fmt import tabulate
from ..sources import catalog
from ._common import app, emit, say
from ._options import JsonOpt


@app.command("catalog")
def catalog_cmd(as_json: JsonOpt = False) -> None:
    """List the bundled models (usable offline by id or alias).

    \b
    Examples:
      planner catalog
      planner catalog --json
    """
    rows = [{"id": e["id"], "aliases": e.get("aliases", []), "family": e.get("family"),
             "source": e.get("source")} for e in catalog.entries()]
    if as_json:
        emit(rows)
        return
    say(tabulate([[r["id"], ", ".join(r["aliases"]), r["family"]] for r in rows],
         headers=["id", "aliases", "family"]))
