"""deploy/hub/cgroup_spawner.py: each student's limits as cgroup files, v1 and v2.

Everywhere: what is written where, in which order, for both layouts, against folder trees laid
out as the kernel lays them out (a v2 tree's controller files, v1's per-controller hierarchies),
the OOM counter read from each layout's own file, bad limits refused, a busy group reported.
As root on a machine with cgroup v1 (these containers): a real group made, a process put in it
with the spawner's own preexec step, killed by the kernel past its memory limit (and counted),
held to its CPU quota, the group removed. tests/test_hub.py's live test runs the spawner inside
the hub.
"""
import os
import subprocess
import sys
import time

import pytest

from _support import load_file

cs = load_file("deploy", "hub", "cgroup_spawner.py")
GIB = 2**30


def _v1_tree(root):
    for controller, files in (("memory", ["memory.limit_in_bytes", "memory.oom_control",
                                          "memory.memsw.limit_in_bytes"]),
                              ("cpu", ["cpu.cfs_quota_us", "cpu.cfs_period_us"])):
        (root / controller).mkdir(parents=True)
        for f in files:
            (root / controller / f).write_text("")
    return root


def _v2_tree(root):
    root.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "cgroup.subtree_control").write_text("")
    return root


def test_the_layout_is_told_apart_by_the_files_the_kernel_puts_at_the_root(tmp_path):
    assert cs.cgroup_version(_v2_tree(tmp_path / "v2")) == 2
    assert cs.cgroup_version(_v1_tree(tmp_path / "v1")) == 1
    (tmp_path / "none").mkdir()
    assert cs.cgroup_version(tmp_path / "none") is None
    half = tmp_path / "half"  # v1 with the memory controller but not cpu: not usable
    (half / "memory").mkdir(parents=True)
    (half / "memory" / "memory.limit_in_bytes").write_text("")
    assert cs.cgroup_version(half) is None


def test_v1_limits_lift_the_swap_ceiling_before_setting_memory_then_hold_it_there(tmp_path):
    got = cs.limit_writes(tmp_path, 1, "ada", 2 * GIB, 1.0)
    mem, cpu = tmp_path / "memory" / "lessonlib-hub" / "ada", tmp_path / "cpu" / "lessonlib-hub" / "ada"
    assert got == [(mem / "memory.memsw.limit_in_bytes", "-1"),
                   (mem / "memory.limit_in_bytes", str(2 * GIB)),
                   (mem / "memory.memsw.limit_in_bytes", str(2 * GIB)),
                   (cpu / "cpu.cfs_period_us", "100000"),
                   (cpu / "cpu.cfs_quota_us", "100000")]
    half = dict(cs.limit_writes(tmp_path, 1, "ada", None, 0.5))
    assert half[mem / "memory.limit_in_bytes"] == "-1"  # no memory limit
    assert half[cpu / "cpu.cfs_quota_us"] == "50000"
    assert dict(cs.limit_writes(tmp_path, 1, "ada", GIB, None))[cpu / "cpu.cfs_quota_us"] == "-1"
    # the kernel's smallest quota is 1 ms: a tiny limit is raised to it, not refused by the kernel
    assert dict(cs.limit_writes(tmp_path, 1, "ada", GIB, 0.001))[cpu / "cpu.cfs_quota_us"] == "1000"


def test_v2_limits_are_memory_max_no_swap_and_cpu_max(tmp_path):
    group = tmp_path / "lessonlib-hub" / "ada"
    assert cs.limit_writes(tmp_path, 2, "ada", 1536 * 2**20, 2.0) == [
        (group / "memory.max", str(1536 * 2**20)), (group / "memory.swap.max", "0"),
        (group / "cpu.max", "200000 100000")]
    assert cs.limit_writes(tmp_path, 2, "ada", None, None) == [
        (group / "memory.max", "max"), (group / "memory.swap.max", "max"),
        (group / "cpu.max", "max 100000")]


@pytest.mark.parametrize("mem, cpu, said", [(0, 1.0, "mem_limit"), (-5, 1.0, "mem_limit"),
                                            (1.5, 1.0, "mem_limit"), (GIB, 0.0, "cpu_limit"),
                                            (GIB, -1.0, "cpu_limit"),
                                            (GIB, float("nan"), "cpu_limit")])
def test_a_limit_that_is_not_positive_is_refused_by_name(tmp_path, mem, cpu, said):
    with pytest.raises(ValueError, match=said):
        cs.limit_writes(tmp_path, 1, "ada", mem, cpu)


