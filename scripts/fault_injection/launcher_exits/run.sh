#!/bin/bash
# Regenerates the launcher-exit scenarios of testdata/torch (README.md, "Launcher exits") into OUT
# (default ./launcher_exits_out), run from this folder: torchrun consoles (--tee 3) and per-rank logs of
# processes started by hand. Each run has a 60-90 s kill timeout in its own session. Rewrite machine
# paths before committing (sed the venv's site-packages to /usr/lib/python3.11/site-packages, this folder
# to /opt/train/).
set -u
out=${1:-launcher_exits_out}; mkdir -p "$out"
tr() {  # tr MODE NAME [torchrun args]
  local mode=$1 name=$2; shift 2
  mkdir -p "$out/$name"
  MODE=$mode timeout -s KILL 90 setsid torchrun --nproc_per_node 4 --tee 3 --master_port $((29500 + RANDOM % 1000)) \
    "$@" train.py > "$out/$name/combined.log" 2>&1
  echo "torchrun rc=$?" >> "$out/$name/combined.log"
}
by_hand() {  # by_hand MODE NAME: 4 ranks without a launcher, stderr/rank_R.log each
  local mode=$1 name=$2 port=$((29500 + RANDOM % 1000))
  mkdir -p "$out/$name/stderr"
  for r in 0 1 2 3; do
    MODE=$mode RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
      timeout -s KILL 60 setsid python3 train.py > "$out/$name/stderr/rank_$r.log" 2>&1 &
  done
  wait
}
tr sigkill torchrun_sigkill
tr all_segv torchrun_all_segv --monitor-interval 5   # every rank faults before the agent polls
tr exit0 torchrun_exit0
by_hand all_segv all_segv
by_hand kill3 lost_peer_partial
