"""The two install routes (pip via requirements.txt, conda via environment.yml) must agree."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = {"torch", "triton", "numpy", "matplotlib", "jupyterlab", "ipykernel", "ipywidgets",
            "ipympl", "tqdm", "nbval", "pytest", "pytest-xdist", "hypothesis"}


def _pins(lines):
    """{name: version}, or {name: "version ; marker"} for a line with an environment marker."""
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip().lstrip("- ").strip()
        spec, _, marker = line.partition(";")
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s]+)", spec.strip())
        if m:
            marker = " ".join(marker.split())
            pins[m.group(1).lower()] = m.group(2) + (f" ; {marker}" if marker else "")
    return pins


def requirements_pins():
    return _pins((ROOT / "requirements.txt").read_text().splitlines())


def environment_pins():
    text = (ROOT / "environment.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(text) if line.strip() == "- pip:")
    return _pins(text[start + 1:])


def test_requirements_and_environment_name_the_same_pins():
    assert requirements_pins() == environment_pins()


def test_every_requirement_is_pinned_exactly():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            assert "==" in line, f"requirements.txt: {line!r} is not pinned with =="


def test_required_packages_are_pinned_and_torch_and_triton_by_platform():
    pins = requirements_pins()
    assert REQUIRED <= set(pins), f"missing pins: {sorted(REQUIRED - set(pins))}"
    assert pins["torch"].startswith("2.13.0 ; ") and pins["triton"].startswith("3.7.1 ; ")
    assert [p for p, v in pins.items() if ";" in v] == ["torch", "triton"]  # all else everywhere


def test_pythons_agree():
    """pyproject, environment.yml and the Makefile name the same Pythons, 3.11 to 3.13."""
    assert 'requires-python = ">=3.11,<3.14"' in (ROOT / "pyproject.toml").read_text()
    assert "  - python>=3.11,<3.14" in (ROOT / "environment.yml").read_text().splitlines()
    assert "3.11|3.12|3.13)" in (ROOT / "Makefile").read_text()


def test_parser_sees_what_it_should():
    assert _pins(["torch==2.13.0  # c", "  - numpy==1.0", "python=3.11", "-e .",
                  'triton==3.7.1 ;  sys_platform == "linux"']) == {
        "torch": "2.13.0", "numpy": "1.0", "triton": '3.7.1 ; sys_platform == "linux"'}
