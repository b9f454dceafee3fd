"""`planner report --machine M` with no TARGET: machine first, every catalog model a row, the rows
recommend's own answers, the same as JSON, HTML and Markdown; a fleet matrix; detected machines."""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

from planner import engines
from planner.core.constants import DEFAULT_CONTEXT
from planner.core.errors import UsageError
from planner.core.units import parse_params
from planner.fits import fit
from planner.fits import machine_detect as D
from planner.fits.machine_lookup import get_machine
from planner.fits.measure_stats import Spread
from planner.plan import fleet as F
from planner.sources import catalog, load_spec

from .fake_host import fake_cpu_host
from .test_check import run, write_profile

GiB = 2**30
SVG_NS = "{http://www.w3.org/2000/svg}"
VOID = {"meta", "img", "br", "hr", "link", "input"}
CHROMIUMS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def report_json(args, capsys):
    code, out, err = run(["report", *args, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


def recommend_json(target, machine, capsys, *extra):
    code, out, err = run(["recommend", target, "--machine", machine, "--json", *extra], capsys)
    assert code in (0, 1), err
    return json.loads(out)


@pytest.fixture(scope="module")
def rtx4090():
    """The rows of the whole catalog on an RTX 4090 at the default context, in process."""
    m = get_machine("rtx-4090")
    return F.machine_rows(F.catalog_targets(), m, F.Options(context=DEFAULT_CONTEXT))


# --- rows are recommend's answers ------------------------------------------------------------

@pytest.mark.parametrize("target, extra", [
    ("meta-llama/Llama-3.1-8B-Instruct", ()),   # speculates with a catalog draft
    ("mistralai/Mistral-7B-v0.3", ()),          # no catalog draft: n-gram lookup or plain decoding
    ("Qwen/Qwen2.5-14B-Instruct", ("--weights-dtype", "fp8")),  # fits only with fp8 weights
])
def test_three_rows_equal_planner_recommend(target, extra, capsys):
    doc = report_json(["--machine", "rtx-4090"], capsys)
    (row,) = [r for r in doc["rows"] if r["target"] == target]
    rec = recommend_json(target, "rtx-4090", capsys, *extra)
    c = rec["recommendation"]
    assert row["weights_dtype"] == (extra[1] if extra else None) and row["fits_as_stored"] is (not extra)
    assert row["fits"] is rec["baseline_fits"] is True
    assert (row["draft"], row["speedup"], row["speedup_interval"], row["launch"], row["reasons"]) == \
        (c["draft"], c["speedup"], c["speedup_interval"], c["launch"], c["reasons"])
    assert row["k"] == c["k"] and row["kv_dtype"] == c["kv_dtype"] and row["engine"] == rec["engine"] == "vllm"
    assert row["headroom_bytes"] == (c["headroom_bytes"] if c["draft"] else rec["baseline_headroom_bytes"])
    if c["draft"]:
        assert row["baseline_tokens_per_s"] == c["baseline_tokens_per_s"] and row["method"] == c["method"]
        assert row["tokens_per_s"] == pytest.approx(c["baseline_tokens_per_s"] * c["speedup"], rel=1e-3)
    else:
        assert row["method"] == "none" and row["tokens_per_s"] == row["baseline_tokens_per_s"]


def test_plain_rate_is_recommends_figure_at_the_launched_kv(rtx4090):
    # plain decoding runs at the engine's first KV type: its rate is the one recommend's options carry
    # at that type, and the figure computed for targets with no candidate at all is that same one
    opts = F.Options(context=DEFAULT_CONTEXT)
    plain = [r for r in rtx4090 if r.fits and not r.speculates and r.recommendation.plans]
    assert len(plain) >= 2
    for r in plain:
        same = [o.baseline_tokens_per_s for o in r.recommendation.plans if o.kv_dtype == r.choice.kv_dtype]
        assert r.choice.kv_dtype == "auto" and same and r.baseline_tokens_per_s == same[0]
        layout = fit.default_layout(r.machine.n_devices, engines.get(r.engine))
        rate, source = F._plain_rate(r.target, r.machine, opts, engines.get(r.engine), layout, r.weights_dtype, False)
        assert rate == pytest.approx(same[0], rel=1e-9) and source == "roofline (rtx-4090)"
    # a row that does not speculate runs at its plain rate (every target has some method to weigh now)
    lone = [r for r in rtx4090 if r.fits and not r.speculates]
    assert lone and all(r.baseline_tokens_per_s > 0 and r.tokens_per_s == r.baseline_tokens_per_s for r in lone)


def test_every_catalog_model_is_a_row_with_fit_plan_and_command(rtx4090):
    assert sorted(r.target.spec.id for r in rtx4090) == sorted(e["id"] for e in catalog.entries())
    for r in rtx4090:
        if r.fits:
            assert r.choice.launch["command"].startswith("vllm serve ") and r.baseline_tokens_per_s > 0
            assert r.max_context > 0
        else:
            assert r.choice.launch == {} and r.tokens_per_s is None and r.headroom_bytes < 0


def test_largest_context_and_weights_change_equal_planner_fit(capsys):
    doc = report_json(["--machine", "rtx-4090", "--targets", "mistral-7b-v0.3,qwen2.5-14b-instruct"], capsys)
    rows = {r["target"]: r for r in doc["rows"]}
    code, out, _ = run(["fit", "mistral-7b-v0.3", "--machine", "rtx-4090", "--engine", "vllm", "--json"], capsys)
    f = json.loads(out)
    assert code == 0 and rows["mistralai/Mistral-7B-v0.3"]["max_context"] == f["max_context"]
    assert rows["mistralai/Mistral-7B-v0.3"]["max_context_limit"] == f["max_context_limit"]
    # Qwen2.5-14B in bf16 (29.5 GB) is over a 4090's budget; the engine's first ladder step (fp8) fits
    q = "qwen2.5-14b-instruct"
    code, out, _ = run(["fit", q, "--machine", "rtx-4090", "--engine", "vllm", "--json"], capsys)
    assert code == 1 and json.loads(out)["fits"] is False
    code, out, _ = run(["fit", q, "--machine", "rtx-4090", "--engine", "vllm", "--weights-dtype", "fp8", "--json"],
                       capsys)
    assert code == 0 and json.loads(out)["fits"] is True
    assert rows["Qwen/Qwen2.5-14B-Instruct"]["weights_dtype"] == "fp8"


def test_rows_sorted_fits_then_size_then_speed(rtx4090):
    tiers = [0 if r.fits and r.fits_as_stored else 1 if r.fits else 2 for r in rtx4090]
    assert tiers == sorted(tiers) and set(tiers) == {0, 1, 2}
    for a, b in itertools.pairwise(rtx4090):
        if F.sort_key(a)[0] == F.sort_key(b)[0]:
            assert a.target.params >= b.target.params
            if a.target.params == b.target.params:
                assert (a.tokens_per_s or 0) >= (b.tokens_per_s or 0)


def test_filters(rtx4090, capsys):
    doc = report_json(["--machine", "rtx-4090", "--family", "qwen", "--max-params", "8B"], capsys)
    assert doc["rows"] and all(r["family"].startswith("qwen") and r["params_total"] <= 8e9 for r in doc["rows"])
    want = {r.target.spec.id for r in rtx4090 if r.fits and r.choice.speedup >= 1.5}
    doc = report_json(["--machine", "rtx-4090", "--min-speedup", "1.5"], capsys)
    assert {r["target"] for r in doc["rows"]} == want and len(want) >= 3


def test_parse_params():
    assert (parse_params("8B"), parse_params("1.5b"), parse_params("500M"), parse_params("123")) == \
        (8_000_000_000, 1_500_000_000, 500_000_000, 123)
    with pytest.raises(UsageError):
        parse_params("eight")


# --- targets and machines from files -----------------------------------------------------------

def test_targets_file_and_fleet_file(tmp_path, capsys):
    (tmp_path / "targets.txt").write_text("# what we serve\nllama-3.1-8b-instruct\n\nqwen2.5-7b-instruct  # chat\n")
    (tmp_path / "fleet.txt").write_text("rtx-4090\nh100-sxm\n")
    doc = report_json(["--targets", str(tmp_path / "targets.txt"), "--fleet", str(tmp_path / "fleet.txt"),
                       "--best-by", "speed"], capsys)
    assert [m["name"] for m in doc["machines"]] == ["rtx-4090", "h100-sxm"]
    assert len(doc["rows"]) == 4 and {r["machine"] for r in doc["rows"]} == {"rtx-4090", "h100-sxm"}
    # where each target should live by speed: the faster of the two (both fit as stored)
    for tid, best in doc["best_machine"].items():
        rows = {r["machine"]: r for r in doc["rows"] if r["target"] == tid}
        assert best == max(rows, key=lambda n: rows[n]["tokens_per_s"])
    assert doc["best_machine"]["meta-llama/Llama-3.1-8B-Instruct"] == "h100-sxm"


def test_local_folder_target(tmp_path, capsys):
    src = load_spec("qwen2.5-0.5b-instruct")
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(catalog.find("qwen2.5-0.5b-instruct")["config"]))
    doc = report_json(["--machine", "rtx-4090", "--targets", str(folder)], capsys)
    (row,) = doc["rows"]
    assert row["target_ref"] == str(folder) and row["params_total"] == src.params_total and row["fits"]
    assert str(folder) in row["launch"]["command"]
    doc = report_json(["--machine", "rtx-4090", "--targets", str(folder), "--catalog", "--no-plots"], capsys)
    assert len(doc["rows"]) == 1 + len(catalog.entries())  # the folder, then every catalog model


# --- output files --------------------------------------------------------------------------------

class Strict(HTMLParser):
    """Tag balance (every non-void element closed in order), tables, images, and any external reference."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.images: list[dict[str, str]] = []
        self.rows = 0
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a)
        if tag == "tr":
            self.rows += 1
        for key in ("src", "href"):
            if a.get(key) and not a[key].startswith(("data:", "#")):
                self.external.append(a[key])
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()


def test_html_is_well_formed_and_embeds_the_plot(tmp_path, capsys, rtx4090):
    out = tmp_path / "r.html"
    code, stdout, err = run(["report", "--machine", "rtx-4090", "--out", str(out)], capsys)
    assert code == 0, err
    assert f"wrote {out}" in stdout
    page = Strict()
    page.feed(out.read_text(encoding="utf-8"))
    page.close()
    assert page.errors == [] and page.stack == [] and page.external == []
    fitting = [r for r in rtx4090 if r.fits]
    assert page.rows == 1 + len(rtx4090)  # header + one row per catalog model
    (img,) = page.images
    assert img["data-plot"] == "tokens"
    root = ET.fromstring(base64.b64decode(img["src"].split(",", 1)[1]))
    assert root.tag == f"{SVG_NS}svg"
    bars = {c: [r for r in root.iter(f"{SVG_NS}rect") if r.get("class") == c] for c in ("plain", "best")}
    assert len(bars["plain"]) == len(bars["best"]) == len(fitting)  # two bars per fitting target
    # bar lengths are proportional to the rows' tokens/s (one scale for the whole plot)
    px = [float(r.get("width")) for r in bars["best"]]
    assert px == pytest.approx([r.tokens_per_s * px[0] / fitting[0].tokens_per_s for r in fitting], abs=0.11)
    labels = [t.text for t in root.iter(f"{SVG_NS}text")]
    assert all(r.target.spec.id.rsplit("/", 1)[-1] in " ".join(labels) for r in fitting)
    text = out.read_text()
    assert text.count("vllm serve ") == len(fitting) and "catalogued" in text


def test_markdown_links_the_plot_and_fleet_matrix(tmp_path, capsys):
    out = tmp_path / "r.md"
    code, _, err = run(["report", "--machine", "rtx-4090", "--machine", "m3-max-36gb", "--family", "llama",
                        "--out", str(out)], capsys)
    assert code == 0, err
    md = out.read_text()
    assert "## Fleet: targets x machines" in md and "| target | rtx-4090 | m3-max-36gb | best machine |" in md
    matrix = md.split("## Fleet", 1)[1].split("## rtx-4090", 1)[0]
    cells = [ln.split(" | ") for ln in matrix.splitlines() if ln.startswith("| meta-llama/")]
    best = [c[-1].rstrip(" |") for c in cells]
    assert "none" in best and best == sorted(best, key=lambda b: b == "none")  # fits somewhere first
    assert "## rtx-4090: what runs here" in md and "## m3-max-36gb: what runs here" in md
    assert "llama-server " in md  # the Apple machine's default engine
    links = sorted(ln[ln.index("](") + 2:-1] for ln in md.splitlines() if ln.startswith("!["))
    assert links == ["r-m1-tokens.svg", "r-m2-tokens.svg"]
    for name in links:
        assert ET.fromstring((tmp_path / name).read_bytes()).tag == f"{SVG_NS}svg"


@pytest.mark.skipif(not any(Path(c).exists() for c in CHROMIUMS),
                    reason="no Chromium/Chrome at /usr/bin (apt-get install -y chromium to run this check)")
def test_headless_browser_screenshot_shows_the_plot(tmp_path, capsys):
    image = pytest.importorskip("matplotlib.image", reason="reading the screenshot needs matplotlib (report extra)")

    out = tmp_path / "r.html"
    code, _, err = run(["report", "--machine", "rtx-4090", "--max-params", "9B", "--out", str(out)], capsys)
    assert code == 0, err
    png = tmp_path / "shot.png"
    browser = next(c for c in CHROMIUMS if Path(c).exists())
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'p'}",
           "--window-size=1280,2000", f"--screenshot={png}", out.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert png.is_file(), done.stderr[-2000:]
    rgb = (image.imread(str(png))[..., :3] * 255).round().astype(int)
    # the plot's "best plan" bars are #1f4e79 and its plain bars #7f7f7f: both must be on screen
    navy = (abs(rgb - (0x1F, 0x4E, 0x79)).sum(axis=2) < 12).sum()
    grey = (abs(rgb - (0x7F, 0x7F, 0x7F)).sum(axis=2) < 6).sum()
    assert navy > 2000 and grey > 2000, (navy, grey)


# --- detected machines ---------------------------------------------------------------------------

@pytest.fixture
def cpu_host(monkeypatch):
    """This host as a 64 GiB uncatalogued CPU whose copy bandwidth measures 50 GB/s (no nvidia-smi, no torch)."""
    fake_cpu_host(monkeypatch)
    monkeypatch.setattr(D, "measure_bandwidth", lambda: Spread(50e9, 50e9, 50e9, 7, 7, 0.5, "thread CPU time"))
    return SimpleNamespace()


def test_machine_auto_says_what_was_measured(cpu_host, capsys):
    doc = report_json(["--machine", "auto", "--targets", "qwen2.5-7b-instruct"], capsys)
    (m,) = doc["machines"]
    assert m["origin"] == "detected" and m["bandwidth_bytes_per_s"] == 50_000_000_000
    assert {k: v["origin"] for k, v in m["figures"].items()} == \
        {"memory": "measured", "bandwidth": "measured", "flops": "estimated"}
    (row,) = doc["rows"]
    rec = recommend_json("qwen2.5-7b-instruct", "auto", capsys)
    assert row["engine"] == rec["engine"] == "llama.cpp"
    assert row["speedup"] == rec["recommendation"]["speedup"]
    assert row["baseline_tokens_per_s"] == rec["recommendation"]["baseline_tokens_per_s"]


def test_detected_catalog_gpu_has_measured_memory_catalogued_bandwidth(monkeypatch):
    monkeypatch.setattr(D, "_run", lambda cmd: "0, NVIDIA GeForce RTX 4090, 24564, 23000\n"
                        if tuple(cmd) == D.NVIDIA_SMI_QUERY else None)
    monkeypatch.setattr(D, "_virtual_memory", lambda: (64 * GiB, 40 * GiB))
    origins = {k: v[0] for k, v in F.figure_origins(get_machine("auto")).items()}
    assert origins == {"memory": "measured", "bandwidth": "catalogued", "flops": "catalogued"}


def test_uncatalogued_gpu_still_judges_fit_and_says_speed_is_unknown(monkeypatch, capsys):
    monkeypatch.setattr(D, "_run", lambda cmd: "0, Acme Tensor 9000, 16384, 16000\n"
                        if tuple(cmd) == D.NVIDIA_SMI_QUERY else None)
    monkeypatch.setattr(D, "_virtual_memory", lambda: (64 * GiB, 40 * GiB))
    doc = report_json(["--machine", "auto", "--targets", "qwen2.5-0.5b-instruct,qwen2.5-32b-instruct"], capsys)
    assert doc["machines"][0]["figures"]["bandwidth"]["origin"] == "none"
    rows = {r["target"]: r for r in doc["rows"]}
    small, big = rows["Qwen/Qwen2.5-0.5B-Instruct"], rows["Qwen/Qwen2.5-32B-Instruct"]
    assert small["fits"] and small["verdict"] == "speed unknown" and "no memory-bandwidth figure" in small["error"]
    assert small["speedup"] is None and small["tokens_per_s"] is None and small["max_context"] > 0
    assert not big["fits"] and big["verdict"] == "does not fit"


def test_profile_prices_its_target_on_the_detected_machine(cpu_host, tmp_path, capsys):
    verify, t_d, t_o = (0.05, 0.051, 0.052, 0.053, 0.054), 0.004, 0.001
    prof = write_profile(tmp_path / "probe.json", verify=verify, t_d=t_d, t_o=t_o, context=4096)
    args = ["report", "--machine", "auto", "--profile", str(prof), "--acceptance", "0.8", "--targets",
            "llama-3.1-8b-instruct,qwen2.5-7b-instruct", "--json"]
    code, out, err = run(args, capsys)
    assert code == 0 and "profile measured at context" not in err
    doc = json.loads(out)
    code, _, err = run([*args, "--context", "8k"], capsys)
    assert code == 0 and "warning: profile measured at context 4096, planning for 8192" in err
    rows = {r["target"]: r for r in doc["rows"]}
    llama = rows["meta-llama/Llama-3.1-8B-Instruct"]
    assert llama["baseline_tokens_per_s"] == round(1 / verify[0], 3) and llama["costs_source"].startswith("profile")
    assert rows["Qwen/Qwen2.5-7B-Instruct"]["costs_source"].startswith("roofline")  # not the profiled model


# --- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, needle", [
    (["--machine", "rtx-4090", "--best-by", "fastest"], "Cannot use --best-by fastest"),
    (["--machine", "rtx-4090", "--json", "--draft", "llama-3.2-1b"], "Cannot use --draft without a TARGET"),
    (["--machine", "rtx-4090", "--json", "--max-params", "huge"], "expected a parameter count"),
    (["--machine", "rtx-4090", "--json", "--family", "nonesuch"], "no target is left"),
    (["--machine", "rtx-4090", "--json", "--profile", "p.json"], "needs --machine auto"),
    (["--machine", "rtx-4090", "--json", "--fleet", "missing.txt"], "Cannot read --fleet file"),
    (["llama-3.1-8b", "--machine", "rtx-4090", "--json", "--out", "r.html"], "Cannot use --json with a TARGET"),
])
def test_bad_usage_exits_2_with_one_line(tmp_path, monkeypatch, capsys, args, needle):
    monkeypatch.chdir(tmp_path)
    write_profile(tmp_path / "p.json")
    code, out, err = run(["report", *args], capsys)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and out == ""


def test_no_torch_for_the_whole_catalog(tmp_path):
    code = ("import sys\nfrom planner.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    rc = e.code\nprint(rc, 'torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code, "report", "--machine", "rtx-4090", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.split("\n")[-2] == "0 False", r.stderr[-2000:]


def test_json_object_and_every_row_start_with_schema_version(capsys):
    from planner.core.constants import JSON_SCHEMA_VERSION

    doc = report_json(["--machine", "rtx-4090", "--targets", "qwen2.5-7b-instruct,llama-3.2-1b"], capsys)
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == JSON_SCHEMA_VERSION
    assert len(doc["rows"]) == 2 and all(next(iter(r)) == "schema_version" for r in doc["rows"])
