"""The course's JupyterHub on one machine (make hub; deploy/hub/README.md).

Laid out as The Littlest JupyterHub lays out a hub: one shared environment (.venv-hub: lessonlib,
JupyterLab and every pin of .venv, plus JupyterHub), each student a real UNIX account made by
deploy/hub/add-students.sh, who logs in with their UNIX password (PAM) and gets their own
JupyterLab, run as them, on their home folder, where the course notebooks were copied.

Settings come from the environment, so that one file serves the instructor's hub and the tests:

    LESSONLIB_HUB_PORT            the public port (8000), bound to 127.0.0.1 unless LESSONLIB_HUB_IP
    LESSONLIB_HUB_IP              the public address (127.0.0.1); any other needs HTTPS (below)
    LESSONLIB_HUB_SSL_CERT/_KEY   serve HTTPS with this certificate and key
    LESSONLIB_HUB_STATE           the state folder (build/hub/ in the checkout): the user database,
                                  the cookie secret and the proxy's token, kept across restarts
    LESSONLIB_HUB_API_PORT        the hub's own API on 127.0.0.1 (8081)
    LESSONLIB_HUB_PROXY_API_PORT  the proxy's API on 127.0.0.1 (8001)
    LESSONLIB_HUB_GROUP           the students' UNIX group (lessonlib-students), as add-students.sh
    LESSONLIB_HUB_ADMINS          instructors' login names, comma-separated (or the UNIX group
                                  lessonlib-instructors)
    LESSONLIB_HUB_CULL_TIMEOUT    seconds of inactivity before a student's server is stopped (3600)
    LESSONLIB_HUB_MEM_LIMIT       each student's memory, server and kernels together (2G; K, M, G,
                                  T are powers of 1024), enforced; none: no limit
    LESSONLIB_HUB_CPU_LIMIT       each student's CPU time in cores (1), enforced; none: no limit
    LESSONLIB_HUB_RUNTIME         where each student's kernels' sockets go (/run/lessonlib-hub)

Nothing here imports jupyterhub: the tests load this file with traitlets' config loader in .venv.
"""
import grp
import ipaddress
import os
import pwd
import re
import secrets
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (defined by the config loader)

ROOT = Path(__file__).resolve().parents[2]  # the checkout: deploy/hub/jupyterhub_config.py
HUB_ENV = Path(sys.executable).parent  # .venv-hub/bin: the environment running the hub
STATE = Path(os.environ.get("LESSONLIB_HUB_STATE", ROOT / "build" / "hub")).resolve()
PORT = int(os.environ.get("LESSONLIB_HUB_PORT", "8000"))
IP = os.environ.get("LESSONLIB_HUB_IP", "127.0.0.1")
SSL_CERT = os.environ.get("LESSONLIB_HUB_SSL_CERT", "")
SSL_KEY = os.environ.get("LESSONLIB_HUB_SSL_KEY", "")
STUDENTS = os.environ.get("LESSONLIB_HUB_GROUP", "lessonlib-students")
INSTRUCTORS = "lessonlib-instructors"
CULL_TIMEOUT_S = int(os.environ.get("LESSONLIB_HUB_CULL_TIMEOUT", "3600"))
MEM_LIMIT = os.environ.get("LESSONLIB_HUB_MEM_LIMIT", "2G").strip()
CPU_LIMIT = os.environ.get("LESSONLIB_HUB_CPU_LIMIT", "1").strip()
RUNTIME = Path(os.environ.get("LESSONLIB_HUB_RUNTIME", "/run/lessonlib-hub"))


def state_secret(path):
    """A random token kept in the state folder, readable by its owner only: made on the first
    start, read on every later one, so that a restarted hub keeps talking to the same proxy."""
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return path.read_text().strip()


def group_exists(name):
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


# ---- Where the hub listens. Loopback by default: nothing leaves the machine.
if bool(SSL_CERT) != bool(SSL_KEY):
    raise ValueError("set both LESSONLIB_HUB_SSL_CERT and LESSONLIB_HUB_SSL_KEY, or neither")
if not SSL_CERT and not ipaddress.ip_address(IP).is_loopback:
    raise ValueError(f"LESSONLIB_HUB_IP={IP} without HTTPS would send students' passwords in "
                     "clear: set LESSONLIB_HUB_SSL_CERT and LESSONLIB_HUB_SSL_KEY, or keep the "
                     "hub on 127.0.0.1 behind a reverse proxy that serves HTTPS")
