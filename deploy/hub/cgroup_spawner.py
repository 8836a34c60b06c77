"""CgroupSpawner: jupyterhub's LocalProcessSpawner with the memory and CPU limits enforced.

LocalProcessSpawner starts each student's server as the student, and only passes
``c.Spawner.mem_limit`` and ``c.Spawner.cpu_limit`` to it as the variables MEM_LIMIT and
CPU_LIMIT: nothing stops one student's kernel from taking the whole machine. CgroupSpawner starts
the server inside a control group of its own, ``lessonlib-hub/<student>``, before it drops root,
so the server and every kernel it starts share the student's limits, and the Linux kernel
enforces them:

- memory: past ``mem_limit`` (server and kernels together) the kernel's OOM killer ends a process
  of that student's group (the largest: the kernel that allocated), not anyone else's. Swap is
  not a way around it. jupyter_server sees its kernel die and restarts it; JupyterLab tells the
  student ("Kernel Restarting: the kernel ... appears to have died. It will restart
  automatically."), and the hub's log says the student went past the limit.
- CPU: ``cpu_limit`` cores' worth of time (CFS quota over a 100 ms period), whatever the student
  runs.

Both cgroup layouts are handled: v1 (a hierarchy per controller under /sys/fs/cgroup/memory and
/sys/fs/cgroup/cpu: containers and older distributions; enforcement is tested there) and v2 (one
unified tree, with the memory and cpu controllers enabled down to the student's group; its files
are tested, enforcement is not, having no such machine). A host run by systemd can use
systemd's own SystemdSpawner instead (jupyterhub_config.py). Needs root, as the hub does.

jupyterhub_config.py puts this folder on the hub's sys.path and names the class; nothing here runs
outside the hub's environment, except the pure functions the tests import (no jupyterhub needed
for them).
"""
import errno
import os
import time
from pathlib import Path

PERIOD_US = 100_000  # CFS period: cpu_limit x this many microseconds of CPU per period
PARENT = "lessonlib-hub"  # every student's group sits under this one


def cgroup_version(root):
    """2 for a unified tree at root, 1 for v1's per-controller hierarchies (memory and cpu both
    mounted), None when neither can be used."""
    root = Path(root)
    if (root / "cgroup.controllers").exists():
        return 2
    if (root / "memory" / "memory.limit_in_bytes").exists() and \
            (root / "cpu" / "cpu.cfs_quota_us").exists():
        return 1
    return None


def group_dirs(root, version, name):
    """The folders of one student's group: one per controller (v1) or one (v2)."""
    root = Path(root)
    if version == 1:
        return [root / "memory" / PARENT / name, root / "cpu" / PARENT / name]
    return [root / PARENT / name]


def limit_writes(root, version, name, mem_bytes, cpu):
    """[(file, value)] in the order to write them, for a group with at most mem_bytes of memory
    (None: no limit) and cpu cores' worth of CPU time (None: no limit). Written into existing
    files only where noted, as the kernel lacks some (swap accounting may be off)."""
    if mem_bytes is not None and (not isinstance(mem_bytes, int) or mem_bytes <= 0):
        raise ValueError(f"mem_limit must be a positive number of bytes, not {mem_bytes!r}")
    if cpu is not None and not cpu > 0:
        raise ValueError(f"cpu_limit must be a positive number of cores, not {cpu!r}")
    quota = -1 if cpu is None else max(1000, round(cpu * PERIOD_US))  # the kernel's floor: 1 ms
    dirs = group_dirs(root, version, name)
    if version == 1:
        mem, cpu_dir = dirs
        memory = "-1" if mem_bytes is None else str(mem_bytes)
        # memory + swap may never be below memory: lift it, set memory, then hold it there
        return [(mem / "memory.memsw.limit_in_bytes", "-1"),
                (mem / "memory.limit_in_bytes", memory),
                (mem / "memory.memsw.limit_in_bytes", memory),
                (cpu_dir / "cpu.cfs_period_us", str(PERIOD_US)),
                (cpu_dir / "cpu.cfs_quota_us", str(quota))]
    (group,) = dirs
    return [(group / "memory.max", "max" if mem_bytes is None else str(mem_bytes)),
            (group / "memory.swap.max", "max" if mem_bytes is None else "0"),
            (group / "cpu.max", f"{'max' if cpu is None else quota} {PERIOD_US}")]


OPTIONAL = {"memory.memsw.limit_in_bytes", "memory.swap.max"}  # absent without swap accounting


