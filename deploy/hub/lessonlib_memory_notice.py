"""Tells a student, in their notebook, that their last kernel was stopped for going past their
memory limit on the course's hub (deploy/hub/README.md, "Memory and CPU limits").

JupyterLab's own dialog when a kernel dies says only that it "appears to have died" and will
restart. On the hub the usual cause is the student's memory limit: the Linux kernel's OOM killer
ended the kernel inside the student's control group (deploy/hub/cgroup_spawner.py), which counts
every such kill. This IPython extension (make hub-env installs it into .venv-hub and loads it in
every kernel there) reads that count when a kernel starts; if it grew since the student last saw
this notice, the first cell the student runs prints, once, what happened and what to do.

Everything is read from files the student can read: /proc/self/cgroup (which group this kernel is
in), the group's OOM counter (cgroup v1 memory.oom_control or v2 memory.events), MEM_LIMIT (the
limit, which jupyterhub passes to each server) and a note in the student's private runtime folder
(JUPYTER_RUNTIME_DIR) of the count already told. Outside a hub's group it does nothing.
"""
import os
import sys
from pathlib import Path

CGROUPS = Path("/sys/fs/cgroup")
SEEN = "lessonlib-oom-seen"  # in JUPYTER_RUNTIME_DIR: the OOM count the student was told of


def memory_group(proc_cgroup_text, root=CGROUPS):
    """The OOM counter file of the memory group a process is in, from /proc/PID/cgroup's text:
    v1's memory.oom_control, or v2's memory.events; None outside a lessonlib-hub group."""
    for line in proc_cgroup_text.splitlines():
        _, controllers, path = line.split(":", 2)
        if "/lessonlib-hub/" not in path + "/":
            continue
        if "memory" in controllers.split(","):
            return Path(root) / "memory" / path.lstrip("/") / "memory.oom_control"
        if controllers == "":
            return Path(root) / path.lstrip("/") / "memory.events"
    return None


def oom_count(counter_text):
    for line in counter_text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


def gib(limit_bytes):
    return f"{int(limit_bytes) / 2**30:.1f} GiB" if str(limit_bytes).isdigit() else "your limit"


def notice(kills, limit_bytes):
    """What the student reads."""
    times = "once" if kills == 1 else f"{kills} times"
    return (f"[hub] Your last kernel was stopped: it went past your memory limit on this hub "
            f"({gib(limit_bytes)} for your server and all your kernels together; stopped "
            f"{times} since your server started). This kernel is a fresh one: everything the "
            "old one held is gone, so run the notebook's cells again from the top. If it "
            "happens again, shut down the kernels of notebooks you are not using (Kernel > Shut "
            "Down All Kernels..., or the Running panel) or ask your instructor.\n")


def pending(proc_cgroup_text, runtime_dir, root=CGROUPS):
    """The OOM count to tell the student of, or None: the group's count if it grew past the one
    noted in runtime_dir (the note then updated)."""
    counter = memory_group(proc_cgroup_text, root)
    if counter is None or not runtime_dir:
        return None
    try:
        kills = oom_count(counter.read_text())
    except OSError:
        return None
    note = Path(runtime_dir) / SEEN
    try:
        seen = int(note.read_text().strip() or 0)
    except (OSError, ValueError):
        seen = 0
    if kills < seen:  # a new group (the server restarted): its count starts again
        seen = 0
    if kills <= seen:
        return None
    try:
        note.write_text(str(kills))
    except OSError:
        pass
    return kills


def load_ipython_extension(ip):
    try:
        kills = pending(Path("/proc/self/cgroup").read_text(),
                        os.environ.get("JUPYTER_RUNTIME_DIR"))
    except OSError:
        return
    if not kills:
        return
    message = notice(kills, os.environ.get("MEM_LIMIT", ""))

    def tell(*_):
        ip.events.unregister("pre_run_cell", tell)
        sys.stderr.write(message)
        sys.stderr.flush()
    ip.events.register("pre_run_cell", tell)
