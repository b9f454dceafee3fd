"""ggml's type ids and llama.cpp's file-type ids, as plain tables: a GGUF header read without `gguf`.

Why: a GGUF tensor names its storage by ggml type id and `general.file_type` by llama_ftype id;
importing the `gguf` package for those two enums costs ~140 ms (numpy, yaml and all of gguf-py),
about 20x the header read itself, on every `planner memory model.gguf` (issue #33). The ids are a
file format: fixed once written, only ever appended to.

Source: gguf-py 0.19.0 `gguf/constants.py` (`GGMLQuantizationType`, lines 4059-4093;
`LlamaFileType`, lines 4106-4149), which mirror ggml/include/ggml.h `enum ggml_type` and
include/llama.h `enum llama_ftype` (ggml.h at ggml-org/llama.cpp 004eaba has ids 0-39, MXFP4 the last;
NVFP4 = 40 and Q1_0 = 41 arrived after). Ids removed from files (31-33, 36-38: the repacked Q4_0/IQ4_NL
layouts) are absent, as in gguf-py. `tests/test_ggml_types.py` holds both tables equal to the
installed gguf package's own enums.
"""

from __future__ import annotations

# ggml_type id -> name (GGMLQuantizationType)
GGML_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
    16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
    23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16",
    34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4", 41: "Q1_0",
}

# llama_ftype id -> name without gguf-py's MOSTLY_ prefix (LlamaFileType; 1024 = GUESSED)
LLAMA_FILE_TYPES: dict[int, str] = {
    0: "ALL_F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
    10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
    16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
    23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M",
    30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4",
    40: "Q1_0", 1024: "GUESSED",
}
