"""Architectures are found by `model_type` through a small alias map (mlx-lm's MODEL_REMAPPING pattern).

Why: a name -> same-name table repeats every module twice and drifts from the files; the model_type is the
module's name, ALIASES maps the few types another module already describes, and an unknown type says so.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from planner.core.errors import UnsupportedArchitecture
from planner.sources import arch

ARCH_DIR = Path(arch.__file__).parent
HELPERS = {"__init__", "base", "decoder", "generic", "towers"}  # modules that are no model_type


def test_every_module_is_its_model_type_and_every_model_type_a_module():
    # the layouts found by `architectures` class (EAGLE-3 heads, DFlash drafts) are no model_type either
    files = {p.stem for p in ARCH_DIR.glob("*.py")} - HELPERS - set(arch.CLASSES.values())
    assert files == set(arch.ARCHITECTURES)
    for name in sorted(arch.ARCHITECTURES):
        module = importlib.import_module(f"planner.sources.arch.{name}")
        assert hasattr(module, "Args") and hasattr(module, "to_spec"), name


def test_an_alias_resolves_to_the_module_that_describes_it():
    assert set(arch.ALIASES.values()) <= arch.ARCHITECTURES  # every alias lands on a module
    assert not set(arch.ALIASES) & arch.ARCHITECTURES  # and never shadows one
    assert arch.get_arch("granite").__name__ == "planner.sources.arch.llama"
    assert arch.get_arch("kimi_k2").__name__ == "planner.sources.arch.deepseek_v3"
    assert arch.get_arch("qwen3").__name__ == "planner.sources.arch.qwen3"  # its own name: no alias needed
    assert {"granite", "qwen3"} <= set(arch.supported())


def test_an_unknown_model_type_says_so():
    assert arch.get_arch("no_such_type") is None and arch.get_arch("base") is None  # a helper is no type
    with pytest.raises(UnsupportedArchitecture, match=r"'no_such_type'.*Supported: .*granite") as e:
        arch.derive({"model_type": "no_such_type"})
    assert e.value.model_type == "no_such_type"
    config = {"model_type": "no_such_type", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "vocab_size": 128, "intermediate_size": 128}
    _, used, warnings = arch.derive(config)
    assert used == "generic" and "'no_such_type' is not a supported architecture" in warnings[0]
