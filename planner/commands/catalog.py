"""`planner catalog`: the bundled models."""

from __future__ import annotations

from ..render import width
from ..sources import catalog
from ._common import app, emit, say
from ._options import JsonOpt, WideOpt


@app.command("catalog")
def catalog_cmd(as_json: JsonOpt = False, wide: WideOpt = False) -> None:
    """List the bundled models (usable offline by id or alias).

    \b
    Examples:
      planner catalog
      planner catalog --json
    """
    width.set_wide(wide)
    rows = [{"id": e["id"], "aliases": e.get("aliases", []), "family": e.get("family"),
             "source": e.get("source")} for e in catalog.entries()]
    if as_json:
        emit(rows)
        return
    # narrow: the family goes (--wide, --json keep it) and the aliases wrap between names, never inside one
    say(width.table([[r["id"], ", ".join(r["aliases"]), r["family"] or "-"] for r in rows],
                    ["id", "aliases", "family"], shrink=(1,), floor=10, drop=(2,)))
