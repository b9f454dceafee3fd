"""On-device probe: measured cost curves (t_v(n), t_d, overhead) and acceptance on this machine.

The only package that imports torch, and only inside functions: `import planner.probe` is free.
Layout: synthetic.py (model stacks with a spec's shapes), timing.py (warm-up, sync, median,
deadline), runner.py (the budgeted probe), real.py (transformers on local safetensors weights),
acceptance.py (teacher-forced acceptance), importers.py (llama-bench / batched-bench / CSV,
torch-free). The resulting profile format and its diagnosis live in planner/speed/profile.py, profile_file.py and diagnosis.py.
"""

from __future__ import annotations

from types import ModuleType

from ..core.errors import TorchUnavailable


def require_torch(what: str = "probe") -> ModuleType:
    """Import torch or raise TorchUnavailable naming `what` needs it."""
    try:
        import torch
    except ImportError as e:
        raise TorchUnavailable(what) from e
    return torch
