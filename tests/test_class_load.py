"""benchmarks/class_load.py's pure parts, without root and without the hub: reading /proc,
percentiles, the kernel websocket's binary frames, a slider's arrow-key step, ipympl's page
stand-in, the table and the sizing, and --dry-run. The load itself (root, the hub, minutes) is
run by hand: benchmarks/RESULTS.md says how."""
import json
import math
import os
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest
from _support import load_file

bench = load_file("benchmarks", "class_load.py")
ROOT = bench.ROOT

STATUS = """Name:\tpython
Umask:\t0022
State:\tS (sleeping)
Uid:\t1001\t1001\t1001\t1001
Gid:\t1001\t1001\t1001\t1001
VmPeak:\t 2000000 kB
VmHWM:\t  709632 kB
VmRSS:\t  519168 kB
Threads:\t9
"""


def test_parse_status_reads_the_uid_and_resident_memory_in_bytes():
    assert bench.parse_status(STATUS) == {"uid": 1001, "rss": 519168 * 1024,
                                          "hwm": 709632 * 1024}
    # a kernel thread has no Vm lines: no rss, so the sampler skips it
    assert bench.parse_status("Name:\tkworker\nUid:\t0\t0\t0\t0\n") == {"uid": 0}


def test_parse_kb_fields_reads_meminfo_and_smaps_rollup():
    meminfo = "MemTotal:       24576000 kB\nMemAvailable:   20000000 kB\nHugePages_Total:       0\n"
    assert bench.parse_kb_fields(meminfo) == {"MemTotal": 24576000 * 1024,
                                              "MemAvailable": 20000000 * 1024}
    rollup = ("55d0a0000000-7ffd00000000 ---p 00000000 00:00 0    [rollup]\n"
              "Rss:              519168 kB\nPss:              480000 kB\n")
    assert bench.parse_kb_fields(rollup)["Pss"] == 480000 * 1024


def test_classify_tells_kernels_by_id_and_servers():
    kid = str(uuid.uuid4())
    kernel = (b"/srv/lessonlib/.venv-hub/bin/python\x00-m\x00ipykernel_launcher\x00-f\x00"
              b"/home/ada/.local/share/jupyter/runtime/kernel-" + kid.encode() + b".json\x00")
    assert bench.classify(kernel) == ("kernel", kid)
    server = b"/srv/lessonlib/.venv-hub/bin/python\x00/srv/lessonlib/.venv-hub/bin/jupyterhub-singleuser\x00"
    assert bench.classify(server) == ("server", None)
    assert bench.classify(b"bash\x00") == (None, None)


@pytest.mark.parametrize("values", [[5.0], [3, 1, 2], list(range(1, 11)),
                                    [0.3, 12.0, 7.5, 7.5, 100.0, 1e-3, 42.0]])
@pytest.mark.parametrize("q", [0, 50, 90, 100])
def test_percentile_is_numpys_linear_interpolation(values, q):
    assert math.isclose(bench.percentile(values, q), float(np.percentile(values, q)))


def test_summary_skips_missing_values_and_says_none_for_none():
    assert bench.summary([1.0, None, 3.0]) == {"n": 2, "median": 2.0, "p90": 2.8, "max": 3.0}
    assert bench.summary([]) == {"n": 0, "median": None, "p90": None, "max": None}


def test_deserialize_reads_jupyter_servers_text_and_binary_frames():
    from jupyter_server.services.kernels.connection.base import serialize_binary_message
    msg = {"header": {"msg_id": "a", "msg_type": "comm_msg", "date": ""},
           "parent_header": {"msg_id": "p"}, "metadata": {}, "channel": "iopub",
           "content": {"comm_id": "c", "data": {"method": "custom",
                                                "content": {"data": '{"type": "binary"}'}}}}
    png = b"\x89PNG" + bytes(range(256)) * 10
    got = bench.deserialize_ws(serialize_binary_message({**msg, "buffers": [png, b"x"]}))
    assert got["content"] == msg["content"] and got["buffers"] == [png, b"x"]
    assert bench.is_frame(got)
    text = bench.deserialize_ws(json.dumps(msg))
    assert text["buffers"] == [] and not bench.is_frame(text)


def _int(value, lo=0, hi=10, step=2, **kw):
    return {"_model_name": "IntSliderModel", "value": value, "min": lo, "max": hi,
            "step": step, **kw}


