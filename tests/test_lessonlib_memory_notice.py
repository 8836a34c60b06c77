"""deploy/hub/lessonlib_memory_notice.py: the note a student reads in their notebook after their
kernel went past their memory limit on the hub.

The counter file found from /proc/PID/cgroup for both cgroup layouts (and nothing outside the
hub's groups), the count told once and then noted in the student's runtime folder, a new group
(a restarted server) starting the count again, the words, and the extension's one-time hook on
IPython's events. tests/test_hub.py's live test reads the note in a kernel restarted on the hub.
"""
import pytest

from _support import load_file

mn = load_file("deploy", "hub", "lessonlib_memory_notice.py")
V1 = "12:pids:/\n4:memory:/lessonlib-hub/ada\n1:cpu:/lessonlib-hub/ada\n0::/\n"
V2 = "0::/lessonlib-hub/ada\n"


def test_the_counter_is_found_for_each_layout_and_only_in_a_hub_group(tmp_path):
    assert mn.memory_group(V1, tmp_path) == (
        tmp_path / "memory" / "lessonlib-hub" / "ada" / "memory.oom_control")
    assert mn.memory_group(V2, tmp_path) == tmp_path / "lessonlib-hub" / "ada" / "memory.events"
    assert mn.memory_group("4:memory:/user.slice\n0::/user.slice\n", tmp_path) is None
    assert mn.memory_group("4:memory:/lessonlib-hubby/ada\n", tmp_path) is None


def _group(tmp_path, kills, layout=V1):
    counter = mn.memory_group(layout, tmp_path)
    counter.parent.mkdir(parents=True, exist_ok=True)
    counter.write_text("oom_kill_disable 0\nunder_oom 0\n" + f"oom_kill {kills}\n"
                       if layout == V1 else f"low 0\nhigh 0\nmax 9\noom 3\noom_kill {kills}\n")
    return counter


@pytest.mark.parametrize("layout", [V1, V2])
def test_a_kill_is_told_once_then_the_next_one_again(tmp_path, layout):
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    _group(tmp_path, 0, layout)
    assert mn.pending(layout, runtime, tmp_path) is None  # no kill: nothing to say
    _group(tmp_path, 1, layout)
    assert mn.pending(layout, runtime, tmp_path) == 1
    assert mn.pending(layout, runtime, tmp_path) is None  # the next kernel: told already
    _group(tmp_path, 3, layout)
    assert mn.pending(layout, runtime, tmp_path) == 3
    _group(tmp_path, 1, layout)  # a new group (the server restarted) counts from 0 again
    assert mn.pending(layout, runtime, tmp_path) == 1


def test_nothing_is_said_outside_the_hub_or_without_a_runtime_folder(tmp_path):
    _group(tmp_path, 2)
    assert mn.pending(V1, None, tmp_path) is None
    assert mn.pending("4:memory:/\n", tmp_path, tmp_path) is None
    assert mn.pending(V1, tmp_path / "runtime", tmp_path / "elsewhere") is None  # no counter


def test_the_words_name_the_limit_and_what_to_do():
    text = mn.notice(1, str(2 * 2**30))
    assert "went past your memory limit" in text and "(2.0 GiB for your server" in text
    assert "stopped once" in text and "run the notebook's cells again from the top" in text
    assert "stopped 3 times" in mn.notice(3, "")
    assert "(your limit for your server" in mn.notice(1, "")  # MEM_LIMIT not set


class _Events:
    def __init__(self):
        self.hooks = []

    def register(self, event, f):
        assert event == "pre_run_cell"
        self.hooks.append(f)

    def unregister(self, event, f):
        self.hooks.remove(f)


def test_the_extension_writes_the_note_before_the_first_cell_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mn, "pending", lambda text, runtime: 2)
    monkeypatch.setenv("MEM_LIMIT", str(2**30))
    ip = type("IP", (), {"events": _Events()})()
    mn.load_ipython_extension(ip)
    (hook,) = ip.events.hooks
    hook(None)
    assert ip.events.hooks == []
    err = capsys.readouterr().err
    assert err.startswith("[hub] Your last kernel was stopped") and "1.0 GiB" in err
    monkeypatch.setattr(mn, "pending", lambda text, runtime: None)
    mn.load_ipython_extension(ip)
    assert ip.events.hooks == []
