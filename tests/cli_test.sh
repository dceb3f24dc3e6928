#!/usr/bin/env bash
# End-to-end tests of the hangdx command: formats, exit codes, bad input.
# Run by ctest with HANGDX_BIN set to the built binary.
set -u
cd "$(dirname "$0")/.."
BIN=${HANGDX_BIN:?set HANGDX_BIN}
fail=0
check() {  # check NAME EXPECTED_RC COMMAND...
  local name=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; head -5 "$tmp/out" "$tmp/err"; fail=1
  else
    echo "ok   $name"
  fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A hang is exit 1, and the first line is the verdict.
check mismatch_text 1 "$BIN" analyze examples/mismatch
head -1 "$tmp/out" | grep -q "^HANG (mismatch): ranks of pg 0 (default_pg) call different collectives at seq 3: ranks 0-1 call all_reduce .*; rank 2 calls broadcast" \
  || { echo "FAIL mismatch_text first line: $(head -1 "$tmp/out")"; fail=1; }
check mismatch_json 1 "$BIN" analyze examples/mismatch --format json
python3 -c "
import json,sys
d=json.load(open('$tmp/out'))
assert d['schema_version']==1 and d['hang'] is True
f=d['findings'][0]
assert f['kind']=='collective_mismatch' and f['culprit_ranks']==[2] and f['seq']==3, f
assert all(e['file'] and e['rank']>=0 for e in f['evidence'])
" || { echo "FAIL mismatch_json content"; fail=1; }
check mismatch_dot 1 "$BIN" analyze examples/mismatch --format dot
grep -q "^digraph wait_for" "$tmp/out" || { echo "FAIL dot header"; fail=1; }
if command -v dot >/dev/null; then dot -Tsvg "$tmp/out" -o "$tmp/g.svg" || { echo "FAIL dot does not parse"; fail=1; }; fi
check output_file 1 "$BIN" analyze examples/mismatch --format json -o "$tmp/report.json"
[ -s "$tmp/report.json" ] || { echo "FAIL -o wrote nothing"; fail=1; }

# One Horovod stall report whose tensor lines split the ranks: the smaller
# side is the odd one out (testdata/horovod/README.md).
check horovod_per_tensor_split 1 "$BIN" analyze testdata/horovod/per_tensor_split/job.log --format json
python3 -c "
import json
f=json.load(open('$tmp/out'))['findings'][0]
assert f['kind']=='collective_mismatch' and f['culprit_ranks']==[3], f
" || { echo "FAIL horovod_per_tensor_split"; fail=1; }
# One rank's NCCL log of a communicator of 8 ranks without its Init line:
# the other 7 members are counted and the world is at least 8 (tester F11).
check nccl_one_of_eight 0 "$BIN" analyze testdata/cases/nccl147-ddp-fp16-first-broadcast/rank0.log --format json
python3 -c "
import json
d=json.load(open('$tmp/out'))
assert d['world_size']==8 and d['ranks_without_dump']==[1,2,3,4,5,6,7], d
assert d['findings'][0]['summary'].startswith('only 1 of the 8 members'), d['findings'][0]
" || { echo "FAIL nccl_one_of_eight"; fail=1; }

# One rank's NCCL log (Init lines, op lines, no timeout) and no other log:
# an op line is printed at enqueue, so nothing shows a hang (tester3 N1).
check nccl_one_log_no_timeout 0 "$BIN" analyze testdata/latent/nccl_two_comms/rank0.log --format json
python3 -c "
import json
f=json.load(open('$tmp/out'))['findings'][0]
assert f['kind']=='undecided' and f['culprit_ranks']==[] and f['candidates']==[1] and not f['hang'], f
" || { echo "FAIL nccl_one_log_no_timeout"; fail=1; }

# Healthy: exit 0.
check healthy 0 "$BIN" analyze testdata/torch/j1/pickle
# Straggler: a warning, not a hang: exit 0.
check straggler 0 "$BIN" analyze testdata/torch/j2/json

# The input formats: `hangdx formats` lists the table, and the README's list
# is that output.
check formats 0 "$BIN" formats
cp "$tmp/out" "$tmp/formats"
grep -q "^nccl-log " "$tmp/formats" || { echo "FAIL formats lists no nccl-log"; fail=1; }
sed -n '/^<!-- hangdx formats -->$/,/^<!-- end hangdx formats -->$/p' README.md | sed '1,2d;$d' | sed '$d' >"$tmp/readme_formats"
diff -u "$tmp/readme_formats" "$tmp/formats" >"$tmp/diff" \
  || { echo "FAIL README's format list differs from hangdx formats (paste its output between the markers):"; cat "$tmp/diff"; fail=1; }
check analyze_help 0 "$BIN" analyze --help
while read -r name _; do
  grep -q "$name" "$tmp/out" || { echo "FAIL analyze --help does not name $name"; fail=1; }
done <"$tmp/formats"

# The message catalogue: listed, and a log explained line by line.
check messages_list 0 "$BIN" messages
grep -q "^torch.nccl.watchdog_timeout_numel " "$tmp/out" || { echo "FAIL messages lists no watchdog timeout"; fail=1; }
check messages_file 0 "$BIN" messages testdata/public/pytorch152623-desync-report-rank7-lagging/rank0.log
grep -q "torch.desync.finished_not_joined (culprit" "$tmp/out" \
  || { echo "FAIL messages FILE does not show the desync report's culprit"; fail=1; }
check messages_missing 2 "$BIN" messages /nonexistent/hangdx

# Usage and unusable input: exit 2.
check no_args 2 "$BIN"
check bad_format 2 "$BIN" analyze examples/mismatch --format xml
check missing_path 2 "$BIN" analyze /nonexistent/hangdx
grep -q "no such file" "$tmp/err" || { echo "FAIL missing_path message"; fail=1; }
mkdir -p "$tmp/empty"
check empty_dir 2 "$BIN" analyze "$tmp/empty"
grep -q "folder holds no files" "$tmp/out" || { echo "FAIL empty_dir message"; fail=1; }
printf 'garbage\x00\x01' > "$tmp/empty/trace_0"
check junk_only 2 "$BIN" analyze "$tmp/empty"

# Bad files next to good ones: the analysis goes on and names the bad file.
mkdir -p "$tmp/mixed"
cp testdata/torch/a/pickle/* "$tmp/mixed/"
head -c 700 testdata/torch/a/pickle/fr_trace_rank_1 > "$tmp/mixed/fr_trace_rank_1"   # truncated
check truncated_rank 1 "$BIN" analyze "$tmp/mixed" --format json
python3 -c "
import json
d=json.load(open('$tmp/out'))
msgs=[g for g in d['diagnostics'] if g['file'].endswith('fr_trace_rank_1')]
assert msgs and 'byte' in msgs[0]['message'] and msgs[0]['offset'] is not None, d['diagnostics']
assert 1 in d['ranks_without_dump'], d['ranks_without_dump']
" || { echo "FAIL truncated_rank diagnostics"; fail=1; }

# A hostile pickle is refused and runs nothing.
rm -f /tmp/hangdx_pwned
mkdir -p "$tmp/evil"
cp hangdx/ingest/formats/flight_recorder/testdata/evil_proto2_data.pickle "$tmp/evil/trace_0"
check hostile_pickle 2 "$BIN" analyze "$tmp/evil" --format json
[ ! -e /tmp/hangdx_pwned ] || { echo "FAIL hostile pickle ran a command"; fail=1; }
grep -q "refused opcode GLOBAL" "$tmp/out" || { echo "FAIL hostile pickle message"; fail=1; }

# A dump that exists but cannot be read is not called dead.
mkdir -p "$tmp/trunc"
cp testdata/torch/c/pickle/* "$tmp/trunc/"
head -c 1500 testdata/torch/c/pickle/fr_trace_rank_2 > "$tmp/trunc/fr_trace_rank_2"
check unreadable_not_dead 1 "$BIN" analyze "$tmp/trunc" --format json
python3 -c "
import json; d=json.load(open('$tmp/out')); f=d['findings'][0]
assert f['kind']=='undecided' and f['culprit_ranks']==[2] and 'could not be read' in f['summary'], f
assert d['unreadable_dumps'][0]['rank']==2" || { echo "FAIL unreadable_not_dead"; fail=1; }

# Names whose last number is not the rank: the folder-wide position is used.
mkdir -p "$tmp/attempt"
for r in 0 1 2; do cp testdata/torch/c/pickle/fr_trace_rank_$r "$tmp/attempt/fr_trace_rank_${r}_attempt_1"; done
check rank_from_names 1 "$BIN" analyze "$tmp/attempt" --format json
python3 -c "
import json; f=json.load(open('$tmp/out'))['findings'][0]
assert f['kind']=='collective_mismatch' and f['culprit_ranks']==[2], f" || { echo "FAIL rank_from_names"; fail=1; }

# Control characters from a dump do not reach the terminal.
mkdir -p "$tmp/ctl"
python3 - "$tmp/ctl" <<'PY'
import json, sys
for r in (0, 1):
    e = {"record_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 1,
         "profiling_name": "nccl:all_reduce" if r == 0 else "nccl:evil\n\u001b[2Jop", "state": "scheduled",
         "retired": True, "is_p2p": False, "input_sizes": [[4]], "output_sizes": [[4]]}
    json.dump({"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
               "entries": [e]}, open(f"{sys.argv[1]}/trace_{r}.json", "w"))
PY
check control_chars 1 "$BIN" analyze "$tmp/ctl"
if grep -q $'\x1b' "$tmp/out"; then echo "FAIL escape sequence reached the report"; fail=1; fi
[ "$(grep -c '^HANG' "$tmp/out")" = 1 ] || { echo "FAIL verdict line split"; fail=1; }

# Bytes that are not UTF-8 in a dump do not reach the report as such.
mkdir -p "$tmp/u8" && cp testdata/torch/a/json/* "$tmp/u8/"
python3 -c "p='$tmp/u8/fr_trace_rank_0.json'; b=bytearray(open(p,'rb').read()); b[541]=0x8d; open(p,'wb').write(b)"
check invalid_utf8 1 "$BIN" analyze "$tmp/u8"
python3 -c "open('$tmp/out','rb').read().decode('utf-8')" || { echo "FAIL invalid_utf8: report is not UTF-8"; fail=1; }

# A hostile rank number: refused, no blow-up.
echo '{"1000000000000000":{"current_op":"ar","waiting_for_ranks":[999999999999999],"op_seq":1}}' > "$tmp/huge.json"
check huge_rank 2 timeout 20 "$BIN" analyze "$tmp/huge.json" --format json

# hangdx stacks: one tree, the odd rank on its own branch.
check stacks_text 0 "$BIN" stacks testdata/cases/sglang27489-writing-check-allreduce
grep -q '^    \[1-3\] recv_requests > broadcast_pyobj > broadcast$' "$tmp/out" || { echo "FAIL stacks majority branch"; fail=1; }
grep -q '^    \[0\] .*writing_check > all_reduce$' "$tmp/out" || { echo "FAIL stacks odd branch"; fail=1; }
check stacks_json 0 "$BIN" stacks testdata/torch/c/pickle --format json
python3 -c "
import json; t=json.load(open('$tmp/out'))
n=t['nodes']; assert t['schema_version']==2 and n[0]['parent'] is None and n[0]['frames']==[]
assert t['from_flight_recorder']==[0,1,2] and n[0]['ranks']==[0,1,2] and t['cut']==[]
assert all(n[c]['parent']==x['id'] for x in n for c in x['children'])" || { echo "FAIL stacks_json"; fail=1; }
check stacks_bad_format 2 "$BIN" stacks testdata/torch/c/pickle --format dot
# A truncated dump is named, not silently left out of the tree.
mkdir -p "$tmp/stk" && cp testdata/torch/c/pickle/fr_trace_rank_0 testdata/torch/c/pickle/fr_trace_rank_1 "$tmp/stk/"
head -c 700 testdata/torch/c/pickle/fr_trace_rank_2 > "$tmp/stk/fr_trace_rank_2"
check stacks_truncated 0 "$BIN" stacks "$tmp/stk"
grep -q '^Could not read the file of rank 2 (missing above)$' "$tmp/out" && grep -q "fr_trace_rank_2 @ byte 700: unreadable pickle" "$tmp/out" \
  || { echo "FAIL stacks_truncated names the bad file"; fail=1; }

# Rank override and world size.
check world_size 1 "$BIN" analyze testdata/torch/f1/json --world-size 4 --format json
python3 -c "
import json; d=json.load(open('$tmp/out')); assert d['findings'][0]['culprit_ranks']==[1]" || { echo "FAIL world_size"; fail=1; }
check bad_rank_flag 2 "$BIN" analyze examples/mismatch --rank foo

# HCCL plog chain: rank 0 waits for a notify from rank 1, rank 1 for one from
# rank 2, whose AICPU task failed: one chain, ending at the failed task.
check hccl_chain 1 "$BIN" analyze testdata/hccl/notify-chain --format json
python3 -c "
import json; d=json.load(open('$tmp/out')); f=d['findings'][0]
assert f['kind']=='crashed_rank' and f['culprit_ranks']==[2], f
roles={r['role']: r['ranks'] for r in f['roles']}
assert roles['chain']==[0,1,2], roles
assert f['details'][-1].startswith('cause: AICPU task 19016 (kernel failed, error 21008) on stream 2 of rank 2'), f['details']
assert len([x for x in d['findings'] if x['severity']=='error'])==1, d['findings']" || { echo "FAIL hccl_chain"; fail=1; }

# A device snapshot read only in part: the verdict says so.
python3 -c "import json;d=json.load(open('testdata/device/p2p_cycle.json'));d['ranks'][0]['streams'][0]['tasks']=['0/main/0','0/main/0'];json.dump(d,open('$tmp/partial.json','w'))"
check device_partial 0 "$BIN" analyze "$tmp/partial.json"
head -1 "$tmp/out" | grep -q '^No hang found in what could be read, but 1 part of the device snapshot had to be skipped' \
  || { echo "FAIL device_partial verdict"; fail=1; }

# Latent order inversion from NCCL INFO logs: two communicators over GPUs 0,1;
# rank 0 issues comm A's opCount 1 before comm B's, rank 1 the reverse.
check latent_nccl_logs 0 "$BIN" analyze testdata/latent/nccl_two_comms --format json
python3 -c "
import json; d=json.load(open('$tmp/out'))
f=[f for f in d['findings'] if f['kind']=='order_inversion']
assert len(f)==1 and f[0]['severity']=='warning' and f[0]['culprit_ranks']==[1], f
assert d['findings'][0]['kind']=='order_inversion', d['findings'][0]  # COLL lines show enqueue only: no stall finding first
assert not any('has not finished' in x['summary'] for x in d['findings']), d['findings']
assert f[0]['pg']['name']=='0x3f1c9a7d2b6e4a10' and f[0]['seq']==1, f[0]
assert not [x for x in d['findings'] if x['severity']=='error'], d['findings']" || { echo "FAIL latent_nccl_logs"; fail=1; }

# The same logs with rank 0's Init line of comm 0x3f1c... cut: its ops are
# taken as that communicator's (the only 2-rank one rank 1 logs and rank 0
# does not), so the verdict is unchanged. With a second candidate on rank 1
# the communicator stays unknown: a warning says so, and no false HANG.
rm -rf "$tmp/noinit" && cp -r testdata/latent/nccl_two_comms "$tmp/noinit" && sed -i 1d "$tmp/noinit/rank0.log"
check nccl_no_init_line 0 "$BIN" analyze "$tmp/noinit" --format json
python3 -c "
import json; d=json.load(open('$tmp/out'))
assert not [x for x in d['findings'] if x['severity']=='error'], d['findings']
f=[f for f in d['findings'] if f['kind']=='order_inversion']
assert len(f)==1 and f[0]['culprit_ranks']==[1] and f[0]['pg']['name']=='0x3f1c9a7d2b6e4a10', f
assert any('no Init line; taken as communicator 0x3f1c9a7d2b6e4a10' in x['message'] for x in d['diagnostics'])" \
  || { echo "FAIL nccl_no_init_line"; fail=1; }
sed -i '2a node01:4102:4102 [1] NCCL INFO comm 0x5611b0003000 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2000 commId 0x77aa000000000001 - Init COMPLETE\nnode01:4102:4102 [1] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f0000000000 recvbuff 0x7f0000000000 count 8 datatype 7 op 0 root 0 comm 0x5611b0003000 [nranks=2] stream 0x5611b00f1000' "$tmp/noinit/rank1.log"
check nccl_no_init_line_ambiguous 0 "$BIN" analyze "$tmp/noinit"
grep -q 'no Init line (pg nccl-comm:n2#0).*which communicator they belong to is unknown' "$tmp/out" \
  || { echo "FAIL nccl_no_init_line_ambiguous: no warning"; fail=1; }
! grep -q 'rank -1' "$tmp/out" || { echo "FAIL nccl_no_init_line_ambiguous: rank -1"; fail=1; }

# gloo timeouts in every log given, no log of the rank they wait for: not
# "no hang". With the world size known, the missing rank is named.
check timeouts_unexplained 1 "$BIN" analyze testdata/torch/c/stderr/rank_0.log testdata/torch/c/stderr/rank_1.log --format json
python3 -c "
import json; f=json.load(open('$tmp/out'))['findings'][0]
assert f['kind']=='undecided' and f['severity']=='error' and f['op']=='all_reduce', f
assert {'timed out': [0, 1]}.items() <= {r['role']: r['ranks'] for r in f['roles']}.items(), f['roles']" \
  || { echo "FAIL timeouts_unexplained"; fail=1; }
check timeouts_unexplained_world 1 "$BIN" analyze testdata/torch/c/stderr/rank_0.log testdata/torch/c/stderr/rank_1.log --world-size 3
head -1 "$tmp/out" | grep -q '^HANG: ranks 0-1 report a timed-out all_reduce.*no log from rank 2' \
  || { echo "FAIL timeouts_unexplained_world: $(head -1 "$tmp/out")"; fail=1; }

# One rank's timeout line alone: the other ranks have no line at all, which
# is not "its log shows no wait". The whole combined log keeps rank 0 absent.
sed -n 2p testdata/cases/ace348-rank0-absent-from-timeouts/job.log > "$tmp/one.log"
check one_rank_log 1 "$BIN" analyze "$tmp/one.log" --format json
python3 -c "
import json; f=json.load(open('$tmp/out'))['findings'][0]
assert f['kind']=='missing_rank' and f['culprit_ranks']==[0, 1, 2], f
assert 'ranks 0-2, of which there is no line in the logs given' in f['summary'] and 'never arrived' not in f['summary'], f['summary']
assert {r['role']: r['ranks'] for r in f['roles']}.get('no line in the logs given')==[0, 1, 2], f['roles']" \
  || { echo "FAIL one_rank_log"; fail=1; }
check combined_log 1 "$BIN" analyze testdata/cases/ace348-rank0-absent-from-timeouts/job.log
head -1 "$tmp/out" | grep -q 'for rank 0, which never arrived' || { echo "FAIL combined_log: $(head -1 "$tmp/out")"; fail=1; }

# Determinism: 1 and 2 parser threads give identical output.
"$BIN" analyze testdata/torch --format json -j 1 > "$tmp/t1"
"$BIN" analyze testdata/torch --format json -j 2 > "$tmp/t2"
cmp -s "$tmp/t1" "$tmp/t2" && echo "ok   deterministic" || { echo "FAIL threads change output"; fail=1; }

# hangdx simulate: each story of failure-modes.md (examples/*/deadlock.json) deadlocks as the field report
# says, its fixed variant passes, and the fix search names the report's fix. sim_assert NAME PYTHON runs
# PYTHON with d = the JSON report, heads = {(rank, stream): (head op, started)}, fixes = passing changes.
sim_assert() {
  python3 -c "
import json; d=json.load(open('$tmp/out'))
heads={(r['rank'], s['name']): (s['tasks'][0]['op'], s['head_started']) for r in (d['stuck'] or {}).get('ranks', []) for s in r['streams'] if s['tasks']}
fixes=[f['kind']+': '+f['change'] for f in d['fixes'] if f['passes']]
$2" || { echo "FAIL $1 content"; fail=1; }
}
check sim_p2p 1 "$BIN" simulate examples/p2p-send-send/deadlock.json --format json
sim_assert sim_p2p "
f=d['findings'][0]; assert f['kind']=='p2p_cycle' and f['cycle']==[0, 1], f
assert heads[(0,'comm')]==('send_activations [send to 1 (pp seq 0)]', True) and heads[(1,'comm')]==('send_activations [send to 0 (pp seq 0)]', True), heads
assert fixes==['parity: on odd ranks, post each recv before its paired send (pair by parity)'], fixes"
check sim_p2p_fixed 0 "$BIN" simulate examples/p2p-send-send/fixed.json
check sim_stream_event 1 "$BIN" simulate examples/stream-event-cycle/deadlock.json --format json
sim_assert sim_stream_event "
assert d['findings'][0]['kind']=='stream_cycle', d['findings'][0]
for r in (0, 1):
  assert heads[(r,'compute')]==('wait reduced grads [wait reduced%d]' % r, True), heads
  assert heads[(r,'comm')]==('wait grads%d' % r, True), heads
