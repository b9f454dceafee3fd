"""Every fitted constant in catalogs/calibration/ re-derived from the points it was fitted on.

Why: a golden file catches a change, not an error. Each entry says how its value follows from published
figures (a closed form over quoted inputs, a median or mean of per-row values, a two-point fit on the
roofline, the share implied by benchmark rows); this file re-derives every one and checks that a 10%
change of any value fails the re-derivation. It also checks that the engines hold no speed constant
without an entry, that speed/ and the engine speed modules carry no fitted float literal outside the
allow-list of definitional numbers, and that the priors follow from their source data.
"""

from __future__ import annotations

import ast
import json
import math
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from planner import engines
from planner.core import calibration
from planner.core.calibration import Calibration
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.sources import load_spec
from planner.speed.roofline import Roof, forward_cost

REPO = Path(__file__).resolve().parents[1]
ENTRIES = calibration.entries()


def _rows() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for name, key in (("published_baselines.json", "baselines"), ("published_measurements.json", "measurements")):
        for r in json.loads((REPO / "benchmarks" / "data" / name).read_text())[key]:
            out[r["id"]] = r
    return out


ROWS = _rows()


# --- re-derivation, one function per fit method ---------------------------------------------------

_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b}


def evaluate(formula: str, inputs: dict[str, float]) -> float:
    """A closed form over named inputs: + - * /, numbers, names, min() and max(); nothing else runs."""
    def ev(n: ast.AST) -> float:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
            return float(n.value)
        if isinstance(n, ast.Name):
            return float(inputs[n.id])
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("min", "max") and not n.keywords:
            return (min if n.func.id == "min" else max)(ev(a) for a in n.args)
        raise ValueError(f"not allowed in a calibration formula: {ast.dump(n)}")
    return ev(ast.parse(formula, mode="eval"))


def _bare(kind: str) -> Roof:
    return Roof(bandwidth_bytes_per_s=1.0, peak_flops={"bf16": 1e30, "fp16": 1e30}, kind=kind)


def _two_point(fit: dict) -> float:
    """(share, fixed s) per run of t = x / (share x peak) + fixed on a small and a large model's Q4_K_M decode,
    x what the roofline streams at 1 B/s (its bytes, or its seconds with the format factor in them)."""
    small, large = (forward_cost(load_spec(m), _bare(fit["kind"]), n=1, context=512, overhead_s=0.0,
                                 settings=Settings(context=512, resolved_engine=engines.get("llama.cpp"), weights_dtype="q4_k"))
                    for m in fit["models"])
    xs, xl = ((c.bytes_moved, cl.bytes_moved) if fit["streamed"] == "bytes" else (c.memory_s, cl.memory_s)
              for c, cl in ((small, large),)).__next__()
    outs = []
    for run in fit["runs"]:
        bw = (xl - xs) / (1 / run["large_tok_s"] - 1 / run["small_tok_s"])
        outs.append(bw / run["peak_bytes_per_s"] if fit["output"] == "share" else 1 / run["small_tok_s"] - xs / bw)
    return statistics.median(outs) if fit["aggregate"] == "median" else statistics.mean(outs)


def implied_share(row_id: str) -> float:
    """The share of peak bandwidth a published decode implies on this roofline: the bytes one forward
    streams / (peak x (measured seconds per token - the engine's per-forward cost))."""
    r = ROWS[row_id]
    m = get_machine(r["machine"])
    s = Settings(context=r.get("context") or 512, resolved_engine=engines.get(r["engine"]), weights_dtype=r["weights_dtype"])
    c = forward_cost(load_spec(r["model"]), _bare(m.kind), n=1, context=s.context, settings=s)
    return c.bytes_moved / (m.bandwidth_bytes_per_s * (1 / r["measured_tokens_per_s"] - c.overhead_s))


def derive(e: Calibration) -> float:
    """The value entry `e`'s fit gives from its points (before rounding)."""
    fit = e.fit
    if e.method == "formula":
        return evaluate(fit["formula"], fit["inputs"])
    if e.method in ("median", "mean"):
        values = [p["value"] for p in fit["points"]]
        return statistics.median(values) if e.method == "median" else statistics.mean(values)
    if e.method == "equal_to":
        return ENTRIES[tuple(fit["entry"].split("/"))].value
    if e.method == "two_point":
        return _two_point(fit)
    if e.method == "assumed":  # nothing to fit: the number it stands for where the code keeps its own copy
        return site_value(fit["at"]) if "at" in fit else e.value
    if e.method == "implied_share":
        share = statistics.median(implied_share(r) for r in e.rows)
        if "relative_to" in fit:
            share /= ENTRIES[tuple(fit["relative_to"].split("/"))].value
        return share
    raise AssertionError(f"no re-derivation for fit method {e.method}")


