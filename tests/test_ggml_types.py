"""The ggml type and llama file-type tables read GGUF headers without the `gguf` package: equal to its enums."""

from __future__ import annotations

import pytest

from planner.core import dtypes
from planner.core.ggml_types import GGML_TYPES, LLAMA_FILE_TYPES
from planner.sources.gguf_header import ggml_type_table

constants = pytest.importorskip("gguf.constants", reason="the gguf package (the 'real' extra) is not installed: "
                                                          "nothing to compare the tables against")


def test_ggml_type_ids_equal_gguf_py():
    assert {int(t.value): t.name for t in constants.GGMLQuantizationType} == GGML_TYPES


def test_llama_file_type_ids_equal_gguf_py():
    theirs = {int(t.value): t.name.removeprefix("MOSTLY_") for t in constants.LlamaFileType}
    assert theirs == LLAMA_FILE_TYPES


def test_every_file_type_has_a_block_size_where_gguf_py_agrees():
    """Block sizes come from core/dtypes (ggml-common.h); gguf-py's GGML_QUANT_SIZES agrees except Q8_1."""
    table = ggml_type_table()
    assert set(table) == set(GGML_TYPES)  # every id has a size: no type a file may hold is unsized
    for tid, (name, elems, nbytes) in table.items():
        theirs = constants.GGML_QUANT_SIZES[constants.GGMLQuantizationType(tid)]
        if name != "Q8_1":  # runtime-only; gguf-py keeps an old float layout (40 B; ggml-common.h: 36)
            assert (elems, nbytes) == theirs, name
        assert dtypes.FORMATS[name].block_bytes == nbytes
