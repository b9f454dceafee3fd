"""Where the real GGUF test files live, for tests, benchmarks and scripts/fetch_ggufs.py (no planner import).

SPEC_PLANNER_GGUF_DIR, else <repo>/.cache/gguf; scripts/fetch_ggufs.py downloads and unpacks them there.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def gguf_test_dir() -> Path:
    """SPEC_PLANNER_GGUF_DIR (with ~ expanded), else <repo>/.cache/gguf."""
    override = os.environ.get("SPEC_PLANNER_GGUF_DIR")
    if override:
        return Path(override).expanduser()
    return REPO / ".cache" / "gguf"