def test_a_v2_group_gets_its_controllers_enabled_from_the_root_down(tmp_path):
    root = _v2_tree(tmp_path / "cg")
    dirs = cs.create_group(root, 2, "ada", GIB, 1.0)
    assert dirs == [root / "lessonlib-hub" / "ada"]
    assert (root / "cgroup.subtree_control").read_text() == "+memory +cpu"
    assert (root / "lessonlib-hub" / "cgroup.subtree_control").read_text() == "+memory +cpu"
    assert (dirs[0] / "memory.max").read_text() == str(GIB)
    assert (dirs[0] / "cpu.max").read_text() == "100000 100000"
    # memory.swap.max exists only with swap accounting: not created where the kernel has none
    assert not (dirs[0] / "memory.swap.max").exists()
    (dirs[0] / "memory.swap.max").write_text("max")
    cs.create_group(root, 2, "ada", GIB, 1.0)  # the next start: the same folder, limits again
    assert (dirs[0] / "memory.swap.max").read_text() == "0"


def test_a_v1_group_has_a_folder_per_controller_and_the_limits_written(tmp_path):
    root = _v1_tree(tmp_path / "cg")
    mem, cpu = cs.create_group(root, 1, "ada", GIB, 0.5)
    assert mem == root / "memory" / "lessonlib-hub" / "ada" and cpu.parent.parent.name == "cpu"
    assert (mem / "memory.limit_in_bytes").read_text() == str(GIB)
    assert not (mem / "memory.memsw.limit_in_bytes").exists()  # optional: skipped, not made
    assert (cpu / "cpu.cfs_quota_us").read_text() == "50000"


def test_a_limit_the_tree_refuses_names_the_file_and_the_way_out(tmp_path):
    root = _v2_tree(tmp_path / "cg")
    (root / "lessonlib-hub" / "ada").mkdir(parents=True)
    (root / "lessonlib-hub" / "ada" / "memory.max").mkdir()  # writing a folder fails
    with pytest.raises(OSError, match=r"memory\.max.*LESSONLIB_HUB_MEM_LIMIT=none"):
        cs.create_group(root, 2, "ada", GIB, 1.0)


def test_oom_kills_are_read_from_each_layouts_own_counter(tmp_path):
    v1 = tmp_path / "memory" / "lessonlib-hub" / "ada"
    v1.mkdir(parents=True)
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    assert cs.oom_kills(tmp_path, 1, "ada") == 3
    v2 = tmp_path / "lessonlib-hub" / "ada"
    v2.mkdir(parents=True)
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\n")
    assert cs.oom_kills(tmp_path, 2, "ada") == 2  # "oom 2" is not the kill count's line
    assert cs.oom_kills(tmp_path, 2, "grace") == 0  # no group (yet, or any more)
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\n")  # kernel < 4.13
    assert cs.oom_kills(tmp_path, 1, "ada") == 0


def test_removing_a_group_leaves_and_reports_only_a_busy_folder(tmp_path, monkeypatch):
    mem, cpu = cs.group_dirs(tmp_path, 1, "ada")
    mem.mkdir(parents=True)
    cpu.mkdir(parents=True)
    real_rmdir = type(mem).rmdir

    def rmdir(self):  # the cpu group still holds a process
        if self == cpu:
            raise OSError(16, "Device or resource busy")
        real_rmdir(self)
    monkeypatch.setattr(type(mem), "rmdir", rmdir)
    assert cs.remove_group(tmp_path, 1, "ada", timeout_s=0.3) == [cpu]
    assert not mem.exists()
    monkeypatch.undo()
    assert cs.remove_group(tmp_path, 1, "ada") == [] and not cpu.exists()


# ------------------------------------------------------------------ the real kernel (root, v1)

REAL = "/sys/fs/cgroup"
real_v1 = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and os.geteuid() == 0 and cs.cgroup_version(REAL) == 1
         and os.access(f"{REAL}/memory", os.W_OK)),
    reason="needs root and a writable cgroup v1 tree (these containers have one)")


@real_v1
def test_the_kernel_kills_past_the_memory_limit_counts_it_and_holds_the_cpu_quota():
    name = f"lltest{os.getpid()}"
    dirs = cs.create_group(REAL, 1, name, 256 * 2**20, 0.5)
    try:
        def run(code):
            return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  timeout=60, preexec_fn=lambda: cs.join_groups(dirs))
        small = run("x = b'1' * (64 << 20); print('fits')")
        assert small.returncode == 0 and small.stdout == "fits\n"
        assert cs.oom_kills(REAL, 1, name) == 0
        big = run("x = b'1' * (600 << 20); print('fits')")
        assert big.returncode == -9 and big.stdout == ""  # SIGKILL from the OOM killer
        assert cs.oom_kills(REAL, 1, name) == 1
        spin = run("import time\nt, w = time.process_time(), time.monotonic()\n"
                   "while time.monotonic() - w < 2: pass\nprint(time.process_time() - t)")
        assert 0.8 < float(spin.stdout) < 1.2  # half a core's worth of 2 s
    finally:
        busy = cs.remove_group(REAL, 1, name)
    assert busy == [] and not any(d.exists() for d in dirs)
