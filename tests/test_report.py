"""`planner report`: HTML/Markdown hold the ledger's exact bytes, the tables and real plots; chromium renders it."""

from __future__ import annotations

import base64
import json
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from planner import engines
from planner.fits import fit
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.render import plots
from planner.sources import load_spec

from .test_check import deployment, policy, run, speedup_by_hand, write_profile

TARGET, DRAFT = "llama-3.1-8b-instruct", "llama-3.2-1b-instruct"
CHROMIUM = Path("/usr/bin/chromium")
SVG_NS = "{http://www.w3.org/2000/svg}"


class Page(HTMLParser):
    """Collects data-bytes cells (per section), images, table cell text, and any external reference."""

    def __init__(self) -> None:
        super().__init__()
        self.section: str | None = None
        self.bytes: dict[str, list[int]] = {}
        self.images: list[dict[str, str]] = []
        self.cells: list[str] = []
        self.external: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a["id"]
        if tag == "td":
            self._in_cell = True
            self.cells.append("")
            if "data-bytes" in a:
                self.bytes.setdefault(self.section, []).append(int(a["data-bytes"]))
        if tag == "img":
            self.images.append(a)
        for key in ("src", "href"):
            v = a.get(key, "")
            if v and not v.startswith(("data:", "#")):
                self.external.append(v)
        if tag in ("script", "link", "iframe"):
            self.external.append(tag)

    def handle_endtag(self, tag):
        if tag == "td":
            self._in_cell = False

    def handle_data(self, data):
        if self._in_cell and self.cells:
            self.cells[-1] += data


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def svg_root(data: bytes) -> ET.Element:
    root = ET.fromstring(data)
    assert root.tag == f"{SVG_NS}svg"
    return root


def devices(machine: str, context: int = 8192, k_rows: int = 8):
    m = get_machine(machine)
    s = Settings(context=context, resolved_engine=engines.get("vllm"), spec_tokens=k_rows)
    p = fit.Problem(load_spec(TARGET), m, s, fit.default_layout(m.n_devices, engines.get("vllm")), draft=load_spec(DRAFT))
    return fit.evaluate(p, context, 1)


def test_html_report_holds_ledger_numbers_and_plots(tmp_path, capsys):
    out = tmp_path / "fit.html"
    code, stdout, err = run(["report", TARGET, "--draft", DRAFT, "--machine", "h100-sxm", "--machine", "rtx-4090",
                             "--engine", "vllm", "--context", "8k", "--out", str(out)], capsys)
    assert code == 0, err
    assert f"wrote {out}" in stdout
    page = parse(out)
    assert set(page.bytes) == {"s1", "s2"} and page.external == []
    for section, machine in (("s1", "h100-sxm"), ("s2", "rtx-4090")):
        nums = page.bytes[section]
        (dev,) = devices(machine)
        # hand-checked terms: Llama-3.1-8B bf16 KV = 2 * 32 layers * 8 kv heads * 128 * 2 B = 131072 B/token,
        # Llama-3.2-1B = 2 * 16 * 8 * 64 * 2 = 32768 B/token; at 8192 tokens: 1 GiB and 256 MiB
        assert 8192 * 131072 in nums and 8192 * 32768 in nums
        assert load_spec(TARGET).weights.resident_bytes in nums and load_spec(DRAFT).weights.resident_bytes in nums
        # used, budget, headroom rows equal an independent fit of the same deployment
        assert nums[-3:] == [dev.used_bytes, dev.budget.budget_bytes, dev.headroom_bytes]
    plots = {img["data-plot"] for img in page.images}
    assert {"ledger", "verify", "speedup", "load"} <= plots and len(page.images) == 8
    for img in page.images:
        prefix = "data:image/svg+xml;base64,"
        assert img["src"].startswith(prefix)
        root = svg_root(base64.b64decode(img["src"][len(prefix):]))
        drawn = [e for e in root.iter() if e.tag in (f"{SVG_NS}path", f"{SVG_NS}rect", f"{SVG_NS}circle")]
        assert len(drawn) > 10  # drawn bars, lines and marks, not an empty canvas
    text = out.read_text()
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct" in text and "speculative-config" in text