def site_value(at: str) -> float:
    """The number `at` names: 'catalogs/acceptance.json:workload.code.widen_low' (a path of keys) or
    'planner.core.constants:PRIOR_CROSS_FAMILY[1]' (a module attribute, optionally indexed)."""
    where, path = at.split(":")
    if where.endswith(".json"):
        x = json.loads((REPO / where).read_text())
        for k in path.split("."):
            x = x[k]
        return float(x)
    import importlib
    name, _, index = path.partition("[")
    x = getattr(importlib.import_module(where), name)
    return float(x[int(index.rstrip("]"))] if index else x)


def agrees(e: Calibration, derived: float) -> bool:
    """Whether the entry's value is its re-derived value as the fit states it: rounded to `rounding` (down when
    it says so), within `tolerance` (relative for shares from rows, else absolute), or equal."""
    fit = e.fit
    step, tol = fit.get("rounding"), fit.get("tolerance")
    if tol is not None:
        ok = math.isclose(e.value, derived, rel_tol=tol) if e.method in ("implied_share", "two_point") \
            else abs(e.value - derived) <= tol
        if not ok:
            return False
    if step:
        rounded = (math.floor if fit.get("round") == "down" else round)(derived / step + 1e-9) * step
        return math.isclose(e.value, rounded, rel_tol=1e-9, abs_tol=step * 1e-6) or tol is not None
    return tol is not None or math.isclose(e.value, derived, rel_tol=1e-9, abs_tol=1e-15)


@pytest.mark.parametrize("key", sorted(ENTRIES), ids="/".join)
def test_every_entry_follows_from_its_points_and_a_ten_percent_change_does_not(key):
    e = ENTRIES[key]
    derived = derive(e)
    assert agrees(e, derived), f"{'/'.join(key)}: catalogued {e.value}, re-derived {derived}"
    if e.method == "assumed":  # a stated assumption: a reason, no rows; a 10% change is a new assumption
        assert e.fit.get("reason") and not e.rows and not e.held_out, f"{'/'.join(key)}: assumed without a reason"
        return
    if e.value == 0.0:  # a term with nothing left for it (SGLang's hidden per-step cost): re-derived as zero
        assert derived <= 0.0 or e.fit.get("formula", "").startswith("max(0,")
        return
    assert not agrees(replace(e, value=e.value * 1.1), derived)
    if "stale" not in e.fit:  # a stale entry states its own gap (the refit is a change of its own)
        assert not agrees(replace(e, value=e.value * 0.9), derived)


def test_the_stale_metal_kquant_factor_states_what_this_roofline_gives_now():
    # draftbench M4 Max Q4_K_M baselines against the 0.85 Apple share without the factor: the inputs the
    # entry quotes are this roofline's predictions (a forward of Qwen2.5-14B / 72B Q4_K_M at 512 tokens)
    fit = ENTRIES[("llama.cpp", "apple", "format_share.kquant")].fit
    for model, key in (("qwen2.5-14b-instruct", "pred14_tok_s"), ("qwen2.5-72b-instruct", "pred72_tok_s")):
        c = forward_cost(load_spec(model), _bare("apple"), n=1, context=512,
                         settings=Settings(context=512, resolved_engine=engines.get("llama.cpp"), weights_dtype="q4_k"))
        assert 1 / (c.bytes_moved / (546e9 * 0.85) + c.overhead_s) == pytest.approx(fit["inputs"][key], abs=0.01)
    assert evaluate(fit["formula"], fit["inputs"]) == pytest.approx(0.851, abs=0.001)


def test_every_listed_row_exists_and_the_fitted_runs_quote_their_rows():
    for e in ENTRIES.values():
        for rid in (*e.rows, *e.held_out, *e.dependent):
            assert rid in ROWS, f"{'/'.join(e.key)} lists an unknown row {rid}"
        assert not set(e.rows) & set(e.held_out), f"{'/'.join(e.key)}: a row both fitted on and held out"
        for run in e.fit.get("runs", []):  # the two-point fits: each run's speeds are its rows' measurements
            measured = sorted(ROWS[r]["measured_tokens_per_s"] for r in run["rows"])
            assert measured in ([], sorted([run["small_tok_s"], run["large_tok_s"]]))
        for p in e.fit.get("points", []):
            assert set(p["rows"]) <= set(e.rows)


# --- no speed constant outside the catalog ---------------------------------------------------------

_DEFINITIONAL = {0.0, 1.0}  # an absent term; the CPU's own measured bandwidth (engines/llamacpp_speed.py)


def _numbers(x) -> list[float]:
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return []
    if isinstance(x, (int, float)):
        return [float(x)]
    if isinstance(x, dict) or hasattr(x, "items"):
        return [n for v in x.values() for n in _numbers(v)]
    return [n for v in x for n in _numbers(v)]