assert fixes==[] and len(d['fixes'])==2, d['fixes']"
check sim_stream_event_fixed 0 "$BIN" simulate examples/stream-event-cycle/fixed.json
check sim_task_queue 1 "$BIN" simulate examples/task-queue/deadlock.json --format json
sim_assert sim_task_queue "
f=d['findings'][0]; assert f['kind']=='task_queue_deadlock' and f['culprit_ranks']==[1], f
q=d['stuck']['ranks'][1]['queues'][0]
assert q['dispatching']['op']=='all_reduce (tp seq 0)' and [e['op'] for e in q['entries']]==['record grads1'], q
assert fixes==['queue_mode: task queue mode off (now per_device)', 'queue_mode: task queue mode per_stream (now per_device)'], fixes"
check sim_task_queue_fixed 0 "$BIN" simulate examples/task-queue/fixed.json
check sim_two_comms 1 "$BIN" simulate examples/two-communicators/deadlock.json --format json
sim_assert sim_two_comms "
f=d['findings'][0]; assert f['kind']=='order_inversion' and f['cycle']==[0, 1], f
assert heads[(0,'pg1_stream')]==('reduce_scatter (pg1 seq 0)', True) and heads[(1,'pg1_stream')]==('reduce_scatter (pg1 seq 0)', False), heads
assert heads[(1,'pg2_stream')]==('recv_expert_map [recv from 0 (pg2 seq 0)]', True), heads
assert 'order: issue the ops of pgs pg1, pg2 in one order on every rank (rank 0\'s order: rank 1 thread main issues reduce_scatter (pg1 seq 0) before recv_expert_map [recv from 0 (pg2 seq 0)])' in fixes, fixes"
check sim_two_comms_fixed 0 "$BIN" simulate examples/two-communicators/fixed.json
check sim_aicpu 1 "$BIN" simulate examples/aicpu-pool/deadlock.json --format json
sim_assert sim_aicpu "
f=d['findings'][0]; assert f['kind']=='resource_deadlock' and f['cycle']==[0, 1], f
for r in d['stuck']['ranks']:
  p=r['pools'][0]; assert p['capacity']==2 and len(p['holders'])==2 and all(h['op'].startswith('all_reduce') for h in p['holders']), p
  assert heads[(r['rank'],'aicpu_ops')]==('topk_aicpu', False), heads