def test_markdown_report_writes_images_beside_it(tmp_path, capsys):
    out = tmp_path / "docs" / "fit.md"
    code, _, err = run(["report", TARGET, "--draft", DRAFT, "--machine", "h100-sxm", "--engine", "vllm",
                        "--context", "8192", "--out", str(out)], capsys)
    assert code == 0, err
    md = out.read_text()
    (dev,) = devices("h100-sxm")
    assert f"| used | {dev.used_bytes / 2**30:.2f} GiB ({dev.used_bytes:,} B) |" in md
    assert f"({8192 * 131072:,} B)" in md and "### Pair verdicts" in md and "| vllm | yes |" in md
    links = [ln[ln.index("](") + 2:-1] for ln in md.splitlines() if ln.startswith("![")]
    assert sorted(links) == ["fit-s1-ledger.svg", "fit-s1-load.svg", "fit-s1-speedup.svg", "fit-s1-verify.svg"]
    for name in links:
        svg_root((out.parent / name).read_bytes())


def test_report_plans_at_the_deployments_weights_format(tmp_path, capsys):
    # the report's plan (and its launch command) takes --weights-dtype, as `planner recommend` does
    out = tmp_path / "q4.md"
    code, _, err = run(["report", "qwen2.5-14b-instruct", "--machine", "m4-max-128gb", "--engine", "llama.cpp",
                        "--weights-dtype", "q4_k", "--out", str(out)], capsys)
    assert code == 0, err
    commands = [ln for ln in out.read_text().splitlines() if ln.startswith("llama-server ")]
    assert commands and all("-m Qwen2.5-14B-Instruct-Q4_K_M.gguf" in c for c in commands)


def test_report_with_profile_shows_measured_curve(tmp_path, capsys):
    verify, t_d, t_o = (0.02, 0.0205, 0.021, 0.0215, 0.022), 0.002, 0.0005
    prof = write_profile(tmp_path / "probe.json", verify=verify, t_d=t_d, t_o=t_o)
    out = tmp_path / "r.md"
    code, _, err = run(["report", TARGET, "--draft", DRAFT, "--machine", "h100-sxm", "--engine", "vllm", "--context",
                        "8k", "--profile", str(prof), "--acceptance", "0.7-0.9", "--k", "3", "--no-plots",
                        "--out", str(out)], capsys)
    assert code == 0, err
    md = out.read_text()
    assert "| 2 | 20.500 | 1.025 |" in md  # t_v(2) = 20.5 ms, t_v(2)/t_v(1) = 1.025
    rows = {ln.split(" | ")[0]: ln for ln in md.splitlines() if ln.startswith("| 3 | ")}
    k3 = rows["| 3"]
    assert k3 == (f"| 3 | {speedup_by_hand(0.8, 3, verify, t_d, t_o):.3f} | {speedup_by_hand(0.7, 3, verify, t_d, t_o):.3f}"
                  f" | {speedup_by_hand(0.9, 3, verify, t_d, t_o):.3f} |")
    assert "profile (measured)" in md and "![" not in md and not list(tmp_path.glob("*.svg"))


def test_report_from_policy_has_requirements(tmp_path, capsys):
    p = policy(tmp_path, '[defaults]\ncontext = 8192\n' + deployment(name="chat", require='min_headroom = "1GiB"\n')
               + deployment(name="plain", draft=None, machine="rtx-4090"))
    out = tmp_path / "policy.html"
    code, stdout, err = run(["report", "--config", str(p), "--out", str(out)], capsys)
    assert code == 0, err
    page = parse(out)
    assert set(page.bytes) == {"s1", "s2"}
    assert "chat on h100-sxm" in stdout and "plain on rtx-4090" in stdout
    assert "PASS" in page.cells and "min_headroom" in page.cells
    # no draft given: the section shows the catalog's recommended draft, said to be recommended
    assert any(c.startswith("meta-llama/Llama-3.2-") and c.endswith("(recommended)") for c in page.cells)


def test_report_without_bandwidth_still_has_the_ledger(tmp_path, capsys):
    out = tmp_path / "r.html"
    code, _, err = run(["report", TARGET, "--draft", DRAFT, "--gpu-memory", "24GiB", "--engine", "llama.cpp",
                        "--out", str(out)], capsys)
    assert code == 0, err
    page = parse(out)
    assert [i["data-plot"] for i in page.images] == ["ledger"]
    assert "no memory-bandwidth figure" in out.read_text()


