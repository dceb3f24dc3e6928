# Real logs for testdata/torch/store_host_waits{,_late_host,_w4} (torch 2.13.0+cpu, gloo), WITHOUT torchrun:
# plain processes with MASTER_ADDR/MASTER_PORT, env:// init, so rank 0 hosts the TCPStore and, with
# world_size given, waits for every client to join before init_process_group goes on.
#   python3 store_host_waits.py OUT_DIR WORLD LATE_RANKS PORT     e.g. OUT 3 2 29631 ; OUT 3 0 29632 ; OUT 4 2,3 29633
# Each rank's stderr goes to OUT/rank<r>.log; OUT/combined.log is every line, prefixed "[rank<r>]: "
# (as torchrun --tee writes), in the order the launcher read them. The late ranks sleep 30 s before
# init_process_group (timeout 6 s), so they never join in time; the launcher kills them at the end.
import datetime, os, subprocess, sys, threading, time

def worker(rank, world, late):
    import torch.distributed as dist
    if rank in late:
        time.sleep(30)  # never joins in time (stalled data loader / slow start)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=6))
    print("done", rank, flush=True)

def main():
    if sys.argv[1] == "--worker":
        return worker(int(sys.argv[2]), int(sys.argv[3]), {int(x) for x in sys.argv[4].split(",") if x})
    out, world, late, port = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    lock, combined = threading.Lock(), open(os.path.join(out, "combined.log"), "w")
    procs = []
    def pump(r, p):
        with open(os.path.join(out, f"rank{r}.log"), "w") as f:
            for line in p.stderr:
                f.write(line)
                with lock:
                    combined.write(f"[rank{r}]: {line}")
    threads = []
    for r in range(world):
        p = subprocess.Popen([sys.executable, __file__, "--worker", str(r), str(world), late], env=env,
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        procs.append(p)
        t = threading.Thread(target=pump, args=(r, p)); t.start(); threads.append(t)
    deadline = time.time() + 20  # the on-time ranks give up after 6 s; the late ones are still asleep
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
    for t in threads:
        t.join()
    combined.close()

if __name__ == "__main__":
    main()
