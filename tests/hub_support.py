"""The live hub's helpers, shared by tests/test_hub.py and benchmarks/class_load.py.

Students made (and removed) by deploy/hub/add-students.sh with known passwords, the hub started
from .venv-hub on free loopback ports with its own state folder, a student's login through the
hub's HTTP login (PAM), and their server started and waited for. Everything here needs what the
live test needs (Linux, root, make hub-env); importing it needs only requests.
"""
import contextlib
import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
HUB_DIR = ROOT / "deploy" / "hub"
CONFIG = HUB_DIR / "jupyterhub_config.py"
ADD_STUDENTS = HUB_DIR / "add-students.sh"
PROXY = HUB_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
HUB_VENV = Path(os.environ.get("LESSONLIB_HUB_VENV", ROOT / ".venv-hub")).resolve()


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def wait_for(what, check, timeout_s, every_s=0.5):
    """check() until it returns something true, at most timeout_s; fails saying what."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(every_s)
    raise AssertionError(f"{what}: not within {timeout_s} s")


def run_add_students(*args, timeout_s=180):
    return subprocess.run([str(ADD_STUDENTS), *args], capture_output=True, text=True,
                          timeout=timeout_s)


@contextlib.contextmanager
def students(folder, names, comment="a test student", timeout_s=180):
    """Students made by add-students.sh, each with a random known password ({name: password});
    removed with --remove afterwards, whatever happened (the removal's failure is raised)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    listed, given = folder / "names.txt", folder / "passwords.txt"
    listed.write_text(f"# {comment}\n" + "".join(f"{n}\n" for n in names))
    passwords = {n: secrets.token_urlsafe(16) for n in names}
    given.touch(mode=0o600)
    given.chmod(0o600)
    given.write_text("".join(f"{n}:{p}\n" for n, p in passwords.items()))
    try:
        made = run_add_students("--passwords", str(given), str(listed),
                                timeout_s=timeout_s * max(1, len(names)))
        assert made.returncode == 0, made.stderr
        yield {"passwords": passwords, "made": made, "names": listed}
    finally:
        removed = run_add_students("--remove", str(listed), timeout_s=timeout_s)
        assert removed.returncode == 0, removed.stderr
        left = [n for n in names if subprocess.run(["id", n], capture_output=True).returncode == 0]
        assert not left, f"accounts left behind: {left}"


class Hub:
    """jupyterhub -f deploy/hub/jupyterhub_config.py from .venv-hub on free loopback ports."""

    def __init__(self, state, **settings):
        """settings: more LESSONLIB_HUB_* variables, by their suffix (MEM_LIMIT="1G")."""
        self.state, self.log = Path(state), Path(state).parent / "hub.log"
        port, api, proxy_api = free_ports(3)
        self.port = port
        # HTTPS with SSL_CERT and SSL_KEY: requests checks the hub's certificate against the file
        self.verify = settings.get("SSL_CERT", True)
        self.url = f"{'https' if 'SSL_CERT' in settings else 'http'}://127.0.0.1:{port}"
        self.env = dict(os.environ, LESSONLIB_HUB_STATE=str(state), LESSONLIB_HUB_PORT=str(port),
                        LESSONLIB_HUB_API_PORT=str(api), LESSONLIB_HUB_PROXY_API_PORT=str(proxy_api),
                        **{f"LESSONLIB_HUB_{k}": str(v) for k, v in settings.items()})
        self.proc = None

    def start(self):
        self.state.mkdir(exist_ok=True)
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                [str(HUB_VENV / "bin" / "jupyterhub"), "-f", str(CONFIG)], cwd=self.state,
                env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(f"the hub answering on {self.url} (log: {self.tail()})", self._healthy, 90)

    def _healthy(self):
        assert self.proc.poll() is None, f"the hub exited: {self.tail()}"
        try:
            return requests.get(f"{self.url}/hub/health", timeout=5,
                                verify=self.verify).status_code == 200
        except requests.ConnectionError:
            return False

    def proxy_pid(self):
        """The configurable-http-proxy's pid (from its pid file), or None."""
        pid_file = self.state / "proxy.pid"
        if not pid_file.exists():
            return None
        pid = int(pid_file.read_text().strip() or 0)
        cmdline = Path(f"/proc/{pid}/cmdline")
        if pid and cmdline.exists() and b"configurable-http-proxy" in cmdline.read_bytes():
            return pid
        return None

    def tail(self, n=3000):
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""

    def stop(self):
        """SIGTERM (the hub stops the students' servers, the culler and the proxy), then
        SIGKILL to its process group past 60 s; a proxy left behind is ended by its pid file."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        pid = self.proxy_pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
        return self.proc.returncode if self.proc is not None else None


def xsrf(session, path):
    return {"X-XSRFToken": session.cookies.get("_xsrf", path=path)}


def login(session, url, name, password, timeout_s=60):
    """The hub's login form, as a browser posts it: the response (302 when it let them in)."""
    session.get(f"{url}/hub/login", timeout=timeout_s)
    return session.post(f"{url}/hub/login", allow_redirects=False, timeout=timeout_s,
                        data={"username": name, "password": password,
                              "_xsrf": session.cookies["_xsrf"]})


def spawn_and_wait(s, url, name, timeout_s=180, every_s=0.5):
    """The student's server started through the hub's API, ready within timeout_s."""
    r = s.post(f"{url}/hub/api/users/{name}/server", headers=xsrf(s, "/hub/"),
               timeout=timeout_s + 20)
    assert r.status_code in (201, 202), r.text

    def ready():
        user = s.get(f"{url}/hub/api/users/{name}", headers=xsrf(s, "/hub/"), timeout=30).json()
        server = user["servers"].get("", {})
        if not server and not user.get("pending"):
            raise AssertionError(f"{name}'s server stopped before it was ready (the spawn "
                                 "failed or timed out: the hub's log says why)")
        return server.get("ready")
    wait_for(f"{name}'s server ready", ready, timeout_s, every_s)


def server_cookies(session, name):
    """The Cookie header a browser sends to the student's server (hub and server cookies)."""
    return "; ".join(f"{c.name}={c.value}" for c in session.cookies
                     if c.path in ("/", f"/user/{name}/"))