@pytest.mark.parametrize("args,needle", [
    (["--out", "r.pdf"], "expected .html or .md"),
    ([], "Missing option"),
])
def test_report_bad_usage_exits_2(tmp_path, capsys, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["report", TARGET, "--machine", "l4", *args], capsys)
    assert code == 2 and needle in err


def test_report_never_overwrites_its_policy(tmp_path, capsys):
    p = policy(tmp_path, deployment(), "planner.md")
    before = p.read_text()
    # load_policy reads any file name; writing the report over it must be refused
    code, _, err = run(["report", "--config", str(p), "--out", str(p)], capsys)
    assert code == 2 and "also an input" in err and p.read_text() == before


def test_svg_is_deterministic():
    from planner.plan.assess import assess
    from planner.plan.policy import Deployment
    from planner.plan.scenario import machines_for, scenarios

    d = Deployment(name="x", target=TARGET, draft=DRAFT, machines=("l4",), context=4096)
    (sc,) = scenarios(d, machines_for(d))
    a = assess(sc)
    assert plots.ledger_plot(a) == plots.ledger_plot(a)
    assert plots.speedup_plot(a.speed) == plots.speedup_plot(a.speed)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium "
                                                  "(apt-get install -y chromium to run this check)")
def test_headless_chromium_screenshot_is_not_blank(tmp_path, capsys):
    image = pytest.importorskip("matplotlib.image", reason="reading the screenshot back needs matplotlib "
                                                           "(pip install matplotlib); the report itself does not")

    out = tmp_path / "fit.html"
    code, _, err = run(["report", TARGET, "--draft", DRAFT, "--machine", "h100-sxm", "--engine", "vllm",
                        "--out", str(out)], capsys)
    assert code == 0, err
    png = tmp_path / "shot.png"
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           "--window-size=1280,2400", f"--screenshot={png}", out.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert png.is_file(), done.stderr[-2000:]
    pixels = image.imread(str(png))
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    rgb = (pixels[..., :3] * 255).round().astype(int).reshape(-1, 3)
    distinct = {tuple(p) for p in rgb[:: max(1, len(rgb) // 200_000)]}
    assert len(distinct) > 50  # text, tables and plots: far more than a blank (one colour) page
    white = (rgb == 255).all(axis=1).mean()
    assert white < 0.97


def test_report_shows_the_plan_under_load_as_recommend_prices_it(tmp_path, capsys):
    """The 'Speed-up under load' table: one row per context (the deployment's, 4x, 16x), one column per
    concurrency 1..256; each cell is the speed-up `planner recommend --batch` gives for that context and B."""
    out = tmp_path / "load.md"
    code, _, err = run(["report", TARGET, "--draft", DRAFT, "--machine", "h100-sxm", "--engine", "vllm",
                        "--kv-dtype", "fp8", "--context", "512", "--out", str(out)], capsys)
    assert code == 0, err
    md = out.read_text()
    table = md[md.index("### Speed-up under load"):].split("\n\n")[2].splitlines()
    assert table[0] == "| context | " + " | ".join(f"B={1 << i}" for i in range(9)) + " |"
    rows = {int(r.split("|")[1].strip().replace(",", "")): r.split("|")[2:-1] for r in table[2:]}
    assert sorted(rows) == [512, 2048, 8192]
    for context in (512, 8192):
        code, js, err = run(["recommend", TARGET, "--candidates", DRAFT, "--machine", "h100-sxm", "--engine", "vllm",
                             "--kv-dtype", "fp8", "--context", str(context), "--batch", "1,16,256", "--json"], capsys)
        assert code == 0, err
        per = {p["batch"]: p for p in json.loads(js)["plans"][0]["per_batch"]}
        for col, b in ((0, 1), (4, 16), (8, 256)):
            # a batch that does not fit has no speed-up to show (#31 item 13): the cell says so instead
            want = (f"{per[b]['speedup']:.2f}x K={per[b]['k']} {per[b]['verdict']}" if per[b]["fits"]
                    else "does not fit")
            assert rows[context][col].strip() == want
