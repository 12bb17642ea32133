#!/usr/bin/env bash
# Runs a command as a new user's machine would see it: Node, npm and git, without the optional
# programs (bubblewrap, ripgrep, tmux, Chromium, PostgreSQL, Python 3). They are left out of a PATH made of
# links to every other program, and the folders that hold Chromium's and PostgreSQL's own
# binaries are hidden under empty tmpfs mounts, in a private mount namespace: nothing outside the
# command changes. The LOOPGRAPH_REQUIRE_* variables are unset, so the tests that need those
# programs are skipped. Needs root (or unprivileged user namespaces) and util-linux's unshare.
#   usage: scripts/bare-machine.sh COMMAND [ARG...]      e.g. scripts/bare-machine.sh npm test
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
command -v unshare >/dev/null || { echo "bare-machine: unshare (util-linux) is needed" >&2; exit 2; }
hidden=" bwrap rg tmux chromium chromium-browser psql pg_ctl pg_ctlcluster initdb postgres python3 "
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
IFS=: read -ra path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}" /usr/local/bin /usr/bin /bin /usr/sbin /sbin; do
  [ -d "$dir" ] || continue
  for program in "$dir"/*; do
    name=${program##*/}
    case "$hidden" in *" $name "*) continue ;; esac
    [ -e "$bin/$name" ] || ln -s "$program" "$bin/$name" 2>/dev/null || true
  done
done
# Mount namespace needs root, else a user namespace mapped to root.
as_root=()
[ "$(id -u)" = 0 ] || as_root=(--map-root-user)
unshare "${as_root[@]}" --mount --propagation private env PATH="$bin" bash -c '
  for dir in /usr/lib/postgresql /usr/share/postgresql /usr/lib/chromium; do
    [ -d "$dir" ] && mount -t tmpfs tmpfs "$dir"
  done
  for name in $(env | sed -n "s/^\(LOOPGRAPH_REQUIRE_[A-Z_]*\)=.*/\1/p"); do unset "$name"; done
  unset LOOPGRAPH_BWRAP LOOPGRAPH_RG
  exec "$@"' bare-machine "$@" && status=0 || status=$?
exit $status
