"""The fuzz harness and the valid base inputs shared by tests/test_fuzz_*.py (helpers only: no tests here).

harness.py: guards, runners, hostile values and mutators, `fuzz_examples()` (SPEC_PLANNER_FUZZ_EXAMPLES);
safetensors_inputs.py and tokenizer_inputs.py: the tiny valid checkpoint and tokenizer files mutated.
"""