def create_group(root, version, name, mem_bytes, cpu):
    """Make the student's group (and the parent, with v2's controllers enabled for it) and write
    its limits: the folders made, for the process to join."""
    root = Path(root)
    if version == 2:  # a controller reaches a group only if every parent enables it for children
        parent = root / PARENT
        parent.mkdir(exist_ok=True)
        for folder in (root, parent):
            _write(folder / "cgroup.subtree_control", "+memory +cpu")
    dirs = group_dirs(root, version, name)
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    for path, value in limit_writes(root, version, name, mem_bytes, cpu):
        if path.name in OPTIONAL and not path.exists():
            continue
        _write(path, value)
    return dirs


def _write(path, value):
    try:
        Path(path).write_text(value)
    except OSError as e:
        raise OSError(e.errno, f"cannot write {value!r} into {path} ({os.strerror(e.errno)}): "
                               "per-student limits need root and a writable cgroup tree; "
                               "LESSONLIB_HUB_MEM_LIMIT=none and LESSONLIB_HUB_CPU_LIMIT=none "
                               "run the hub without them") from None


def oom_kills(root, version, name):
    """How many processes the OOM killer ended in the student's group since it was made (0 if
    the group is gone, or the kernel does not count them)."""
    mem = group_dirs(root, version, name)[0]
    path = mem / ("memory.oom_control" if version == 1 else "memory.events")
    try:
        text = path.read_text()
    except FileNotFoundError:
        return 0
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


def remove_group(root, version, name, timeout_s=10.0):
    """rmdir the student's group folders once their processes are gone; the folders still busy
    after timeout_s (a process left behind), so that the caller can say so."""
    left = [d for d in group_dirs(root, version, name) if d.exists()]
    deadline = time.monotonic() + timeout_s
    while left:
        busy = []
        for d in left:
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise
                busy.append(d)
        left = busy
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return left


def join_groups(dirs):
    """The preexec step: this process (the server, before it drops root) into each group."""
    pid = str(os.getpid())
    for d in dirs:
        with open(Path(d) / "cgroup.procs", "w") as f:
            f.write(pid)


try:
    from jupyterhub.spawner import LocalProcessSpawner
    from traitlets import Unicode
except ImportError:  # the tests import the functions above without jupyterhub
    LocalProcessSpawner = None

if LocalProcessSpawner is not None:
    class CgroupSpawner(LocalProcessSpawner):
        """LocalProcessSpawner whose server runs in the student's own control group, with
        mem_limit and cpu_limit enforced (this module's docstring). Without either limit it
        behaves as LocalProcessSpawner."""

        cgroup_root = Unicode("/sys/fs/cgroup", config=True,
                              help="Where the cgroup tree is mounted.")

        def _limited(self):
            return self.mem_limit is not None or self.cpu_limit is not None

        def _version(self):
            version = cgroup_version(self.cgroup_root)
            if version is None:
                raise RuntimeError(
                    f"{self.cgroup_root} holds neither a cgroup v2 tree nor v1's memory and cpu "
                    "hierarchies, so the per-student limits cannot be enforced; "
                    "LESSONLIB_HUB_MEM_LIMIT=none and LESSONLIB_HUB_CPU_LIMIT=none run the hub "
                    "without them")
            return version

        async def start(self):
            self._groups = []
            if self._limited():
                version = self._version()
                self._groups = create_group(self.cgroup_root, version, self.user.name,
                                            self.mem_limit, self.cpu_limit)
                self._oom_seen = oom_kills(self.cgroup_root, version, self.user.name)
                self.log.info("%s's server in %s: memory %s bytes, %s CPUs", self.user.name,
                              ", ".join(map(str, self._groups)), self.mem_limit, self.cpu_limit)
            return await super().start()

        def make_preexec_fn(self, name):
            drop_root = super().make_preexec_fn(name)
            dirs = list(getattr(self, "_groups", []))

            def preexec():
                join_groups(dirs)  # as root, before the server becomes the student
                drop_root()
            return preexec

        def _report_oom(self):
            if not self._limited() or not getattr(self, "_groups", None):
                return
            kills = oom_kills(self.cgroup_root, self._version(), self.user.name)
            if kills > getattr(self, "_oom_seen", 0):
                self.log.warning(
                    "%s went past their memory limit (%s bytes): the OOM killer ended %d "
                    "process(es) of theirs (a kernel, which their server restarts)",
                    self.user.name, self.mem_limit, kills - self._oom_seen)
                self._oom_seen = kills

        async def poll(self):
            self._report_oom()
            return await super().poll()

        async def stop(self, now=False):
            await super().stop(now=now)
            if self._limited() and getattr(self, "_groups", None):
                self._report_oom()
                busy = remove_group(self.cgroup_root, self._version(), self.user.name)
                if busy:
                    self.log.warning("%s's group still has processes: %s", self.user.name,
                                     ", ".join(map(str, busy)))
                self._groups = []