assert len(fixes)==2 and fixes[0]=='capacity: pool aicpu capacity 3 on every rank (now 2)', fixes
assert fixes[1].startswith('no_hold: collectives and P2P ops do not hold a unit of aicpu while they wait'), fixes"
check sim_aicpu_fixed 0 "$BIN" simulate examples/aicpu-pool/fixed.json
check sim_aicpu_fewer_pgs 0 "$BIN" simulate examples/aicpu-pool/fixed-fewer-pgs.json
# Text: the verdict first, the fix as a line of its own; bounds and bad input.
check sim_text 1 "$BIN" simulate examples/task-queue/deadlock.json
head -1 "$tmp/out" | grep -q '^DEADLOCK (task queue mode per_device): an interleaving of examples/task-queue/deadlock.json deadlocks; explored [0-9]* states' \
  || { echo "FAIL sim_text first line: $(head -1 "$tmp/out")"; fail=1; }
grep -q '^fix: task queue mode per_stream (now per_device): no deadlock' "$tmp/out" || { echo "FAIL sim_text fix line"; fail=1; }
check sim_no_fixes 1 "$BIN" simulate examples/task-queue/deadlock.json --no-fixes
if grep -q '^fix:' "$tmp/out"; then echo "FAIL --no-fixes still searched"; fail=1; fi
check sim_bound 0 "$BIN" simulate examples/aicpu-pool/fixed.json --max-states 5
grep -q '^NO DEADLOCK FOUND WITHIN THE BOUND .*bound reached (max states 5): no deadlock found within the bound' "$tmp/out" \
  || { echo "FAIL sim_bound: $(head -1 "$tmp/out")"; fail=1; }
