# Sourced by tests/e2e/run.sh and run-cluster.sh: each step timed under the run's name ($run),
# and the cluster in $cluster taken down on the way out, whatever happened.

step() {
  local name=$1 start=$SECONDS
  shift
  echo "$run: $name" >&2
  "$@"
  echo "$run: $name: $((SECONDS - start)) s" >&2
}

down() {
  local rc=$?
  step "cluster down" python3 tests/e2e/cluster.py down --dir "$cluster" || rc=1
  echo "$run: $( ((rc == 0)) && echo passed || echo FAILED) in $SECONDS s" >&2
  exit "$rc"
}
