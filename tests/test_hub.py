"""The course's JupyterHub (deploy/hub/, make hub) and the Zero to JupyterHub recipe (deploy/z2jh/).

Everywhere: the hub's config loads with traitlets' config loader (jupyterhub's) and sets what
deploy/hub/README.md says; where .venv-hub exists, every setting is a trait of the pinned
jupyterhub and the environment holds requirements-hub.txt's versions; add-students.sh refuses bad
names and accounts it did not make; the z2jh config.yaml and the repo2docker recipe parse and have
what they rely on; every pin is exact.

The live test (Linux, root, and make hub-env's .venv-hub and proxy): add-students.sh makes a
student; the hub starts on free loopback ports with a temporary state folder; the student logs in
through the hub's HTTP login with their UNIX password (PAM), their server starts as them and
serves /user/NAME/lab, the course notebooks are in their home, and a kernel runs as them in the
shared environment; the hub is stopped and started again, and the student's session, account and
notebooks (an edit included) are still there; the student is removed. Reliability: two students
under a memory limit, one's kernel out of memory and then killed, restarted with the server's
"restarting" each time, the other's kernel and state untouched; an instructor's gradebook with a
write half done when the hub stops, whole after the restart. Elsewhere they skip, saying why;
make hub-test (LESSONLIB_HUB=1) fails instead of skipping.
"""
import asyncio
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import ssl
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
import yaml
from packaging.specifiers import SpecifierSet
from traitlets.config.loader import PyFileConfigLoader

from _support import load_file

from hub_support import (ADD_STUDENTS, CONFIG, HUB_DIR, HUB_VENV, PROXY, ROOT, Hub, login,
                         run_add_students, server_cookies, spawn_and_wait, students, wait_for,
                         xsrf)

Z2JH = ROOT / "deploy" / "z2jh"
IMAGE = Z2JH / "image"
EXCHANGE = "/usr/local/share/nbgrader/exchange"  # instructors/README.md's Exchange.root
PIN = re.compile(r"([A-Za-z0-9_.\-]+)==([0-9][^\s;]*)")


def _hub_missing():
    """Why the hub's environment cannot run here, or None."""
    if not sys.platform.startswith("linux"):
        return f"Linux (PAM and UNIX accounts); this is {sys.platform}"
    if not (HUB_VENV / ".installed").exists():
        return f"{HUB_VENV.name} (make hub-env)"
    if not PROXY.exists():
        return "configurable-http-proxy in deploy/hub/node_modules (make hub-env)"
    return None


def _live_missing():
    why = _hub_missing()
    if why is None and os.geteuid() != 0:
        why = "root, to make a student's UNIX account and start their server as them"
    return why


WHY_HUB, WHY_LIVE = _hub_missing(), _live_missing()
if WHY_LIVE is not None and os.environ.get("LESSONLIB_HUB") == "1":
    raise ImportError(f"make hub-test runs the live hub test, and it cannot run: needs {WHY_LIVE}")
hub_env = pytest.mark.skipif(WHY_HUB is not None, reason=f"needs {WHY_HUB}")
live = pytest.mark.skipif(WHY_LIVE is not None, reason=f"needs {WHY_LIVE}")