check sim_missing 2 "$BIN" simulate /nonexistent/schedule.json
printf '{"hangdx_schedule": 1, "ranks": [{"rank": 0, "threads": [{"name": "t", "ops": [{"op": "jump"}]}]}]}' > "$tmp/bad.json"
check sim_bad_op 2 "$BIN" simulate "$tmp/bad.json"
grep -q 'ranks\[0\].threads\[0\].ops\[0\]' "$tmp/err" || { echo "FAIL sim_bad_op message"; fail=1; }

# Device-level snapshots (docs/snapshot-format.md): one per failure-modes.md
# story, with the kind, culprits and cycle worked out by hand.
dev_assert() {  # dev_assert NAME PYTHON (d: the JSON report, f: its first finding)
  python3 -c "
import json
d=json.load(open('$tmp/out')); f=d['findings'][0]
$2" || { echo "FAIL $1 content"; fail=1; }
}
check dev_p2p 1 "$BIN" analyze testdata/device/p2p_cycle.json --format json
dev_assert dev_p2p "assert f['kind']=='p2p_cycle' and f['cycle']==[0, 1] and f['culprit_ranks']==[0, 1], f
assert len(f['details'])==4 and 'needs rank 1 to start its recv from rank 0 on pp #0' in f['details'][0], f['details']"
check dev_stream 1 "$BIN" analyze testdata/device/stream_cycle.json --format json
dev_assert dev_stream "assert f['kind']=='stream_cycle' and f['culprit_ranks']==[0] and f['blocked_behind']==[1], f
assert 'wait A on stream compute of rank 0 needs event A, recorded by record A on stream comm of rank 0 at position 2' in f['details'][0], f['details']
assert len(f['details'])==6, f['details']"
check dev_task_queue 1 "$BIN" analyze testdata/device/task_queue.json --format json
dev_assert dev_task_queue "assert f['kind']=='task_queue_deadlock' and f['culprit_ranks']==[0] and f['blocked_behind']==[1], f
assert f['details'][0].startswith('the per-device task queue of rank 0 is blocked dispatching notify_wait e1'), f['details']
assert 'per_stream' in f['fix_hint'], f"
# The same ops in per-stream queues do not deadlock.
sed -e 's/"per_device"/"per_stream"/' -e 's/"name": "device", "entries": \["rec_e1"\], "dispatching": "wait_e1"/"name": "hccl", "entries": [], "dispatching": "wait_e1"}, {"name": "compute", "entries": ["rec_e1"]/' \
  -e 's/{"name": "device", "entries": \[\]}/{"name": "hccl", "entries": []}/' testdata/device/task_queue.json > "$tmp/per_stream.json"
