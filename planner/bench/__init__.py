"""Reference speculative decoding (torch) and the bench that checks predictions against it.

Only this package and planner/probe import torch, and only inside functions or in
modules the CLI imports lazily.
"""
