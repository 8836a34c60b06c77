#!/usr/bin/env bash
# Students' UNIX accounts for the course's JupyterHub (deploy/hub/README.md). As root:
#
#   deploy/hub/add-students.sh [--passwords FILE] NAMES > new-passwords.txt
#   deploy/hub/add-students.sh --remove NAMES
#
# NAMES is a file with one login name a line (blank lines and # comments ignored), or - for
# standard input. Each new name gets
#   - an account (useradd) marked "lessonlib student" in its comment field, in the students' group
#     (LESSONLIB_HUB_GROUP, lessonlib-students by default: the group the hub lets in), with a home
#     folder only its owner can open (mode 700);
#   - a password: the one FILE gives ("name:password" lines, chpasswd's format; FILE readable by
#     its owner only), or else a random one, printed once on standard output as "name:password"
#     and kept nowhere else: hand it to the student (progress goes to standard error);
#   - the course notebooks in ~/my-notebooks, copied by scripts/workspace.py's sync, as `make lab`
#     does, and the glossary they link to in ~/docs/, run as the student: the copies are theirs,
#     and a link planted in a home cannot steer root's writes.
# Run again with the same names, it makes no account twice and prints no new password: it sets
# only the passwords FILE gives and syncs each student's notebooks with the course (a new
# notebook copied, one the student never changed updated, an edited one kept and named).
# --remove deletes (userdel --remove, home included) only accounts this script made, stopping
# their processes first; a name with no account is skipped. The groups stay.
#
# The students' servers run the hub's environment (LESSONLIB_HUB_VENV, .venv-hub in this
# checkout: make hub-env) as the student; each new account is checked to be able to run it.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GROUP=${LESSONLIB_HUB_GROUP:-lessonlib-students}
HUB_VENV=${LESSONLIB_HUB_VENV:-$ROOT/.venv-hub}
[[ $HUB_VENV = /* ]] || HUB_VENV=$PWD/$HUB_VENV  # absolute (it runs from each home), links kept
HUB_PY=$HUB_VENV/bin/python
MARK="lessonlib student"
usage="usage: $0 [--passwords FILE] NAMES | --remove NAMES"

die() { echo "add-students: $*" >&2; exit 2; }
say() { echo "add-students: $*" >&2; }
ours() { [ "$(getent passwd "$1" | cut -d: -f5)" = "$MARK" ]; }

remove=0 passwords=""
while [ $# -gt 1 ]; do
  case "$1" in
    --remove) remove=1; shift ;;
    --passwords) passwords=${2:?$usage}; shift 2 ;;
    *) die "$usage" ;;
  esac
done
[ $# -eq 1 ] || die "$usage"
[ "$(id -u)" = 0 ] || die "run as root: it creates UNIX accounts"
[ "$1" = - ] || [ -r "$1" ] || die "cannot read $1"
mapfile -t names < <(grep -vE '^[[:space:]]*(#|$)' "$([ "$1" = - ] && echo /dev/stdin || echo "$1")" \
  | tr -d ' \t\r')
[ ${#names[@]} -gt 0 ] || die "no names in $1"

# Every name is checked before anything changes: a valid login name, and no account of the
# same name that this script did not make (it never takes over or deletes someone else's).
for n in "${names[@]}"; do
  [[ $n =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || die "'$n' is not a login name (a-z, 0-9, _ and -)"
  if getent passwd "$n" >/dev/null && ! ours "$n"; then
    die "an account '$n' exists that add-students.sh did not make: it is left alone, nothing done"
  fi
done

if [ "$remove" = 1 ]; then
  for n in "${names[@]}"; do
    getent passwd "$n" >/dev/null || { say "$n: no account"; continue; }
    pkill -KILL -u "$n" || true  # the student's server and kernels, if the hub left any
    for _ in $(seq 50); do pgrep -u "$n" >/dev/null || break; sleep 0.1; done
    userdel --remove "$n" 2> >(grep -v "mail spool" >&2)
    say "$n: removed, with their home"
  done
  exit 0
fi

[ -x "$HUB_PY" ] || die "no $HUB_PY: run make hub-env first (students' servers run it)"
declare -A given=()
if [ -n "$passwords" ]; then
  [ -r "$passwords" ] || die "cannot read $passwords"
  case "$(stat -c %a "$passwords")" in
    *00) ;;
    *) die "$passwords can be read by others: chmod 600 $passwords" ;;
  esac
  while IFS=: read -r n p || [ -n "$n" ]; do [ -n "$n" ] && given[$n]=$p; done < "$passwords"
fi

groupadd --force "$GROUP"
groupadd --force lessonlib-instructors  # the hub's admins (jupyterhub_config.py)
for n in "${names[@]}"; do
  if getent passwd "$n" >/dev/null; then
    usermod --append --groups "$GROUP" "$n"
    say "$n: account there"
  else
    useradd --create-home --shell /bin/bash --comment "$MARK" --groups "$GROUP" "$n"
    chmod 700 "$(getent passwd "$n" | cut -d: -f6)"
    say "$n: account made"
    if [ -z "${given[$n]+set}" ]; then
      given[$n]=$("$HUB_PY" -c 'import secrets; print(secrets.token_urlsafe(12))')
      echo "$n:${given[$n]}"  # printed once, stored nowhere else
    fi
  fi
  if [ -n "${given[$n]+set}" ]; then
    printf '%s:%s\n' "$n" "${given[$n]}" | chpasswd
  fi
  home=$(getent passwd "$n" | cut -d: -f6)
  # As the student: can they run the hub's environment, then the notebooks, copied as make lab does.
  (cd "$home" && runuser -u "$n" -- "$HUB_PY" - "$ROOT/scripts" "$home/my-notebooks" "$n" <<'EOF'
import sys
from pathlib import Path

try:
    import jupyterhub, jupyterlab, lessonlib  # what the student's server and kernels import
except ImportError as e:
    sys.exit(f"add-students: {sys.argv[3]} cannot import the course environment ({e}): "
             f"{sys.executable} and the checkout must be readable by every user")
sys.path.insert(0, sys.argv[1])
import workspace  # scripts/workspace.py

for line in workspace.sync(work=Path(sys.argv[2])):
    print(f"add-students: {sys.argv[3]}: ~/my-notebooks: {line}", file=sys.stderr)
# The notebooks link to ../docs/GLOSSARY.md: the glossary beside my-notebooks, as in the checkout.
docs = Path(sys.argv[2]).parent / "docs"
docs.mkdir(exist_ok=True)
(docs / "GLOSSARY.md").write_bytes((Path(sys.argv[1]).parent / "docs" / "GLOSSARY.md").read_bytes())
EOF
  ) || die "$n: the account is there, but the course environment or notebooks are not (above)"
done