check dev_task_queue_per_stream 0 "$BIN" analyze "$tmp/per_stream.json"
check dev_order_inversion 1 "$BIN" analyze testdata/device/order_inversion.json --format json
dev_assert dev_order_inversion "assert f['kind']=='order_inversion' and f['cycle']==[11, 14] and f['culprit_ranks']==[11, 14], f
assert any('pool aicpu of rank 11 (capacity 1) is held by reduce_scatter pg1 seq 0' in x for x in f['details']), f['details']"
check dev_resource 1 "$BIN" analyze testdata/device/resource_deadlock.json --format json
dev_assert dev_resource "assert f['kind']=='resource_deadlock' and f['culprit_ranks']==[0, 1] and f['cycle']==[0, 1], f
assert any('needs 1 of its 2 holders to finish and none can' in x for x in f['details']), f['details']"
check dev_resource_dot 1 "$BIN" analyze testdata/device/resource_deadlock.json --format dot
grep -q '0 -> 1\|"0" -> "1"\|r0 -> r1' "$tmp/out" || { echo "FAIL dev_resource_dot: no edge 0 -> 1"; fail=1; }
# A schedule given to analyze says so and points to the simulator.
check dev_schedule 0 "$BIN" analyze examples/task-queue/deadlock.json
grep -q 'is a schedule (programs only, nothing issued).*hangdx simulate examples/task-queue/deadlock.json' "$tmp/out" \
  || { echo "FAIL dev_schedule: $(head -1 "$tmp/out")"; fail=1; }
