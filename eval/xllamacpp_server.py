"""Start llama.cpp's OpenAI-compatible server (the xllamacpp wheel) on 127.0.0.1 and keep it up
until killed.  usage: python xllamacpp_server.py MODEL.gguf PORT [THREADS] [N_CTX] [N_PREDICT]

Used by eval/local-models.sh and the SmolLM2 plumbing test; one thread by default (on a 2-vCPU
machine two threads were measured 4-6x slower with this server)."""
import os
import signal
import sys
import time

import xllamacpp as xlc

model, port = sys.argv[1], int(sys.argv[2])
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 1
n_ctx = int(sys.argv[4]) if len(sys.argv) > 4 else 8192
n_predict = int(sys.argv[5]) if len(sys.argv) > 5 else 512

p = xlc.CommonParams()
p.model.path = model
p.n_ctx = n_ctx
p.n_parallel = 1
p.n_predict = n_predict
p.use_jinja = True
p.hostnames = ["127.0.0.1"]
p.port = port
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.endpoint_props = True
server = xlc.Server(p)
print(f"xllamacpp listening on http://127.0.0.1:{port} model={model} threads={threads} n_ctx={n_ctx} n_predict={n_predict}", flush=True)
# The server's threads keep the interpreter alive past sys.exit: leave at once.
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
signal.signal(signal.SIGINT, lambda *_: os._exit(0))
while True:
    time.sleep(3600)