c.JupyterHub.bind_url = f"{'https' if SSL_CERT else 'http'}://{IP}:{PORT}"
# HTTPS, two ways (deploy/hub/README.md):
# 1. The hub serves it itself, with a certificate for the machine's name (certbot's files, say):
#        LESSONLIB_HUB_IP=0.0.0.0 LESSONLIB_HUB_PORT=443 \
#        LESSONLIB_HUB_SSL_CERT=/etc/letsencrypt/live/hub.example.org/fullchain.pem \
#        LESSONLIB_HUB_SSL_KEY=/etc/letsencrypt/live/hub.example.org/privkey.pem make hub
#    which sets
#        c.JupyterHub.ssl_cert = "/etc/letsencrypt/live/hub.example.org/fullchain.pem"
#        c.JupyterHub.ssl_key = "/etc/letsencrypt/live/hub.example.org/privkey.pem"
# 2. As The Littlest JupyterHub does: a reverse proxy (Traefik, nginx, Caddy) terminates TLS on
#    port 443 and forwards to http://127.0.0.1:8000, websockets included; the hub stays on
#    loopback, exactly as configured here.
if SSL_CERT:
    c.JupyterHub.ssl_cert = SSL_CERT
    c.JupyterHub.ssl_key = SSL_KEY

# The hub's API and the proxy's API: loopback only, whatever the public address.
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{os.environ.get('LESSONLIB_HUB_API_PORT', '8081')}"
c.ConfigurableHTTPProxy.api_url = (
    f"http://127.0.0.1:{os.environ.get('LESSONLIB_HUB_PROXY_API_PORT', '8001')}")
# configurable-http-proxy as npm ci installed it from deploy/hub/package-lock.json (no global one)
c.ConfigurableHTTPProxy.command = [str(ROOT / "deploy" / "hub" / "node_modules" / ".bin" /
                                       "configurable-http-proxy")]

# ---- The state: users, cookie secret and proxy token survive a restart (owner-only folder).
STATE.mkdir(parents=True, exist_ok=True)
STATE.chmod(0o700)
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")  # made on first start
c.ConfigurableHTTPProxy.auth_token = state_secret(STATE / "proxy_auth_token")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")

# ---- Who may log in: PAM (jupyterhub's default PAMAuthenticator, through pamela) checks the
# UNIX password with the PAM service "login" (/etc/pam.d/login: pam_unix against /etc/shadow,
# which the hub, run as root, can read). Only members of the students' group (add-students.sh
# puts them there) and the instructors' group; instructors are admins.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.service = "login"
c.PAMAuthenticator.allowed_groups = {STUDENTS, INSTRUCTORS}
# Only an existing group: jupyterhub 6.1 answers every login with an error (500) when an admin
# group is missing. add-students.sh makes both groups; an instructor joins theirs with
# `usermod --append --groups lessonlib-instructors NAME`, then restarts the hub.
c.PAMAuthenticator.admin_groups = {g for g in [INSTRUCTORS] if group_exists(g)}
c.Authenticator.admin_users = {n.strip() for n in os.environ.get("LESSONLIB_HUB_ADMINS", "")
                               .split(",") if n.strip()}

