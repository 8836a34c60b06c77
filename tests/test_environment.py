"""The two install routes (pip via requirements.txt, conda via environment.yml) must agree."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = {"torch", "triton", "numpy", "matplotlib", "jupyterlab", "ipykernel", "ipywidgets",
            "ipympl", "tqdm", "nbval", "pytest", "pytest-xdist", "hypothesis"}


def _pins(lines):
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip().lstrip("- ").strip()
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s]+)", line)
        if m:
            pins[m.group(1).lower()] = m.group(2)
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


def test_required_packages_are_pinned_and_torch_is_the_cpu_pin():
    pins = requirements_pins()
    assert REQUIRED <= set(pins), f"missing pins: {sorted(REQUIRED - set(pins))}"
    assert pins["torch"] == "2.13.0"


def test_parser_sees_what_it_should():
    assert _pins(["torch==2.13.0  # c", "  - numpy==1.0", "python=3.11", "-e ."]) == {
        "torch": "2.13.0", "numpy": "1.0"}