printf '{"hangdx_snapshot": 1, "ranks": [{"rank": 0, "threads": [{"name": "t", "ops": [{"op": "jump"}]}]}]}' > "$tmp/badsnap.json"
check dev_bad_op 0 "$BIN" analyze "$tmp/badsnap.json"
grep -q 'ranks\[0\].threads\[0\].ops\[0\]: "op" must be one of' "$tmp/out" "$tmp/err" || { echo "FAIL dev_bad_op message"; fail=1; }

# A crashed process's log ends in NUL padding; a UTF-16 log (with or without
# a BOM): each is read like the plain file, so the verdict stays that of
# testdata/cases/nccl147-ddp-fp16-first-broadcast (size_mismatch, rank 0).
for enc in nul utf16; do
  rm -rf "$tmp/pad" && cp -r testdata/cases/nccl147-ddp-fp16-first-broadcast "$tmp/pad"
  if [ $enc = nul ]; then printf '\0\0\0\0' >> "$tmp/pad/rank0.log"
  else python3 -c "
import sys; p='$tmp/pad/'; d=open(p+'rank0.log').read(); open(p+'rank0.log','wb').write(b'\xff\xfe'+d.encode('utf-16-le'))
d=open(p+'rank1.log').read(); open(p+'rank1.log','wb').write(d.encode('utf-16-be'))"; fi
  check padded_log_$enc 1 "$BIN" analyze "$tmp/pad" --format json
  python3 -c "