def _pins(path):
    """{name: version} of a requirements file; fails on any requirement not pinned exactly."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith(("-r ", "--extra-index-url ")):
            continue
        m = PIN.fullmatch(line.split(";", 1)[0].strip())
        assert m, f"{path.name}: {line!r} is not pinned exactly (name==version)"
        pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def load_hub_config(tmp_path, monkeypatch, **env):
    """deploy/hub/jupyterhub_config.py as jupyterhub loads it (traitlets' PyFileConfigLoader),
    with its state folder in tmp_path and the LESSONLIB_HUB_* variables given."""
    monkeypatch.setenv("LESSONLIB_HUB_STATE", str(tmp_path / "state"))
    for key in ("PORT", "IP", "SSL_CERT", "SSL_KEY", "API_PORT", "PROXY_API_PORT", "GROUP",
                "ADMINS", "CULL_TIMEOUT", "MEM_LIMIT", "CPU_LIMIT", "RUNTIME"):
        monkeypatch.delenv(f"LESSONLIB_HUB_{key}", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(f"LESSONLIB_HUB_{key}", value)
    return PyFileConfigLoader(CONFIG.name, path=str(CONFIG.parent)).load_config()


# ------------------------------------------------------------------ the hub's files, everywhere


def test_the_hub_config_sets_what_the_readme_says(tmp_path, monkeypatch):
    c = load_hub_config(tmp_path, monkeypatch)
    state = tmp_path / "state"
    assert c.JupyterHub.bind_url == "http://127.0.0.1:8000"
    assert c.JupyterHub.hub_bind_url == "http://127.0.0.1:8081"
    assert c.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:8001"
    assert c.ConfigurableHTTPProxy.command == [str(PROXY)]
    # the state: database, cookie secret, proxy token, all in one owner-only folder
    assert c.JupyterHub.db_url == f"sqlite:///{state / 'jupyterhub.sqlite'}"
    assert Path(c.JupyterHub.cookie_secret_file).parent == state
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    token = state / "proxy_auth_token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert c.ConfigurableHTTPProxy.auth_token == token.read_text().strip()
    again = load_hub_config(tmp_path, monkeypatch)  # a restart keeps the token
    assert again.ConfigurableHTTPProxy.auth_token == c.ConfigurableHTTPProxy.auth_token
    # PAM, the students' and instructors' groups
    assert c.JupyterHub.authenticator_class == "pam"
    assert c.PAMAuthenticator.service == "login"
    assert c.PAMAuthenticator.allowed_groups == {"lessonlib-students", "lessonlib-instructors"}
    assert c.PAMAuthenticator.admin_groups <= {"lessonlib-instructors"}
    # each student's server: the shared environment's jupyterhub-singleuser, JupyterLab, home,
    # in the student's own control group with 2G and one core (deploy/hub/cgroup_spawner.py)
    assert c.JupyterHub.spawner_class == "cgroup_spawner.CgroupSpawner"
    assert c.Spawner.cmd == [str(Path(sys.executable).parent / "jupyterhub-singleuser")]
    assert (c.Spawner.default_url, c.Spawner.notebook_dir) == ("/lab", "~")
    assert (c.Spawner.mem_limit, c.Spawner.cpu_limit) == ("2G", 1.0)
    # kernels on UNIX sockets in a short private folder per student, not racing for TCP ports
    assert c.Spawner.args == ["--KernelManager.transport=ipc"]
    assert c.Spawner.pre_spawn_hook.__name__ == "runtime_folder"
    # the idle culler, a managed service with the rights it needs
    (culler,) = c.JupyterHub.services
    assert culler["command"] == [sys.executable, "-m", "jupyterhub_idle_culler",
                                 "--timeout=3600", "--cull-every=600"]
    (role,) = c.JupyterHub.load_roles
    assert role["services"] == ["idle-culler"] and "delete:servers" in role["scopes"]


def test_the_hub_config_takes_its_ports_group_admins_and_culling_from_the_environment(
        tmp_path, monkeypatch):
    c = load_hub_config(tmp_path, monkeypatch, PORT="18000", API_PORT="18081",
                        PROXY_API_PORT="18001", GROUP="class-a", ADMINS="ada, grace",
                        CULL_TIMEOUT="600")
    assert c.JupyterHub.bind_url == "http://127.0.0.1:18000"
    assert c.JupyterHub.hub_bind_url == "http://127.0.0.1:18081"
    assert c.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:18001"
    assert "class-a" in c.PAMAuthenticator.allowed_groups
    assert c.Authenticator.admin_users == {"ada", "grace"}
    assert c.JupyterHub.services[0]["command"][-2:] == ["--timeout=600", "--cull-every=300"]


@pytest.mark.parametrize("mem, cpu, want", [("1536M", "0.5", ("1536M", 0.5)),
                                            ("none", "none", (None, None)),
                                            ("4G", "NONE", ("4G", None))])
def test_the_limits_come_from_the_environment_and_none_lifts_them(tmp_path, monkeypatch, mem,
                                                                   cpu, want):
    c = load_hub_config(tmp_path, monkeypatch, MEM_LIMIT=mem, CPU_LIMIT=cpu)
    assert (c.Spawner.get("mem_limit"), c.Spawner.get("cpu_limit")) == want


@pytest.mark.parametrize("key, value", [("MEM_LIMIT", "2 GB"), ("MEM_LIMIT", "0"),
                                        ("MEM_LIMIT", "-1G"), ("CPU_LIMIT", "0"),
                                        ("CPU_LIMIT", "one"), ("CPU_LIMIT", "inf"),
                                        ("CPU_LIMIT", "nan")])
def test_a_malformed_limit_is_refused_naming_the_variable(tmp_path, monkeypatch, key, value):
    with pytest.raises(ValueError, match=f"LESSONLIB_HUB_{key}="):
        load_hub_config(tmp_path, monkeypatch, **{key: value})


def test_the_hub_serves_https_with_a_certificate_and_refuses_plain_http_off_loopback(
        tmp_path, monkeypatch):
    c = load_hub_config(tmp_path, monkeypatch, IP="0.0.0.0", PORT="443",
                        SSL_CERT="/etc/hub/fullchain.pem", SSL_KEY="/etc/hub/privkey.pem")
    assert c.JupyterHub.bind_url == "https://0.0.0.0:443"
    assert (c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key) == ("/etc/hub/fullchain.pem",
                                                             "/etc/hub/privkey.pem")
    with pytest.raises(ValueError, match="passwords in clear"):
        load_hub_config(tmp_path, monkeypatch, IP="0.0.0.0")
    with pytest.raises(ValueError, match="both"):
        load_hub_config(tmp_path, monkeypatch, SSL_CERT="/etc/hub/fullchain.pem")


def test_the_hub_config_finds_its_paths_from_the_checkout():
    text = CONFIG.read_text()
    assert not re.search(r"""["'](/work|/root|/home)\b""", text), "a path hard-coded"
    assert "import jupyterhub" not in text  # loads in .venv, where jupyterhub is not


def test_requirements_hub_is_pinned_exactly_and_adds_only_what_grading_lacks():
    """.venv-hub is built on .venv-grading (requirements.txt, then requirements-grading.txt):
    requirements-hub.txt pins only what those two lack."""
    hub = _pins(ROOT / "requirements-hub.txt")
    base = _pins(ROOT / "requirements.txt")
    assert {"jupyterhub", "jupyterhub-idle-culler", "pamela"} <= set(hub)
    assert hub["jupyterhub"].startswith("6.")
    assert not set(hub) & set(base), "pinned in requirements.txt already"
    grading = _pins(ROOT / "requirements-grading.txt")
    assert not set(hub) & set(grading), "pinned in requirements-grading.txt already"
    assert "nbgrader" in grading  # the students' Assignments panel comes from there


def test_the_proxy_is_pinned_in_the_npm_lock():
    wanted = json.loads((HUB_DIR / "package.json").read_text())["dependencies"]
    assert re.fullmatch(r"5\.\d+\.\d+", wanted["configurable-http-proxy"])  # exact, 5.x
    lock = json.loads((HUB_DIR / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"] == wanted
    locked = lock["packages"]["node_modules/configurable-http-proxy"]
    assert locked["version"] == wanted["configurable-http-proxy"] and locked["integrity"]


def test_add_students_is_strict_bash_and_refuses_bad_names_and_others_accounts(tmp_path):
    text = ADD_STUDENTS.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in text
    assert os.access(ADD_STUDENTS, os.X_OK)
    subprocess.run(["bash", "-n", str(ADD_STUDENTS)], check=True)
    names = tmp_path / "names.txt"
    for bad, said in (("Not A Name", "is not a login name"), ("root", "did not make")):
        names.write_text(f"{bad}\n")
        r = subprocess.run([str(ADD_STUDENTS), "--remove", str(names)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2, r
        assert (said if os.geteuid() == 0 else "run as root") in r.stderr
    assert subprocess.run(["id", "root"], capture_output=True).returncode == 0


@hub_env
def test_every_hub_setting_is_a_trait_of_the_pinned_jupyterhub(tmp_path):
    """In .venv-hub: jupyterhub's own app loads the file; each section's class has each trait
    (a misspelt name would be ignored with a warning), and the versions are requirements-hub's."""
    script = r"""
import json, sys
from importlib.metadata import version
from jupyterhub.app import JupyterHub
from jupyterhub.auth import Authenticator, PAMAuthenticator
from jupyterhub.proxy import ConfigurableHTTPProxy
from jupyterhub.spawner import LocalProcessSpawner, Spawner
app = JupyterHub()
app.load_config_file(sys.argv[1])
classes = {k.__name__: k for k in (JupyterHub, Authenticator, PAMAuthenticator,
                                   ConfigurableHTTPProxy, LocalProcessSpawner, Spawner)}
unknown = [f"{s}.{t}" for s, values in app.config.items() for t in values
           if s not in classes or t not in classes[s].class_trait_names(config=True)]
from cgroup_spawner import CgroupSpawner  # the config put deploy/hub on sys.path
assert app.spawner_class is CgroupSpawner and issubclass(CgroupSpawner, LocalProcessSpawner)
PAMAuthenticator(config=app.config), CgroupSpawner(config=app.config)  # values validate
print(json.dumps({"unknown": unknown, "versions": {n: version(n) for n in sys.argv[2:]}}))
"""
    pins = {**_pins(ROOT / "requirements-hub.txt"), **_pins(ROOT / "requirements-grading.txt")}
    env = dict(os.environ, LESSONLIB_HUB_STATE=str(tmp_path / "state"))
    out = subprocess.run([str(HUB_VENV / "bin" / "python"), "-c", script, str(CONFIG), *pins],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["unknown"] == []
    assert {n: v for n, v in got["versions"].items()} == pins


@hub_env
def test_the_students_environment_has_nbgrader_for_students_and_hides_the_instructors_parts(
        tmp_path):
    """In .venv-hub, as a student's server sees it: nbgrader's course and exchange from
    deploy/hub/nbgrader_config.py, its Assignments, validate and course list server extensions
    on and the formgrader off; its lab extension there with formgrader and create-assignment
    disabled; the nbgrader command; .venv's Jupyter folders not written to."""
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    py = str(HUB_VENV / "bin" / "python")
    env = dict(os.environ, HOME=str(tmp_path), JUPYTER_CONFIG_DIR=str(tmp_path / ".jupyter"))

    def run(*args):
        out = subprocess.run([py, *args], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        return ansi.sub("", out.stdout + out.stderr)
    server = run("-m", "jupyter_server.extension.serverextension", "list")
    state = dict(re.findall(r"^\s+(nbgrader\.server_extensions\.\w+) (enabled|disabled)$",
                            server, re.M))
    assert state == {"nbgrader.server_extensions.formgrader": "disabled",
                     "nbgrader.server_extensions.validate_assignment": "enabled",
                     "nbgrader.server_extensions.assignment_list": "enabled",
                     "nbgrader.server_extensions.course_list": "enabled"}, server
    lab = run("-m", "jupyterlab.labextensions", "list")
    assert re.search(r"@jupyter/nbgrader v\S+ enabled", lab), lab
    disabled = lab.split("Disabled extensions:")[1].split("\n\n")[0]
    assert sorted(re.findall(r"^\s+(\S+)$", disabled, re.M)) == [
        "@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:formgrader"]
    assert "jupyter-matplotlib" in lab and "@jupyter-widgets/jupyterlab-manager" in lab
    config = run("-c", "from nbgrader.apps.baseapp import NbGrader\n"
                       "app = NbGrader()\napp.load_config_file()\n"
                       "print(app.config.CourseDirectory.course_id, app.config.Exchange.root)")
    assert config.split()[-2:] == ["lessonlib", "/usr/local/share/nbgrader/exchange"]
    version = run(str(HUB_VENV / "bin" / "nbgrader"), "--version").split()
    assert version[-1] == _pins(ROOT / "requirements-grading.txt")["nbgrader"]
    # nothing the hub set reached .venv's own folders (they are linked, file by file)
    venv = ROOT / ".venv"
    assert not (venv / "etc" / "jupyter" / "jupyter_server_config.json").exists()
    assert not (venv / "etc" / "jupyter" / "labconfig").exists()
    assert not (venv / "share" / "jupyter" / "labextensions" / "@jupyter").exists()


# ------------------------------------------------------------------ Zero to JupyterHub (parsed only)


def _bytes(quantity):
    number, unit = re.fullmatch(r"([\d.]+)([KMGT]i?)?", str(quantity)).groups()
    return float(number) * {None: 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10,
                            "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[unit]


def test_the_z2jh_config_has_what_it_relies_on():
    cfg = yaml.safe_load((Z2JH / "config.yaml").read_text())
    single = cfg["singleuser"]
    assert single["image"]["name"] and single["image"]["tag"] not in ("", "latest")
    assert single["defaultUrl"] == "/lab"
    assert isinstance(single["uid"], int) and isinstance(single["fsGid"], int)
    assert 0 < _bytes(single["memory"]["guarantee"]) <= _bytes(single["memory"]["limit"])
    assert 0 < single["cpu"]["guarantee"] <= single["cpu"]["limit"]
    volumes = {v["name"]: v for v in single["storage"]["extraVolumes"]}
    mounts = {m["name"]: m["mountPath"] for m in single["storage"]["extraVolumeMounts"]}
    assert mounts == {"nbgrader-exchange": EXCHANGE}
    assert volumes["nbgrader-exchange"]["persistentVolumeClaim"]["claimName"]
    assert cfg["cull"]["enabled"] is True and cfg["cull"]["timeout"] == 3600
    assert cfg["hub"]["config"]["Authenticator"]["admin_users"]
    assert cfg["proxy"]["https"]["enabled"] is True
    assert EXCHANGE in (IMAGE / "postBuild").read_text()  # the image's nbgrader_config.py
    assert EXCHANGE in (ROOT / "instructors" / "README.md").read_text()


@pytest.mark.parametrize("script", ["postBuild", "start"])
def test_the_image_scripts_stop_on_the_first_error(script):
    path = IMAGE / script
    lines = path.read_text().splitlines()
    assert lines[0] == "#!/bin/bash" and re.fullmatch(r"set -[a-z]*e[a-z]* ?.*", lines[1]), lines[:2]
    assert os.access(path, os.X_OK)
    subprocess.run(["bash", "-n", str(path)], check=True)


def test_the_start_script_syncs_the_notebooks_with_workspace_py_and_execs_the_server():
    text = (IMAGE / "start").read_text()
    assert "workspace.sync(" in text and text.rstrip().endswith('exec "$@"')
    assert "scripts/workspace.py" in (IMAGE / "postBuild").read_text()


def test_the_image_pins_a_supported_python_and_the_tested_requirements():
    m = re.fullmatch(r"python-(\d+\.\d+)", (IMAGE / "runtime.txt").read_text().strip())
    assert m, "runtime.txt: repo2docker wants python-X.Y"
    supported = re.search(r'requires-python = "([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert m.group(1) + ".0" in SpecifierSet(supported.group(1))
    text = (IMAGE / "requirements.txt").read_text()
    included = re.findall(r"^-r (\S+)$", text, flags=re.M)
    assert included == ["../requirements.txt", "../requirements-grading.txt",
                        "../requirements-hub.txt"]
    for p in included:  # repo2docker reads binder/requirements.txt: binder/../x is the root's x
        target = (ROOT / "binder" / p).resolve()
        assert target.parent == ROOT and target.exists()
    assert _pins(IMAGE / "requirements.txt") == {}  # nothing beyond the tested files
    torch = next(l for l in (ROOT / "requirements.txt").read_text().splitlines()
                 if l.startswith("torch=="))
    assert ";" in torch  # the platform markers come along


# ------------------------------------------------------------------ the live hub (root)


@pytest.fixture
def student(tmp_path):
    """A student made by add-students.sh with a known password; removed with --remove after."""
    name = f"llhub{secrets.token_hex(3)}"
    with students(tmp_path, [name]) as made:
        yield {"name": name, "password": made["passwords"][name], "made": made["made"],
               "names": made["names"]}


@pytest.fixture
def hub(tmp_path, student):
    h = Hub(tmp_path / "state")
    try:
        yield h
    finally:
        h.stop()


def _run_in_kernel(s, url, name, code):
    """Start a kernel on the student's server and run code there: its stdout."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    base, ux = f"{url}/user/{name}", xsrf(s, f"/user/{name}/")
    kernel = s.post(f"{base}/api/kernels", headers=ux, json={"name": "python3"}, timeout=60)
    assert kernel.status_code == 201, kernel.text
    cookies = server_cookies(s, name)
    ws_url = f"{base.replace('http', 'ws', 1)}/api/kernels/{kernel.json()['id']}/channels"

    async def execute():
        ws = await websocket_connect(HTTPRequest(ws_url, headers={"Cookie": cookies, **ux}))
        msg_id = uuid.uuid4().hex
        await ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": name,
                       "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        out = []
        while True:
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 120))
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                raise AssertionError(f"the kernel raised: {msg['content']}")
            elif msg["msg_type"] == "execute_reply":
                ws.close()
                return "".join(out)
    return asyncio.run(execute())


def _notebooks_served(s, url, name):
    r = s.get(f"{url}/user/{name}/api/contents/my-notebooks", headers=xsrf(s, f"/user/{name}/"),
              timeout=60)
    assert r.status_code == 200, r.text
    return {item["name"] for item in r.json()["content"]}


@live
def test_a_student_logs_in_gets_jupyterlab_with_the_course_and_keeps_it_across_a_restart(
        student, hub):
    name = student["name"]
    course = {p.name for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")}
    account = subprocess.run(["getent", "passwd", name], capture_output=True, text=True).stdout
    uid, home = int(account.split(":")[2]), Path(account.strip().split(":")[5])
    groups = subprocess.run(["id", "-nG", name], capture_output=True, text=True).stdout.split()
    assert "lessonlib-students" in groups
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    work = home / "my-notebooks"
    assert {p.name for p in work.glob("*.ipynb")} == course
    assert all(p.stat().st_uid == uid for p in [work, *work.rglob("*")])
    assert f"{name}:" not in student["made"].stdout  # its password came from the file
    again = run_add_students(str(student["names"]))  # idempotent: nothing made twice
    assert again.returncode == 0 and again.stdout == "" and "account there" in again.stderr

    hub.start()
    s = requests.Session()
    wrong = login(s, hub.url, name, "not-it")
    assert wrong.status_code == 403 and "jupyterhub-session-id" not in s.cookies
    r = login(s, hub.url, name, student["password"])
    assert r.status_code == 302, hub.tail()
    spawn_and_wait(s, hub.url, name)
    lab = s.get(f"{hub.url}/user/{name}/lab", timeout=60)  # through the hub's OAuth redirects
    assert lab.status_code == 200 and lab.url == f"{hub.url}/user/{name}/lab"
    assert "jupyter-config-data" in lab.text and "JupyterLab" in lab.text
    assert course <= _notebooks_served(s, hub.url, name)
    ran = _run_in_kernel(s, hub.url, name, "import os, sys, lessonlib\n"
                                           "print(os.getuid(), sys.prefix, os.getcwd())")
    assert ran.split() == [str(uid), str(HUB_VENV), str(home)]
    edit = s.put(f"{hub.url}/user/{name}/api/contents/my-notebooks/notes.txt",
                 headers=xsrf(s, f"/user/{name}/"), timeout=60,
                 json={"type": "file", "format": "text", "content": "KV cache: 2 x layers"})
    assert edit.status_code in (200, 201), edit.text
    assert (work / "notes.txt").stat().st_uid == uid

    assert hub.stop() == 0, hub.tail()
    wait_for(f"{name}'s processes gone with the hub",
          lambda: subprocess.run(["pgrep", "-u", name], capture_output=True).returncode == 1, 30)
    hub.start()
    me = s.get(f"{hub.url}/hub/api/user", headers=xsrf(s, "/hub/"), timeout=30)
    assert me.status_code == 200 and me.json()["name"] == name  # cookie secret and user kept
    spawn_and_wait(s, hub.url, name)
    # a new server: the page's OAuth redirects give the browser its new server cookie
    lab = s.get(f"{hub.url}/user/{name}/lab", timeout=60)
    assert lab.status_code == 200 and lab.url == f"{hub.url}/user/{name}/lab"
    assert course | {"notes.txt"} <= _notebooks_served(s, hub.url, name)
    notes = s.get(f"{hub.url}/user/{name}/api/contents/my-notebooks/notes.txt",
                  headers=xsrf(s, f"/user/{name}/"), timeout=60)
    assert notes.json()["content"] == "KV cache: 2 x layers"
    assert hub.tail(10**7).count("Starting managed service idle-culler") == 2
    assert hub.stop() == 0, hub.tail()


# ------------------------------------------------------------------ reliability (root, live)

CGROUPS = Path("/sys/fs/cgroup")


@pytest.fixture
def two_students(tmp_path):
    names = [f"llrel{secrets.token_hex(3)}" for _ in range(2)]
    with students(tmp_path / "class", names) as made:
        yield [(n, made["passwords"][n]) for n in names]


def _server_pid(name):
    """The student's jupyterhub-singleuser process."""
    out = subprocess.run(["pgrep", "-u", name, "-f", "jupyterhub-singleuser"],
                         capture_output=True, text=True).stdout.split()
    assert len(out) == 1, f"{name}'s servers: {out}"
    return int(out[0])


def _cgroups_of(pid):
    """{controller: path} from /proc/PID/cgroup (v1: one line per hierarchy)."""
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(","):
            out[c or "unified"] = path
    return out


@live
def test_a_kernel_that_dies_restarts_with_a_message_and_the_other_students_carry_on(
        tmp_path, two_students):
    """Two students; A's kernel goes past A's memory limit, then is killed outright. Each time
    A's server says "restarting" (JupyterLab's "Kernel Restarting" dialog), A gets a fresh
    kernel that runs code, the hub's log names the overrun, and B's kernel, its state and its
    computation meanwhile are untouched."""
    cl = load_file("benchmarks", "class_load.py")
    cs = load_file("deploy", "hub", "cgroup_spawner.py")
    version = cs.cgroup_version(CGROUPS)
    assert version is not None, "the live test needs a cgroup tree (v1 or v2)"
    hub = Hub(tmp_path / "state", MEM_LIMIT="1G", CPU_LIMIT="0.5")
    (a, pa), (b, pb) = two_students
    A, B = (cl.Student(n, p, hub.url, i, 0) for i, (n, p) in enumerate(two_students))
    notebook = "02_online_softmax.ipynb"

    async def until_back(s, timeout_s=90):
        """The restarted kernel's pid once it runs code again, and what else its cells showed
        (a cell sent while it was still starting may run first, and show it instead)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                _, out = await s.execute("import os; print(os.getpid())", 10)
                break
            except (asyncio.TimeoutError, RuntimeError):
                if time.monotonic() > deadline:
                    raise
        earlier = "".join("".join(texts) for texts in s.outputs.values())
        s.outputs.clear()
        *said, pid = out.rstrip("\n").split("\n")
        return int(pid), earlier + "\n".join(said)

    async def scenario():
        await asyncio.gather(asyncio.to_thread(A.login_and_spawn, 180),
                             asyncio.to_thread(B.login_and_spawn, 180))
        got = {}
        for s in (A, B):
            got[s.name] = {"server": _cgroups_of(_server_pid(s.name))}
        await asyncio.gather(A.open(notebook, 120), B.open(notebook, 120))
        reply, out = await B.execute(
            "import os, json, ipykernel.connect\nstate = 42\n"
            "f = ipykernel.connect.get_connection_file()\n"
            "print(os.getpid(), json.load(open(f))['transport'], os.path.dirname(f))", 60)
        assert reply["status"] == "ok", reply
        pid_b, transport, runtime = out.split()
        got["b"] = (int(pid_b), transport, runtime)
        first_a, got["said_first"] = await until_back(A)
        # A fills more than A's 1 GiB while B computes
        oom, computed = await asyncio.gather(
            A.execute("x = b'1' * (3 << 30)", 120),
            B.execute("import numpy as np\nprint(int(np.arange(10**7).sum()))", 120),
            return_exceptions=True)
        got["oom"], got["computed"] = oom, computed
        second_a, got["said_after_oom"] = await until_back(A)
        _, got["said_next"] = await A.execute("print('again')", 30)
        statuses_after_oom = list(A.statuses)
        os.kill(second_a, signal.SIGKILL)  # killed outright (an instructor's kill, a crash)
        third_a, got["said_after_kill"] = await until_back(A)
        reply, out = await B.execute("print(state, os.getpid())", 60)
        got["b_after"] = out.split()
        got["a_pids"] = (first_a, second_a, third_a)
        got["statuses"] = (statuses_after_oom, list(A.statuses), list(B.statuses))
        await asyncio.gather(A.close(), B.close())
        return got

    # what an earlier account with B's UID left in B's runtime folder: gone when B's server starts
    stale = Path("/run/lessonlib-hub") / str(pwd.getpwnam(b).pw_uid) / "lessonlib-oom-seen"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("7")
    hub.start()
    try:
        got = asyncio.run(scenario())
        assert not stale.exists()
        # each server (and so each kernel) in its student's own group, with the limits
        for name in (a, b):
            groups = got[name]["server"]
            mem_key = "memory" if version == 1 else "unified"
            assert groups[mem_key].endswith(f"/lessonlib-hub/{name}"), groups
        mem = cs.group_dirs(CGROUPS, version, a)[0]
        if version == 1:
            assert int((mem / "memory.limit_in_bytes").read_text()) == 2**30
            cpu = cs.group_dirs(CGROUPS, version, a)[1]
            assert (cpu / "cpu.cfs_quota_us").read_text().strip() == "50000"
        # kernels on UNIX sockets in the student's own runtime folder
        pid_b, transport, runtime = got["b"]
        uid_b = int(subprocess.run(["id", "-u", b], capture_output=True, text=True).stdout)
        assert transport == "ipc" and runtime == f"/run/lessonlib-hub/{uid_b}"
        assert stat.S_IMODE(os.stat(runtime).st_mode) & 0o777 == 0o700  # (jupyter adds +t)
        assert os.stat(runtime).st_uid == uid_b
        # A: out of memory, then killed: "restarting" each time, a fresh kernel each time
        assert isinstance(got["oom"], RuntimeError) and "restarting" in str(got["oom"])
        first_a, second_a, third_a = got["a_pids"]
        assert len({first_a, second_a, third_a}) == 3
        after_oom, after_kill, of_b = got["statuses"]
        assert after_oom == ["restarting"] and after_kill == ["restarting", "restarting"]
        assert cs.oom_kills(CGROUPS, version, a) == 1 and cs.oom_kills(CGROUPS, version, b) == 0
        # the fresh kernel tells A why, once, in the first cell A runs; a kill is not an overrun
        assert got["said_first"] == ""
        assert got["said_after_oom"].startswith("[hub] Your last kernel was stopped: it went "
                                                "past your memory limit on this hub (1.0 GiB")
        assert got["said_next"] == "again\n" and got["said_after_kill"] == ""
        # B: its computation during A's overrun right, its kernel and state the same, no restart
        computed_reply, computed_out = got["computed"]
        assert computed_reply["status"] == "ok" and computed_out == f"{sum(range(10**7))}\n"
        assert got["b_after"] == ["42", str(pid_b)] and of_b == []
        # the instructor reads in the hub's log who went past the limit
        wait_for("the overrun in the hub's log", lambda: re.search(
            rf"{a} went past their memory limit \(1073741824 bytes\)", hub.tail(10**7)), 60)
        assert f"{b} went past" not in hub.tail(10**7)
    finally:
        assert hub.stop() == 0, hub.tail()
    # the students' groups go with their servers
    assert not any(d.exists() for n in (a, b) for d in cs.group_dirs(CGROUPS, version, n))


GRADING = ROOT / ".venv-grading"


def _gradebook(path, code):
    """nbgrader's own Gradebook on path, in .venv-grading (as root): what code prints."""
    script = (f"from nbgrader.api import Gradebook\ngb = Gradebook('sqlite:///{path}')\n"
              f"{code}\ngb.close()\n")
    assert (GRADING / ".installed").exists(), "make grading builds .venv-grading (nbgrader)"
    env = dict(os.environ, PATH=f"{GRADING / 'bin'}:{os.environ['PATH']}")  # nbgrader's alembic
    out = subprocess.run([str(GRADING / "bin" / "python"), "-c", script], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


@live
@pytest.mark.skipif(not (GRADING / ".installed").exists() and os.environ.get("LESSONLIB_HUB") != "1",
                    reason="needs .venv-grading (make grading), for nbgrader's gradebook")
def test_a_hub_restart_mid_write_leaves_the_instructors_gradebook_whole(tmp_path):
    """The instructor's gradebook (nbgrader's SQLite file in their course folder) is open in
    their kernel with a write half done when the hub is stopped: after the restart nbgrader
    reads every committed grade and not the half-written one, and the file checks whole."""
    cl = load_file("benchmarks", "class_load.py")
    name = f"llins{secrets.token_hex(3)}"
    with students(tmp_path / "staff", [name], comment="a test instructor") as made:
        subprocess.run(["usermod", "--append", "--groups", "lessonlib-instructors", name],
                       check=True)
        home = Path(pwd.getpwnam(name).pw_dir)
        course = home / "lessonlib" / "build" / "course"
        course.mkdir(parents=True)
        book = course / "gradebook.db"
        _gradebook(book, "gb.add_assignment('02_online_softmax')\n"
                         "for s in ('ada', 'grace'): gb.add_student(s)")
        subprocess.run(["chown", "-R", f"{name}:", str(home / "lessonlib")], check=True)
        book.chmod(0o600)
        hub = Hub(tmp_path / "state")
        me = cl.Student(name, made["passwords"][name], hub.url, 0, 0)
        half_written = (
            "import sqlite3\n"
            f"con = sqlite3.connect({str(book)!r}, isolation_level=None)\n"
            "con.execute(\"INSERT INTO student (id) VALUES ('alan')\")  # committed\n"
            "con.execute('BEGIN IMMEDIATE')\n"
            "con.execute(\"INSERT INTO student (id) VALUES ('half-written')\")\n"
            "print(con.in_transaction)")
        check = (
            "import sqlite3\n"
            f"con = sqlite3.connect({str(book)!r})\n"
            "print(con.execute('PRAGMA integrity_check').fetchone()[0],"
            " *sorted(r[0] for r in con.execute('SELECT id FROM student')))")

        async def work(code):
            await asyncio.to_thread(me.login_and_spawn, 180)
            await me.open("02_online_softmax.ipynb", 120)
            reply, out = await me.execute(code, 60)
            await me.close()
            return reply["status"], out.split()

        hub.start()
        try:
            assert asyncio.run(work(half_written)) == ("ok", ["True"])
            assert hub.stop() == 0, hub.tail()  # the instructor's server and kernel end with it
            hub.start()
            me.session.cookies.clear()
            me.reset()
            assert asyncio.run(work(check)) == ("ok", ["ok", "ada", "alan", "grace"])
        finally:
            assert hub.stop() == 0, hub.tail()
        assert _gradebook(book, "print(*sorted(s.id for s in gb.students),"
                                " *[a.name for a in gb.assignments])").split() == [
            "ada", "alan", "grace", "02_online_softmax"]


@live
def test_a_student_fetches_and_submits_through_the_assignments_panel_and_never_sees_the_formgrader(
        tmp_path, student, hub):
    """nbgrader on the hub, as a student's JupyterLab uses it: the instructor releases an
    assignment with nbgrader; the student's Assignments panel (the assignment_list server
    extension of .venv-hub, run as the student) lists it, fetches it into their home and
    submits it into the exchange's inbound folder; the formgrader answers 404 and JupyterLab's
    page lists formgrader and create-assignment disabled."""
    name, course = student["name"], f"lltest{secrets.token_hex(3)}"
    exchange = Path(EXCHANGE)  # deploy/hub/nbgrader_config.py's Exchange.root
    made_exchange = not exchange.exists()
    if made_exchange:
        exchange.mkdir(parents=True)
        exchange.chmod(0o1777)  # world-writable and sticky, as instructors/README.md says
    try:
        # the instructor's release: nbgrader's own command, from a course folder with one notebook
        source = tmp_path / "course"
        (source / "release" / "hello").mkdir(parents=True)
        nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": "a1",
                         "metadata": {}, "outputs": [], "source": "answer = 42"}],
              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        (source / "release" / "hello" / "hello.ipynb").write_text(json.dumps(nb))
        env = dict(os.environ, PATH=f"{HUB_VENV / 'bin'}:{os.environ['PATH']}")
        released = subprocess.run(
            [str(HUB_VENV / "bin" / "nbgrader"), "release_assignment", "hello",
             f"--course={course}", f"--Exchange.root={exchange}"],
            cwd=source, capture_output=True, text=True, env=env, timeout=120)
        assert released.returncode == 0, released.stderr
        hub.start()
        s = requests.Session()
        assert login(s, hub.url, name, student["password"]).status_code == 302
        spawn_and_wait(s, hub.url, name)
        lab = s.get(f"{hub.url}/user/{name}/lab", timeout=60)
        assert lab.status_code == 200
        page = json.loads(re.search(r'<script id="jupyter-config-data"[^>]*>(.*?)</script>',
                                    lab.text, re.S)[1])
        assert {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment"} <= set(
            page["disabledExtensions"])
        base, ux = f"{hub.url}/user/{name}", xsrf(s, f"/user/{name}/")
        assert s.get(f"{base}/formgrader", timeout=60).status_code == 404

        def listed():
            r = s.get(f"{base}/assignments", params={"course_id": course}, headers=ux,
                      timeout=120)
            assert r.status_code == 200, r.text
            return {a["assignment_id"]: a["status"] for a in r.json()["value"]}
        assert listed() == {"hello": "released"}
        r = s.post(f"{base}/assignments/fetch", headers=ux, timeout=120,
                   json={"course_id": course, "assignment_id": "hello"})
        assert r.status_code == 200, r.text
        assert listed() == {"hello": "fetched"}
        home = Path(pwd.getpwnam(name).pw_dir)
        fetched = home / "hello" / "hello.ipynb"
        assert fetched.exists() and fetched.stat().st_uid == pwd.getpwnam(name).pw_uid
        r = s.post(f"{base}/assignments/submit", headers=ux, timeout=120,
                   json={"course_id": course, "assignment_id": "hello"})
        assert r.status_code == 200 and '"success": false' not in r.text, r.text
        inbound = sorted(p.name for p in (exchange / course / "inbound").iterdir())
        assert len(inbound) == 1 and inbound[0].startswith(f"{name}+hello+"), inbound
        assert listed() == {"hello": "submitted"}
    finally:
        shutil.rmtree(exchange / course, ignore_errors=True)
        if made_exchange:
            shutil.rmtree(exchange, ignore_errors=True)


@live
def test_the_hub_serves_https_with_the_certificate_it_is_given(tmp_path, student):
    """LESSONLIB_HUB_SSL_CERT and _KEY, live: the login page and the login itself over HTTPS
    with the given certificate (checked by the client), a session cookie marked Secure, and
    nothing served in clear on that port."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                           "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                           "-keyout", str(key), "-out", str(cert)], capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr
    hub = Hub(tmp_path / "state", SSL_CERT=str(cert), SSL_KEY=str(key))
    hub.start()
    try:
        assert hub.url.startswith("https://127.0.0.1:")
        served = ssl.get_server_certificate(("127.0.0.1", hub.port))
        assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(cert.read_text())
        s = requests.Session()
        s.trust_env = False  # else REQUESTS_CA_BUNDLE, where set, overrides s.verify
        s.verify = str(cert)
        r = login(s, hub.url, student["name"], student["password"])
        assert r.status_code == 302, hub.tail()
        session = [c for c in s.cookies if c.name == "jupyterhub-session-id"]
        assert session and all(c.secure for c in session)
        with pytest.raises(requests.exceptions.RequestException):
            requests.get(f"http://127.0.0.1:{hub.port}/hub/login", timeout=10)
    finally:
        assert hub.stop() == 0, hub.tail()


@live
def test_the_idle_culler_stops_a_server_nobody_uses_and_the_student_starts_again(
        tmp_path, student):
    """LESSONLIB_HUB_CULL_TIMEOUT=20: the culler (a hub service, every 10 s) stops the student's
    idle server, says so in the hub's log, and the next start works, the files still there."""
    name = student["name"]
    hub = Hub(tmp_path / "state", CULL_TIMEOUT="20")
    hub.start()
    try:
        s = requests.Session()
        assert login(s, hub.url, name, student["password"]).status_code == 302
        spawn_and_wait(s, hub.url, name)

        def culled():
            user = s.get(f"{hub.url}/hub/api/users/{name}", headers=xsrf(s, "/hub/"),
                          timeout=30).json()
            return not user["servers"] and not user.get("pending")
        wait_for(f"{name}'s idle server culled (log: {hub.tail()})", culled, 120, every_s=2)
        assert re.search(rf"Culling server {name}\b", hub.tail(10**7)), hub.tail()
        assert subprocess.run(["pgrep", "-u", name], capture_output=True).returncode == 1
        spawn_and_wait(s, hub.url, name)
        assert (Path(pwd.getpwnam(name).pw_dir) / "my-notebooks").is_dir()
    finally:
        assert hub.stop() == 0, hub.tail()