def test_an_arrow_key_steps_a_slider_and_turns_back_at_the_end():
    assert bench.step_slider(_int(4), 1) == ("value", 6, 1)
    assert bench.step_slider(_int(4), -1) == ("value", 2, -1)
    assert bench.step_slider(_int(10), 1) == ("value", 8, -1)  # the end: back
    assert bench.step_slider(_int(0), -1) == ("value", 2, 1)
    assert bench.step_slider(_int(4, disabled=True), 1) is None
    assert bench.step_slider(_int(3, lo=3, hi=3), 1) is None
    real = {"_model_name": "FloatSliderModel", "value": 0.3, "min": 0.0, "max": 1.0,
            "step": 0.1}
    assert bench.step_slider(real, 1) == ("value", 0.4, 1)
    log = {"_model_name": "FloatLogSliderModel", "value": 100.0, "min": 0, "max": 3,
           "step": 0.5, "base": 10}
    key, value, d = bench.step_slider(log, 1)
    assert key == "value" and d == 1 and math.isclose(value, 10 ** 2.5)
    key, value, d = bench.step_slider({**log, "value": 1000.0}, 1)
    assert d == -1 and math.isclose(value, 10 ** 2.5)


def test_a_selection_slider_steps_its_index():
    sel = {"_model_name": "SelectionSliderModel", "index": 2,
           "_options_labels": ["256", "512", "1,024", "2,048"]}
    assert bench.step_slider(sel, 1) == ("index", 3, 1)
    assert bench.step_slider({**sel, "index": 3}, 1) == ("index", 2, -1)
    assert bench.step_slider({**sel, "_options_labels": ["256"], "index": 0}, 1) is None


def test_press_times_keep_the_pace_and_the_seed():
    import random
    times = bench.press_times(random.Random(3), 60, (0.5, 2.0))
    gaps = np.diff([0.0, *times])
    assert 0 < len(times) and times[-1] < 60 and all(0.5 <= g <= 2.0 for g in gaps)
    assert times == bench.press_times(random.Random(3), 60, (0.5, 2.0))
    assert 60 / 2.0 - 1 <= len(times) <= 60 / 0.5


def _kernel_msg(msg_type, content):
    return {"msg_type": msg_type, "content": content, "buffers": []}


def test_the_page_stand_in_answers_the_canvas_as_ipympls_front_end_does():
    opened = _kernel_msg("comm_open", {"comm_id": "c", "data": {
        "state": {"_model_name": "MPLCanvasModel"}}})
    assert [m["type"] for m in bench.front_end_replies(opened)] == [
        "refresh", "send_image_mode", "initialized"]
    slider = _kernel_msg("comm_open", {"comm_id": "s", "data": {
        "state": {"_model_name": "IntSliderModel"}}})
    assert bench.front_end_replies(slider) == []

    def custom(kind):
        return _kernel_msg("comm_msg", {"comm_id": "c", "data": {
            "method": "custom", "content": {"data": json.dumps({"type": kind})}}})
    assert bench.front_end_replies(custom("draw")) == [{"type": "draw"}]
    assert bench.front_end_replies(custom("resize")) == [{"type": "refresh"}]
    assert bench.front_end_replies(custom("binary")) == []
    update = _kernel_msg("comm_msg", {"comm_id": "s", "data": {"method": "update",
                                                               "state": {"value": 3}}})
    assert bench.front_end_replies(update) == []


def test_machine_names_cores_memory_and_cpu():
    m = bench.machine("processor\t: 0\nmodel name\t: AMD EPYC 9R14\n", "MemTotal: 25165824 kB\n", 2)
    assert m["cores"] == 2 and m["cpu_model"] == "AMD EPYC 9R14" and m["memory_gib"] == 24.0


def _run(notebook, n, *, p90=120.0, broke=(), gib=0.7, hwm=700.0, server=140.0, run_all=20.0):
    s = bench.summary
    return {"notebook": notebook, "students": n, "run_all_s": s([run_all, run_all * 2]),
            "kernel_hwm_mib": s([hwm]), "kernel_rss_mib": s([hwm * 0.7]),
            "kernel_pss_mib": s([hwm * 0.6]), "server_rss_mib": s([server]),
            "gib_per_student": gib, "hub_rss_mib": 130.0, "proxy_rss_mib": 60.0,
            "latency_ms": {"n": 40, "median": p90 / 2, "p90": p90, "max": p90 * 2},
            "coalesced": 3, "broke": list(broke)}