import json; d=json.load(open('$tmp/out')); f=d['findings'][0]
assert f['kind']=='size_mismatch' and f['culprit_ranks']==[0], f
assert not any('binary data' in x['message'] for x in d['diagnostics']), d['diagnostics']" || { echo "FAIL padded_log_$enc"; fail=1; }
done

# The report is never written over an input, and a report that could not be
# written (a full disk) is exit 2, not a silent success.
rm -rf "$tmp/own" && cp -r examples/mismatch "$tmp/own" && cp "$tmp/own/fr_trace_rank_0" "$tmp/rank0.orig"
check output_is_input 2 "$BIN" analyze "$tmp/own" -o "$tmp/own/fr_trace_rank_0"
cmp -s "$tmp/own/fr_trace_rank_0" "$tmp/rank0.orig" || { echo "FAIL -o overwrote an input"; fail=1; }
grep -q "is one of the inputs" "$tmp/err" || { echo "FAIL output_is_input message"; fail=1; }
if [ -w /dev/full ]; then
  "$BIN" analyze examples/mismatch >/dev/full 2>"$tmp/err"; rc=$?
  [ $rc -eq 2 ] && grep -q "cannot write the report to stdout" "$tmp/err" || { echo "FAIL stdout_full: exit $rc"; fail=1; }
fi
check bad_threads 2 "$BIN" analyze examples/mismatch -j -1
grep -q "not in range 0 to 1024" "$tmp/err" || { echo "FAIL bad_threads message: $(head -1 "$tmp/err")"; fail=1; }
check help_names_watch 0 "$BIN" --help
grep -q "hangdx watch --help" "$tmp/out" && grep -q "^Usage: hangdx " "$tmp/out" || { echo "FAIL --help: watch or usage name"; fail=1; }

# A snapshot waiting on a rank it holds no state of says so (not "elsewhere").
echo '{"0": {"current_op": "all_reduce", "waiting_for_ranks": [5], "op_seq": 1}}' >"$tmp/far.json"
check snapshot_no_data 1 "$BIN" analyze "$tmp/far.json"
head -1 "$tmp/out" | grep -q "for rank 5, which is not in the snapshot (no data)" || { echo "FAIL snapshot_no_data: $(head -1 "$tmp/out")"; fail=1; }

exit $fail
