#!/usr/bin/env bash
# The README's two network commands against each other, with their defaults: `safhire serve`
# (the default model, on a free port here instead of 7788) and `safhire infer --server
# 127.0.0.1:PORT --images N`. The client is told nothing about the model: it must learn the input
# precision from the server's welcome and classify the images. Skips (exit 77) without
# Debian's dataset-fashion-mnist, which scripts/test installs. SIGTERM then stops the server
# cleanly (exit status 0, after the requests in flight).
# Usage: serve_infer.sh SAFHIRE_BINARY [IMAGES]
set -euo pipefail
safhire=$1
images=${2:-3}
if [ ! -e /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
  echo "no Fashion-MNIST under /usr/share/datasets/fashion-mnist (dataset-fashion-mnist)"
  exit 77
fi
work=$(mktemp -d)
server_pid=""
cleanup() {
  local status=$?
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  # A failure shows what the server said, for the cause.
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    echo "--- serve stdout"; cat "$work/serve.out"; echo "--- serve stderr"; cat "$work/serve.err"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$safhire" serve --port 0 >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$work/serve.out")
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err"; echo "serve exited"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "serve never said its port"; exit 1; }
cat "$work/serve.out"

"$safhire" infer --server "127.0.0.1:$port" --images "$images" | tee "$work/infer.out"
# "<model>: accuracy A% on N images; ..."
grep -Eq "accuracy [0-9.]+% on $images images" "$work/infer.out" || {
  echo "infer did not report its $images images"
  exit 1
}
# The server is still up after serving them, and stops cleanly on SIGTERM.
kill -0 "$server_pid"
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=""
cat "$work/serve.out"
[ "$status" -eq 0 ] || { echo "serve exited with status $status on SIGTERM"; exit 1; }
grep -q "^stopped after" "$work/serve.out" || { echo "serve did not report its stop"; exit 1; }