@pytest.mark.parametrize("engine", engines.all_engines(), ids=lambda e: e.name)
def test_every_speed_number_an_engine_holds_is_a_calibration_entry(engine):
    catalogued = {e.value for e in ENTRIES.values()}
    for name in ("bandwidth_efficiency", "format_share", "forward_overhead_s", "forward_overhead_by_kind",
                 "draft_forward_overhead_s", "spec_round_overhead_s", "compute_efficiency"):
        for n in _numbers(getattr(engine, name)):
            assert n in catalogued or n in _DEFINITIONAL, f"{engine.name}.{name} holds {n} with no calibration entry"


# Float literals a speed or acceptance path may spell: definitional or numerical, never fitted. Each with why.
ALLOWED_LITERALS = {
    0.0: "zero", 1.0: "one", 2.0: "two (FLOPs per multiply-add, halves, a median's midpoint)", 0.5: "a half",
    1e-300: "underflow guard", 1e-18: "singular-matrix guard", 1e-14: "continued-fraction tolerance",
    1e-12: "division guard", 1e-9: "float comparison slack", 1e-6: "closed form's cancellation guard near 1",
    1e3: "ms per s (messages)", 1e6: "M", 1e9: "G / billions", 1e12: "T (messages)",
    1.959963984540054: "the two-sided 95% normal quantile (Wilson intervals)",
    0.99: "acceptance clamp below 1 (a rate of 1 makes E(K) = K + 1 exactly)", 0.01: "acceptance clamp above 0",
    0.9: "diagnosis: a 10% drop between neighbouring K counts as a drop (a reporting threshold)",
}
SCANNED = sorted([*(REPO / "planner" / "speed").glob("*.py"), *(REPO / "planner" / "engines").glob("*_speed.py"),
                  REPO / "planner" / "drafting" / "priors.py"])


def _float_literals(path: Path) -> list[tuple[int, float]]:
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, float) and id(n) not in docs]


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: p.name)
def test_no_fitted_float_literal_in_a_speed_path(path):
    found = [(line, v) for line, v in _float_literals(path) if v not in ALLOWED_LITERALS]
    assert found == [], f"{path.name}: float literals with no calibration entry or allow-list reason: {found}"


def test_the_literal_scan_catches_a_fitted_constant(tmp_path):
    p = tmp_path / "x_speed.py"
    p.write_text('"""doc 0.786"""\nSHARE = 0.786\nHALF = 0.5\n')
    assert [v for _, v in _float_literals(p) if v not in ALLOWED_LITERALS] == [0.786]


# --- priors from their source data -----------------------------------------------------------------

def test_the_same_family_prior_follows_from_the_bundled_same_family_measurements():
    # PRIOR_SAME_FAMILY (core/constants.py) against catalogs/pairs: the centre is the lower quartile of the
    # bundled same-family alphas (a pair nobody measured is taken below the published ones, which are the pairs
    # people kept), the interval the measured range widened to 0.1 below and 0.05 above. The rule is read off
    # the value as it was set (an in-sample statement), so it pins the value to the data, not the reverse.
    from planner.core.constants import PRIOR_SAME_FAMILY
    from planner.speed.acceptance import entry_acceptance, load_pairs

    same = sorted(entry_acceptance(p).alpha for p in load_pairs()
                  if p.target_family == p.draft_family and p.acceptance_value is not None)
    assert len(same) >= 20
    centre, low, high = PRIOR_SAME_FAMILY
    assert centre == pytest.approx(round(statistics.quantiles(same, n=4)[0] / 0.05) * 0.05)
    assert low == pytest.approx(math.floor(same[0] / 0.1) * 0.1)
    assert high == pytest.approx(math.ceil(same[-1] / 0.05) * 0.05)


# --- closed sets as types ---------------------------------------------------------------------------

def test_share_keys_are_one_closed_set_for_machines_engines_and_the_calibration():
    from planner.engines.base import SHARE_KEYS
    from planner.fits.machine_catalog import catalog_entries
    from planner.plan.roof import share_kinds

    assert {e.machine_class for e in ENTRIES.values()} - {calibration.ANY} <= set(SHARE_KEYS)
    for name in catalog_entries():
        assert set(share_kinds(get_machine(name), tp=2)) <= set(SHARE_KEYS), name
    with pytest.raises(ValueError, match="share keys"):
        replace(engines.get("vllm"), bandwidth_efficiency={"gpu-hmb": (0.5, "typo")})
    with pytest.raises(ValueError, match="sampled_acceptance"):
        replace(engines.get("mlx"), sampled_acceptance="matching")