def test_the_table_has_a_row_per_run_in_its_columns():
    out = bench.table([_run("10_real_model_long_context", 5),
                       _run("06_sliding_windows_and_sinks", 5, broke=["2 key presses got no answer"])])
    lines = out.splitlines()
    assert len(lines) == 4 and all(line.count("|") == len(bench.COLUMNS) + 1 for line in lines)
    assert "| 10_real_model_long_context | 5 | 30.0 / 40.0 | 700 / 700 |" in lines[2]
    assert "40 (3 coalesced)" in lines[2] and lines[2].endswith("| - |")
    assert lines[3].endswith("| 2 key presses got no answer |")
    missing = {**_run("11_paged_cache", 1), "gib_per_student": None,
               "latency_ms": bench.summary([])}
    assert "| - | " in bench.table([missing])
    # --overlap's presses while others still run, and real browsers' presses, when there are
    overlap = {**_run("11_paged_cache", 2), "latency_during_run_all_ms": bench.summary([300, 500]),
               "browser_ms": bench.summary([80.0, 120.0]), "browsers": 1}
    row = bench.table([overlap]).splitlines()[2]
    assert "| 60 / 120 (400 / 480) | 100 / 116 (1 browsers, 2 presses) |" in row


def test_sizing_takes_the_largest_class_served_within_the_target():
    runs = [_run("10", 1, p90=50), _run("10", 5, p90=150), _run("10", 10, p90=400, gib=0.65),
            _run("06", 1), _run("06", 5, broke=["memory guard"]), _run("11", 1), _run("11", 5)]
    got = bench.sizing(runs, cores=2)
    assert got["10"]["served_students"] == 5 and got["10"]["students_per_core"] == 2.5
    assert got["10"]["largest_tested"] == 10 and not got["10"]["served_is_lower_bound"]
    assert got["10"]["gib_per_student_measured"] == 0.65  # at the largest N run
    assert math.isclose(got["10"]["gib_per_student_peak"], (700 + 140) / 1024)
    assert got["10"]["p90_ms_at_served"] == 150
    assert got["06"]["served_students"] == 1  # N = 5 broke
    assert got["11"]["served_students"] == 5 and got["11"]["served_is_lower_bound"]


def test_every_course_notebook_has_code_cells_to_run():
    for spec in ("06", "10", "11"):
        path = bench.notebook_path(spec)
        cells = bench.code_cells(path)
        assert path.parent == ROOT / "notebooks" and len(cells) > 5
        assert cells[0].startswith("%matplotlib widget")  # the sliders are live widgets


def test_the_sampler_finds_a_kernel_of_the_users_by_its_id():
    """/proc read for real: a stand-in process whose command line is a kernel's."""
    kid = str(uuid.uuid4())
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                             "ipykernel_launcher", "-f", f"/tmp/kernel-{kid}.json"])
    try:
        sampler = bench.Sampler([os.getuid()], hub_pid=os.getpid(), proxy_pid=None)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            sample = sampler.one(with_pss=True)
            if proc.pid in sample["procs"]:
                break
            time.sleep(0.1)
        got = sample["procs"][proc.pid]
        assert got["kind"] == "kernel" and got["kernel"] == kid and got["uid"] == os.getuid()
        assert 0 < got["rss"] <= got["hwm"] and got["pss"] > 0
        assert sample["hub"] > 0 and sample["proxy"] is None and sample["available"] > 0
    finally:
        proc.kill()
        proc.wait()


def test_dry_run_needs_no_root_and_no_hub():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "class_load.py"),
                          "--dry-run", "--students", "1,5", "--notebooks", "06,10"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "sizes [1, 5], notebooks ['06_sliding_windows_and_sinks', " \
           "'10_real_model_long_context']" in out.stdout
    assert "# machine: {'cores': " in out.stdout and "code cells" in out.stdout


def test_cells_memory_runs_a_notebook_in_one_kernel_and_reads_its_memory(tmp_path):
    nb = tmp_path / "99_memory.ipynb"
    nb.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "source": ["# not run"], "metadata": {}},
        {"cell_type": "code", "source": ["x = bytearray(64 * 2**20)\n", "x[::4096] = b'1' * len(x[::4096])"],
         "metadata": {}, "outputs": [], "execution_count": None},
        {"cell_type": "code", "source": ["del x"], "metadata": {}, "outputs": [],
         "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    rows = bench.cells_memory(nb, timeout_s=60)
    assert [r[:2] for r in rows] == [(None, "started"), (0, "ok"), (1, "ok")]
    (_, _, _, rss0, _, _), (_, _, _, rss1, hwm1, line), (_, _, _, rss2, hwm2, _) = rows
    assert rss1 - rss0 >= 60 and line.startswith("x = bytearray")  # 64 MiB touched
    # freed, and the peak stays (VmHWM follows VmRSS within the kernel's counter batching)
    assert rss2 < rss1 - 30 and hwm2 > rss1 - 2 and hwm1 > rss1 - 2
