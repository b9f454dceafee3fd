"""CLI commands, one module per face; each registers on `_common.app` (run by `planner.cli.main`).

_common.py: the app, emit/warn and small helpers; _options.py: the option aliases several commands share;
_methods.py: --draft as a drafting method (memory, fit).
"""
