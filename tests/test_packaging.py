"""Packaging: the catalogs ship inside the package, the version has one home, LICENSE is the real one.

Why: a non-editable install used to carry no catalogs (package data was py.typed and the probe
prompts only), so `planner recommend qwen2.5-7b-instruct` outside the checkout could not find the
model and `planner catalog` printed an empty table with exit 0. The fast tests check the
configuration and the installed package; the slow ones (`python -m pytest -m slow`) build a
wheel, and an sdist then a wheel from it, offline (--no-build-isolation), and read the archives.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from planner.cli import app, main
from planner.core.constants import catalog_dir
from planner.core.version import __version__

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - tomli is a dependency below 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CATALOG_FILES = sorted(p.relative_to(ROOT / "catalogs").as_posix() for p in (ROOT / "catalogs").rglob("*.json"))
# What every build must carry, as archive paths (wheel) or paths below the sdist's top folder.
MUST_LIST = ("planner/catalogs/models/*.json", "planner/catalogs/machines/*.json", "planner/catalogs/pairs/*.json",
             "planner/catalogs/heterogeneous_vocab.json", "planner/catalogs/heads/*.json",
             "planner/catalogs/methods/*.json")


def _run(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(args)
    out, err = capsys.readouterr()
    return e.value.code, out, err


# --- the catalogs are package data, found through importlib.resources ----------------------------

def test_package_data_patterns_cover_every_catalog_file():
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["planner"]
    package = ROOT / "planner"
    covered = {p.relative_to(package / "catalogs").as_posix()
               for pattern in patterns if pattern.startswith("catalogs/") for p in package.glob(pattern)}
    assert CATALOG_FILES and covered == set(CATALOG_FILES)


def test_importlib_resources_finds_the_catalogs_in_the_package():
    bundled = resources.files("planner") / "catalogs"
    for sub in ("models", "machines", "pairs"):
        names = [f.name for f in (bundled / sub).iterdir() if f.name.endswith(".json")]
        assert names, sub
    assert "qwen.json" in [f.name for f in (bundled / "models").iterdir()]
    assert json.loads((bundled / "machines" / "h100-sxm.json").read_text())["name"] == "h100-sxm"
    assert (bundled / "heterogeneous_vocab.json").is_file()


def test_catalog_dir_is_the_package_data_unless_overridden(monkeypatch, tmp_path):
    monkeypatch.delenv("SPEC_PLANNER_CATALOG", raising=False)
    assert catalog_dir() == Path(str(resources.files("planner") / "catalogs")).resolve()
    monkeypatch.setenv("SPEC_PLANNER_CATALOG", str(tmp_path))
    assert catalog_dir() == tmp_path


def test_checkout_keeps_top_level_catalogs_as_the_same_files():
    link = ROOT / "planner" / "catalogs"
    if not link.is_symlink():
        pytest.skip("not a source checkout with planner/catalogs -> ../catalogs")
    assert Path(link.readlink()).as_posix() == "../catalogs"  # relative: survives moving the checkout
    assert link.resolve() == (ROOT / "catalogs").resolve()


# --- a missing or empty catalog is a one-line error, exit 2 --------------------------------------

@pytest.mark.parametrize("layout", ["missing", "empty_dirs", "no_models_listed"])
@pytest.mark.parametrize("argv, what", [
    (["catalog"], "model catalog"),
    (["catalog", "--json"], "model catalog"),
    (["machines", "list"], "machine catalog"),
    (["machines", "show", "h100-sxm"], "machine catalog"),
    (["recommend", "qwen2.5-7b-instruct", "--machine", "h100-sxm"], "model catalog"),
    (["memory", "qwen2.5-7b-instruct"], "model catalog"),
])
def test_missing_or_empty_catalog_is_exit_2(tmp_path, monkeypatch, capsys, layout, argv, what):
    cat = tmp_path / "catalogs"
    if layout != "missing":
        (cat / "models").mkdir(parents=True)
        (cat / "machines").mkdir()
    if layout == "no_models_listed":
        (cat / "models" / "empty.json").write_text('{"models": []}')
        shutil.copy(ROOT / "catalogs" / "machines" / "h100-sxm.json", cat / "machines")
        if what == "machine catalog":
            (cat / "machines" / "h100-sxm.json").unlink()
    monkeypatch.setenv("SPEC_PLANNER_CATALOG", str(cat))
    code, out, err = _run(argv, capsys)
    assert code == 2, (out, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: Cannot read the {what} from '{cat}")
    assert "SPEC_PLANNER_CATALOG" in err


# --- version, console scripts, license -----------------------------------------------------------

def test_version_has_one_home():
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "planner.core.version.__version__"}
    assert __version__.count(".") >= 2


@pytest.mark.parametrize("argv", [["--version"], ["--version", "catalog"]])
def test_version_flag(capsys, argv):
    assert _run(argv, capsys) == (0, f"spec-planner {__version__}\n", "")


def test_version_flag_through_the_root_group(capsys):
    import typer.main

    assert typer.main.get_group(app)(args=["--version"], standalone_mode=False) == 0
    assert capsys.readouterr().out == f"spec-planner {__version__}\n"


def test_root_help_lists_version(capsys):
    code, out, _ = _run(["--help"], capsys)
    assert code == 0 and "--version" in out


def test_python_m_planner_version():
    r = subprocess.run([sys.executable, "-m", "planner", "--version"], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"spec-planner {__version__}\n", "")


def test_console_scripts():
    assert PYPROJECT["project"]["scripts"] == {"planner": "planner.cli:main", "spec-planner": "planner.cli:main"}


def test_license_is_the_apache_2_text():
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    for part in ("TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "9. Accepting Warranty or "
                 "Additional Liability.", "END OF TERMS AND CONDITIONS", "APPENDIX: How to apply the Apache License"):
        assert part in text
    assert len(text.splitlines()) == 201


# --- slow: build the archives (offline: --no-build-isolation uses this venv's setuptools) --------

def _source_copy(tmp_path: Path) -> Path:
    """What a build reads (pyproject, README, LICENSE, planner/ with its catalogs symlink, catalogs/)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "planner", src / "planner", symlinks=True, ignore=ignore)
    shutil.copytree(ROOT / "catalogs", src / "catalogs", ignore=ignore)
    return src