# ---- Each student's server: the shared environment's jupyterhub-singleuser, run as the student
# (jupyterhub's LocalProcessSpawner, with limits: below), JupyterLab on their home folder.
c.Spawner.cmd = [str(HUB_ENV / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
# A terminal's `python` is the course's environment (`python -m pip list`), not root's PATH.
c.Spawner.environment = {"PATH": f"{HUB_ENV}:/usr/local/bin:/usr/bin:/bin"}
c.Spawner.start_timeout = 120  # JupyterLab's first start on a busy 2-core machine
c.Spawner.http_timeout = 90


def memory_limit(text):
    """LESSONLIB_HUB_MEM_LIMIT as jupyterhub's mem_limit takes it ("2G"), or None for none."""
    if text.lower() == "none":
        return None
    if not re.fullmatch(r"[1-9][0-9]*(\.[0-9]+)?[KMGT]?", text):
        raise ValueError(f"LESSONLIB_HUB_MEM_LIMIT={text!r}: a size such as 2G or 1536M "
                         "(K, M, G, T: powers of 1024), or none")
    return text


def cpu_limit(text):
    """LESSONLIB_HUB_CPU_LIMIT as a number of cores (0.5, 1, 2), or None for none."""
    if text.lower() == "none":
        return None
    try:
        cores = float(text)
    except ValueError:
        cores = float("nan")
    if not cores > 0 or cores == float("inf"):
        raise ValueError(f"LESSONLIB_HUB_CPU_LIMIT={text!r}: a positive number of cores "
                         "(0.5, 1, 2), or none")
    return cores


# Memory and CPU limits, enforced. LocalProcessSpawner itself does NOT enforce c.Spawner.mem_limit
# or c.Spawner.cpu_limit (it only passes them to the server as MEM_LIMIT and CPU_LIMIT), so one
# student's kernel could take the whole machine. CgroupSpawner (cgroup_spawner.py, here) is
# LocalProcessSpawner that starts each server in the student's own control group with these
# limits (cgroup v1 or v2; root, as the hub already is): past the memory limit the OOM killer ends
# that student's kernel, which their server restarts and JupyterLab reports ("Kernel
# Restarting"), and no one else's. 2G covers the heaviest notebook (10: about 0.85 GiB at its
# peak, server included; instructors/README.md) with room for a second notebook open.
sys.path.insert(0, str(Path(__file__).resolve().parent))
c.JupyterHub.spawner_class = "cgroup_spawner.CgroupSpawner"
if memory_limit(MEM_LIMIT) is not None:
    c.Spawner.mem_limit = memory_limit(MEM_LIMIT)
if cpu_limit(CPU_LIMIT) is not None:
    c.Spawner.cpu_limit = cpu_limit(CPU_LIMIT)
# On a host run by systemd, systemd's SystemdSpawner (PyPI jupyterhub-systemdspawner 1.0.2; install
# it into .venv-hub) does the same with a systemd unit per server (not tested here: no systemd):
#     c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
#     c.SystemdSpawner.dynamic_users = False     # the real UNIX accounts add-students.sh made
#     c.SystemdSpawner.isolate_tmp = True        # a private /tmp per student
#     c.SystemdSpawner.unit_name_template = "jupyter-{USERNAME}"

# Kernels talk to their server over UNIX sockets, not TCP ports on 127.0.0.1. With TCP, servers
# starting kernels at the same moment pick free ports independently and two can pick the same one
# ("ZMQError: Address already in use": one kernel in twenty never started at 20 students at once,
# benchmarks/RESULTS.md); a socket file in the student's own runtime folder cannot collide, and no
# other account can even connect to it. The folder is short (/run/lessonlib-hub/UID): a socket's
# path must fit in 107 bytes, and ~/.local/share/jupyter/runtime/kernel-<uuid>-ipc-N under a long
# home does not.
c.Spawner.args = ["--KernelManager.transport=ipc"]


def runtime_folder(spawner):
    """Before each spawn (as root): the student's runtime folder, new, theirs and private, under
    a root-owned one; its path goes to the server as JUPYTER_RUNTIME_DIR. Made afresh each time:
    what an earlier server left there (or an earlier account with the same UID) is gone."""
    account = pwd.getpwnam(spawner.user.name)
    RUNTIME.mkdir(mode=0o755, parents=True, exist_ok=True)
    os.chown(RUNTIME, 0, 0)
    RUNTIME.chmod(0o755)
    folder = RUNTIME / str(account.pw_uid)
    shutil.rmtree(folder, ignore_errors=True)  # no server of theirs runs: the hub is spawning it
    folder.mkdir(mode=0o700)
    os.chown(folder, account.pw_uid, account.pw_gid)
    folder.chmod(0o700)
    spawner.environment = {**spawner.environment, "JUPYTER_RUNTIME_DIR": str(folder)}


c.Spawner.pre_spawn_hook = runtime_folder

# ---- The idle culler, a service the hub starts and stops with itself: every 10 minutes (or half
# the timeout, if that is shorter) it stops the servers of students idle for CULL_TIMEOUT_S (their
# files stay; the next login starts a fresh server). It runs in the hub's environment with only
# the rights it needs.
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={CULL_TIMEOUT_S}",
                f"--cull-every={min(600, max(5, CULL_TIMEOUT_S // 2))}"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