def _pip_wheel(source: Path, out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(out), str(source)], check=True, timeout=300, capture_output=True)
    (wheel,) = out.glob("spec_planner-*.whl")
    return wheel


def _check_listing(names: list[str]) -> None:
    for pattern in MUST_LIST:
        assert fnmatch.filter(names, pattern), pattern
    assert {n.removeprefix("planner/catalogs/") for n in names if n.startswith("planner/catalogs/")
            and n.endswith(".json")} == set(CATALOG_FILES)


@pytest.mark.slow
def test_wheel_lists_the_catalogs(tmp_path):
    wheel = _pip_wheel(_source_copy(tmp_path), tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    _check_listing(names)
    assert fnmatch.filter(names, "spec_planner-*.dist-info/licenses/LICENSE")
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "planner = planner.cli:main" in text and "spec-planner = planner.cli:main" in text


@pytest.mark.slow
def test_sdist_then_wheel_lists_the_catalogs(tmp_path):
    src = _source_copy(tmp_path)
    build = ("import sys\nfrom setuptools import build_meta\n"
             "print(build_meta.build_sdist(sys.argv[1]))\n")
    r = subprocess.run([sys.executable, "-c", build, str(tmp_path / "sdist")], cwd=src, check=True,
                       timeout=300, capture_output=True, text=True)
    sdist = tmp_path / "sdist" / r.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        members = tar.getmembers()
        assert not [m.name for m in members if m.issym()]  # real files, whatever the checkout had
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # 3.10.12+/3.11.4+
        tar.extractall(tmp_path / "unpacked", **safe)
    top = next((tmp_path / "unpacked").iterdir())
    names = [p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file()]
    _check_listing(names)
    wheel = _pip_wheel(top, tmp_path / "dist")
    _check_listing(zipfile.ZipFile(wheel).namelist())
